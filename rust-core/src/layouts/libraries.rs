//! The libraries whose futures are decoded: futures-util 0.3, tokio-stream 0.1, async-stream
//! 0.3, hyper 1.x, tower 0.5, tonic 0.14 and tracing 0.1.

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
}

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
    pub const CALLBACK_SENDER: &str = "__0";
    /// The states of `Reading`/`Writing` the activity is told from, lowercased.
    pub const STATE_BODY: &str = "body";
    pub const STATE_CONTINUE: &str = "continue";
    pub const STATE_CLOSED: &str = "closed";
}

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
