//! The libraries whose futures are decoded: futures-util and futures-channel 0.3,
//! tokio-util 0.7, tokio-stream 0.1, async-stream 0.3, hyper 1.x, hyper-util 0.1, tower 0.5,
//! tonic 0.14 and tracing 0.1.

use super::Path;
use super::Step::Field;

/// futures-util's combinators and sets.
pub mod futures {
    use super::super::Step::{Field, Unwrap};
    use super::super::{Path, Paths};

    /// `FuturesUnordered{head_all: AtomicPtr<Task>, ..}`, its tasks linked by `next_all`, each
    /// `Task{future: UnsafeCell<Option<Fut>>, ..}`.
    pub const UNORDERED_HEAD: &str = "head_all";
    pub const UNORDERED_NEXT: &str = "next_all";
    pub const UNORDERED_TASK_FUTURE: Paths = &[&[Field("future"), Unwrap]];
    /// `FuturesOrdered{in_progress_queue: FuturesUnordered<OrderWrapper{data, ..}>,
    /// queued_outputs: BinaryHeap, ..}`.
    pub const ORDERED_IN_PROGRESS: &str = "in_progress_queue";
    pub const ORDER_WRAPPER_DATA: &str = "data";
    pub const ORDERED_OUTPUTS: Path = &[Field("queued_outputs"), Field("data")];
    /// `JoinAll{kind: JoinAllKind::Small{elems: Pin<Box<[MaybeDone<F>]>>} | Big{fut:
    /// Collect<FuturesOrdered<F>, _>{stream, ..}}}`.
    pub const JOIN_ALL_KIND: &str = "kind";
    pub const JOIN_ALL_SMALL: &str = "Small";
    pub const JOIN_ALL_ELEMENTS: &str = "elems";
    pub const JOIN_ALL_ORDERED: Paths = &[&[Field("fut"), Field("stream")]];
    /// `SelectAll{inner: Vec<Fut>}`.
    pub const SELECT_ALL_FUTURES: &str = "inner";
    /// `Select{inner: Option<(A, B)>}`.
    pub const SELECT_PAIR: &str = "inner";
    /// `Map{inner: map::Map::Incomplete{future, f} | Complete}`, `Then`/`AndThen{inner:
    /// Flatten::First{f} | Second{f} | Empty}`, `Fuse{inner: Option<Fut>}`.
    pub const COMBINATOR_INNER: &str = "inner";
    pub const MAP_FUTURE: &[&str] = &["future"];
    pub const FLATTEN_FUTURE: &[&str] = &["f"];
    pub const FUSE_FUTURE: &[&str] = &["__0"];
    /// `Either::Left(A) | Right(B)`.
    pub const EITHER_FUTURE: &[&str] = &["__0"];
    /// `MaybeDone::Future(F) | Done(T) | Gone` (futures'); tokio's own `Future{future}`.
    pub const MAYBE_DONE_PENDING: &str = "Future";
    pub const MAYBE_DONE_DONE: &str = "Done";
    pub const MAYBE_DONE_FUTURE: Paths = &[&[Field("future")], &[Field("__0")]];
    /// `StreamExt::next()`: `Next{stream}` (futures-util's and tokio-stream's).
    pub const NEXT_STREAM: &str = "stream";
    /// `FutureExt::shared()`: `Shared{inner: Option<Arc<Inner{future_or_output:
    /// UnsafeCell<FutureOrOutput::Future(Fut) | Output(T)>, notifier}>>, waker_key}`, its
    /// `inner` taken once it has given its output.
    pub const SHARED: &str = "futures_util::future::future::shared::Shared<";
    pub const SHARED_STATE: Path = &[
        Field("inner"),
        super::super::Step::Some,
        super::super::Step::Arc,
        Field("future_or_output"),
        Unwrap,
    ];
    pub const SHARED_PENDING: &str = "Future";
    pub const SHARED_FUTURE: &str = "__0";
    /// `SinkExt::send()`: `Send{feed: Feed{sink: &mut Si, item: Option<Item>}}`.
    pub const SEND: &str = "futures_util::sink::send::Send<";
    pub const FEED: &str = "futures_util::sink::feed::Feed<";
    pub const SEND_FEED: &str = "feed";
    pub const FEED_SINK: &str = "sink";
}

/// futures-channel 0.3: mpsc `Receiver{inner: Option<Arc<BoundedInner{buffer, state:
/// open bit (the top one) | messages, num_senders, ..}>>}` (`UnboundedReceiver` alike, its
/// inner without `buffer`); oneshot `Receiver{inner: Arc<Inner{complete, data: Lock{data:
/// UnsafeCell<Option<T>>}, ..}>}`.
pub mod futures_channel {
    use super::super::Step::{Arc, Field, Some, Unwrap};
    use super::super::{Path, Paths};
    pub const MPSC_RECEIVER: &str = "futures_channel::mpsc::Receiver<";
    pub const MPSC_UNBOUNDED_RECEIVER: &str = "futures_channel::mpsc::UnboundedReceiver<";
    pub const MPSC_INNER: Path = &[Field("inner"), Some, Arc];
    pub const MPSC_BUFFER: &str = "buffer";
    pub const MPSC_STATE: &str = "state";
    /// The mpsc state word: the top bit says open, the rest count queued messages.
    pub const MPSC_OPEN_BIT: u64 = 1 << 63;
    pub const MPSC_SENDERS: &str = "num_senders";
    pub const ONESHOT_RECEIVER: &str = "futures_channel::oneshot::Receiver<";
    pub const ONESHOT_INNER: Path = &[Field("inner"), Arc];
    pub const ONESHOT_COMPLETE: &str = "complete";
    pub const ONESHOT_DATA: Paths = &[&[Field("data"), Field("data"), Unwrap]];
}

/// flume 0.10 and 0.11: `RecvFut{receiver: OwnedOrRef<Receiver<T>>, hook}`, the receiver
/// `Owned(Receiver)` or `Ref(&Receiver)`; `Receiver{shared: Arc<Shared{chan: Mutex<Chan{
/// sending: Option<(capacity, VecDeque<hook>)>, queue: VecDeque<T>, waiting}>, disconnected,
/// sender_count, receiver_count}>}` (`sending` is `None` for an unbounded channel).
pub mod flume {
    use super::super::Path;
    use super::super::Step::{Arc, Deref, Field, Locked, Variant};
    pub const RECV_FUT: &str = "flume::async::RecvFut<";
    pub const RECEIVER: &str = "receiver";
    /// The receiver's variants, and the path from each to the `Receiver`.
    pub const OWNED: Path = &[Variant("Owned"), Field("__0")];
    pub const BORROWED: Path = &[Variant("Ref"), Field("__0"), Deref];
    pub const OWNED_VARIANT: &str = "Owned";
    pub const SHARED: Path = &[Field("shared"), Arc];
    pub const CHAN: Path = &[Field("chan"), Locked];
    pub const SENDING: &str = "sending";
    pub const CAPACITY: &str = "__0";
    pub const QUEUE: &str = "queue";
    pub const DISCONNECTED: &str = "disconnected";
    pub const SENDERS: &str = "sender_count";
}

/// tokio-util 0.7. Codecs: `FramedRead`/`FramedWrite`/`Framed{inner: FramedImpl{inner: T,
/// state, codec}}`, `state` a `ReadFrame{buffer: BytesMut, ..}`, a `WriteFrame{buffer, ..}` or
/// `RWFrames{read, write}`. I/O: `StreamReader{inner: S, chunk}`, `ReaderStream{reader:
/// Option<R>, buf}`. `CancellationToken{inner: Arc<TreeNode{inner: std Mutex<Inner{
/// is_cancelled, ..}>, waker: Notify}>}`, awaited through `WaitForCancellationFuture{
/// cancellation_token: &CancellationToken, ..}` (or the `Owned` one, which keeps the token).
/// `TaskTracker::wait()`'s `TaskTrackerWaitFuture{inner: Option<&TaskTrackerInner{state: tasks
/// << 1 | closed}>, ..}`; `TrackedFuture{future, token}` wraps each tracked task's future.
pub mod tokio_util {
    use super::super::Step::{Arc, Deref, Field, Locked, Some};
    use super::super::{Path, Paths};
    pub const FRAMED_TYPES: &[&str] = &[
        "tokio_util::codec::framed::Framed<",
        "tokio_util::codec::framed_read::FramedRead<",
        "tokio_util::codec::framed_write::FramedWrite<",
    ];
    pub const FRAMED_IMPL: Path = &[Field("inner")];
    pub const FRAMED_IO: &str = "inner";
    pub const FRAMED_STATE: &str = "state";
    /// `RWFrames`' two halves.
    pub const FRAMES_READ: &str = "read";
    pub const FRAMES_WRITE: &str = "write";
    pub const FRAME_BUFFER: &str = "buffer";
    pub const STREAM_READER: &str = "tokio_util::io::stream_reader::StreamReader<";
    pub const STREAM_READER_STREAM: &str = "inner";
    pub const READER_STREAM: &str = "tokio_util::io::reader_stream::ReaderStream<";
    pub const READER_STREAM_READER: Path = &[Field("reader"), Some];
    /// What wraps an I/O object here, and the path to it (see `tokio_futures::IO_WRAPPERS`).
    pub const IO_WRAPPERS: &[(&str, Path)] = &[
        (
            "tokio_util::codec::framed::Framed<",
            &[Field("inner"), Field("inner")],
        ),
        (
            "tokio_util::codec::framed_read::FramedRead<",
            &[Field("inner"), Field("inner")],
        ),
        (
            "tokio_util::codec::framed_write::FramedWrite<",
            &[Field("inner"), Field("inner")],
        ),
        (
            "tokio_util::codec::framed_impl::FramedImpl<",
            &[Field("inner")],
        ),
        (
            "tokio_util::io::reader_stream::ReaderStream<",
            &[Field("reader"), Some],
        ),
    ];
    pub const CANCELLED: &str = "tokio_util::sync::cancellation_token::WaitForCancellationFuture";
    pub const CANCELLED_TREE_NODE: Paths = &[
        &[Field("cancellation_token"), Deref, Field("inner"), Arc],
        &[Field("cancellation_token"), Field("inner"), Arc],
    ];
    pub const TREE_NODE_CANCELLED: Paths = &[&[Field("inner"), Locked, Field("is_cancelled")]];
    pub const TRACKER_WAIT: &str = "tokio_util::task::task_tracker::TaskTrackerWaitFuture";
    pub const TRACKER_WAIT_INNER: Path = &[Field("inner"), Some, Deref];
    pub const TRACKER_STATE: &str = "state";
    /// The tracker's state word: tasks << 1 | closed.
    pub const TRACKER_CLOSED: u64 = 1;
    pub const TRACKER_TASKS_SHIFT: u32 = 1;
    pub const TRACKED_FUTURE: &str = "tokio_util::task::task_tracker::TrackedFuture<";
    pub const TRACKED_FUTURE_INNER: &str = "future";
}

/// What the HTTP stack wraps a tokio I/O object in, and the path to it: hyper-util's
/// `TokioIo{inner}` and `Rewind{inner, ..}`, hyper's `Compat(T)`, h2's codec `FramedWrite{
/// inner, ..}`, tonic's `ServerIo::Io(T)` and `BoxedIo(Pin<Box<dyn Io>>)`.
pub const IO_WRAPPERS: &[(&str, Path)] = &[
    ("hyper_util::rt::tokio::TokioIo<", &[Field("inner")]),
    ("hyper_util::common::rewind::Rewind<", &[Field("inner")]),
    ("hyper::common::io::compat::Compat<", &[Field("__0")]),
    ("h2::codec::framed_write::FramedWrite<", &[Field("inner")]),
    (
        "tonic::transport::server::service::io::ServerIo<",
        &[super::Step::Variant("Io"), Field("__0")],
    ),
    (
        "tonic::transport::channel::service::io::BoxedIo",
        &[Field("__0")],
    ),
];

/// bytes 1.x `BytesMut{ptr, len, cap, data}` and `Bytes{ptr, len, ..}`: their length.
pub const BYTES_LENGTH: &str = "len";

/// tokio-stream (0.1): `StreamMap<K, V>{entries: Vec<(K, V)>}`; the `wrappers` hold what
/// they adapt in `inner`.
pub mod tokio_stream {
    pub const STREAM_MAP_TYPE: &str = "tokio_stream::stream_map::StreamMap<";
    pub const STREAM_MAP_ENTRIES: &str = "entries";
    pub const RECEIVER_STREAM: &str = "tokio_stream::wrappers::mpsc_bounded::ReceiverStream<";
    pub const UNBOUNDED_RECEIVER_STREAM: &str =
        "tokio_stream::wrappers::mpsc_unbounded::UnboundedReceiverStream<";
    pub const TCP_LISTENER_STREAM: &str = "tokio_stream::wrappers::tcp_listener::TcpListenerStream";
    pub const UNIX_LISTENER_STREAM: &str =
        "tokio_stream::wrappers::unix_listener::UnixListenerStream";
    pub const WRAPPER_INNER: &str = "inner";
}

/// async-stream (0.3): `AsyncStream<T, U>{rx: Receiver<T>, done: bool, generator: U}`.
pub mod async_stream {
    pub const STREAM_TYPE: &str = "async_stream::async_stream::AsyncStream<";
    pub const GENERATOR: &str = "generator";
    pub const DONE: &str = "done";
}

/// hyper 1.x HTTP/1 connections: `proto::h1::dispatch::Dispatcher<D, Bs, I, T>{conn:
/// Conn{state: State{reading, writing, ..}, ..}, dispatch: D, ..}` with `D` =
/// `Server{in_flight: Pin<Box<Option<S::Future>>>, ..}` or `Client{callback:
/// Option<Callback>, ..}`; a callback is `Callback::Retry(Option<oneshot::Sender>)` or
/// `NoRetry(Option<oneshot::Sender>)`.
pub mod hyper {
    use super::super::Path;
    use super::super::Step::Field;
    pub const SERVER_DISPATCHER: &str =
        "hyper::proto::h1::dispatch::Dispatcher<hyper::proto::h1::dispatch::Server<";
    pub const CLIENT_DISPATCHER: &str =
        "hyper::proto::h1::dispatch::Dispatcher<hyper::proto::h1::dispatch::Client<";
    pub const READING: Path = &[Field("conn"), Field("state"), Field("reading")];
    pub const WRITING: Path = &[Field("conn"), Field("state"), Field("writing")];
    pub const IN_FLIGHT: Path = &[Field("dispatch"), Field("in_flight")];
    /// How `via` names the handler found in `IN_FLIGHT`.
    pub const IN_FLIGHT_VIA: &str = "dispatch.in_flight";
    pub const CALLBACK: Path = &[Field("dispatch"), Field("callback")];
    /// `Dispatcher{body_rx: Pin<Box<Option<B>>>, ..}`: the response body being written.
    pub const BODY_RX: &str = "body_rx";
    /// `Conn{io: Buffered{io: I, ..}, ..}`: the connection's I/O (`IO_WRAPPERS` lead on).
    pub const CONN_IO: Path = &[Field("conn"), Field("io"), Field("io")];
    /// `Buffered{read_buf: BytesMut, ..}`: bytes read and not yet parsed.
    pub const CONN_READ_BUFFER: Path = &[Field("conn"), Field("io"), Field("read_buf")];
    pub const CALLBACK_SENDER: &str = "__0";
    /// The states of `Reading`/`Writing` the activity is told from, lowercased.
    pub const STATE_BODY: &str = "body";
    pub const STATE_CONTINUE: &str = "continue";
    pub const STATE_CLOSED: &str = "closed";
}

/// h2 0.4: a client request's `ResponseFuture{inner: OpaqueStreamRef{key: Key{stream_id:
/// StreamId(u32), ..}, ..}, ..}`, waiting for the response's headers on that stream.
pub mod h2 {
    use super::super::Path;
    use super::super::Step::Field;
    pub const RESPONSE_FUTURE: &str = "h2::client::ResponseFuture";
    pub const STREAM_ID: Path = &[
        Field("inner"),
        Field("key"),
        Field("stream_id"),
        Field("__0"),
    ];
}

/// hickory-net 0.26's `UdpClientStream<P>`, the stream a DNS exchange's background task
/// polls for a UDP nameserver: its `poll_next` is ready whenever polled, as each request
/// sends from a socket of its own and waits in the future it returned to its caller.
pub const HICKORY_UDP_CLIENT_STREAM: &str = "hickory_net::udp::udp_client_stream::UdpClientStream<";

/// futures-util's `stream::iter(I)`: `Iter{iter: I}`.
pub const ITER_STREAM: &str = "futures_util::stream::iter::Iter<";

/// tower 0.5 `Buffer`: callers' `future::ResponseFuture{state: ResponseState::{Failed{error},
/// Rx{rx: oneshot::Receiver}, Poll{fut}}}`; the worker task's `worker::Worker{current_message:
/// Option<Message{request, tx: oneshot::Sender, ..}>, service, ..}`.
pub mod tower {
    pub const BUFFER_RESPONSE: &str = "tower::buffer::future::ResponseFuture<";
    pub const BUFFER_WORKER: &str = "tower::buffer::worker::Worker<";
    pub const RESPONSE_STATE: &str = "state";
    pub const STATE_WAITING: &str = "Rx";
    pub const STATE_POLLING: &str = "Poll";
    pub const WAITING_RECEIVER: &str = "rx";
    pub const POLLING_FUTURE: &str = "fut";
    pub const WORKER_MESSAGE: &str = "current_message";
    pub const MESSAGE_SENDER: &str = "tx";
    pub const WORKER_SERVICE: &str = "service";
}

/// tonic 0.14 `codec::decode::Streaming<T>{inner: StreamingInner{state: State::{ReadHeader,
/// ReadBody{len, ..}, Error}, direction: Direction::{Request, Response(StatusCode), ..}, ..}}`.
pub mod tonic {
    use super::super::Path;
    use super::super::Step::Field;
    pub const STREAMING: &str = "tonic::codec::decode::Streaming<";
    pub const STATE: Path = &[Field("inner"), Field("state")];
    pub const DIRECTION: Path = &[Field("inner"), Field("direction")];
    pub const BODY_LENGTH: &str = "len";
    pub const READ_HEADER: &str = "ReadHeader";
    pub const READ_BODY: &str = "ReadBody";
    pub const REQUEST: &str = "Request";
}

/// tracing 0.1: `Instrumented<F>{inner: ManuallyDrop<F>, span: Span{meta:
/// Option<&'static Metadata{name: &str, ..}>, ..}}`.
pub const INSTRUMENTED_FUTURE: &str = "inner";
pub const INSTRUMENTED_SPAN: &str = "span";
pub const SPAN_METADATA: &str = "meta";
pub const METADATA_NAME: Path = &[Field("name")];
