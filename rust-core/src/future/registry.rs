//! The one table that maps a future's type to its decoder. Adding a decoder is a small
//! file under `decoders/` and one line here. Earlier entries win.

use super::decoders::{
    boxed, channels, futures_channels, hyper, io, io_util, join_handle, notify, poll_fn, process,
    semaphore, sets, signals, sleep, streams, sync_waits, tokio_util, tonic, tower, trivial,
    wrappers, DecodeFn,
};
use crate::dwarf::{TypeInfo, TypeTag};
use crate::layouts::libraries::{
    self, async_stream, flume, futures as futures_layout, futures_channel, h2 as h2_layout,
    hyper as hyper_layout, tokio_stream, tokio_util as tokio_util_layout, tonic as tonic_layout,
    tower as tower_layout,
};
use crate::names;

pub enum Pattern {
    /// The type's name starts with this.
    Type(&'static str),
    /// The type's name is this (where other types' names start with it).
    Exactly(&'static str),
    /// The env of an async fn `name` defined under `module` (any impl block).
    AsyncFn {
        module: &'static str,
        name: &'static str,
    },
}

use Pattern::{AsyncFn, Exactly, Type};

const TABLE: &[(Pattern, DecodeFn)] = &[
    // See-through wrappers.
    (
        Type("tokio::runtime::task::trace::Root<"),
        wrappers::taskdump_root,
    ),
    (Type("core::pin::Pin<"), wrappers::pin),
    (
        Type("core::mem::manually_drop::ManuallyDrop<"),
        wrappers::single_field,
    ),
    (
        Type("core::mem::maybe_dangling::MaybeDangling<"),
        wrappers::single_field,
    ),
    (Type("tokio::task::coop::Coop<"), wrappers::coop),
    (
        Type("tokio::task::local::RunUntil<"),
        wrappers::local_set_run_until,
    ),
    (
        Type("futures_util::stream::stream::next::Next<"),
        wrappers::stream_next,
    ),
    (
        Type("tokio_stream::stream_ext::next::Next<"),
        wrappers::stream_next,
    ),
    (
        Type("futures_util::future::future::Map<"),
        wrappers::futures_map,
    ),
    (
        Type("futures_util::future::future::Then<"),
        wrappers::futures_then,
    ),
    (
        Type("futures_util::future::try_future::AndThen<"),
        wrappers::futures_and_then,
    ),
    (
        Type("futures_util::future::future::fuse::Fuse<"),
        wrappers::futures_fuse,
    ),
    (
        Type("futures_util::future::maybe_done::MaybeDone<"),
        wrappers::futures_maybe_done,
    ),
    (
        Type("futures_util::future::either::Either<"),
        wrappers::futures_either,
    ),
    (Type(futures_layout::SHARED), wrappers::futures_shared),
    (
        Type("tracing::instrument::Instrumented<"),
        wrappers::instrumented,
    ),
    (Type("tokio::time::timeout::Timeout<"), sleep::timeout),
    (
        Type(tokio_util_layout::TRACKED_FUTURE),
        tokio_util::tracked_future,
    ),
    (Type(futures_layout::SEND), io_util::sink_feed),
    (Type(futures_layout::FEED), io_util::sink_feed),
    // Leaves.
    (Type("tokio::time::sleep::Sleep"), sleep::sleep),
    (
        AsyncFn {
            module: "tokio::time::interval::",
            name: "tick",
        },
        sleep::interval_tick,
    ),
    (
        Type("tokio::runtime::task::join::JoinHandle<"),
        join_handle::join_handle,
    ),
    (
        AsyncFn {
            module: "tokio::sync::mutex::",
            name: "lock",
        },
        semaphore::mutex_lock,
    ),
    (
        AsyncFn {
            module: "tokio::sync::mutex::",
            name: "lock_owned",
        },
        semaphore::mutex_lock,
    ),
    (
        AsyncFn {
            module: "tokio::sync::rwlock::",
            name: "read",
        },
        semaphore::rwlock_read,
    ),
    (
        AsyncFn {
            module: "tokio::sync::rwlock::",
            name: "read_owned",
        },
        semaphore::rwlock_read,
    ),
    (
        AsyncFn {
            module: "tokio::sync::rwlock::",
            name: "write",
        },
        semaphore::rwlock_write,
    ),
    (
        AsyncFn {
            module: "tokio::sync::rwlock::",
            name: "write_owned",
        },
        semaphore::rwlock_write,
    ),
    (
        AsyncFn {
            module: "tokio::sync::semaphore::",
            name: "acquire",
        },
        semaphore::semaphore_acquire,
    ),
    (
        AsyncFn {
            module: "tokio::sync::semaphore::",
            name: "acquire_owned",
        },
        semaphore::semaphore_acquire,
    ),
    (
        AsyncFn {
            module: "tokio::sync::semaphore::",
            name: "acquire_many",
        },
        semaphore::semaphore_acquire,
    ),
    (
        AsyncFn {
            module: "tokio::sync::semaphore::",
            name: "acquire_many_owned",
        },
        semaphore::semaphore_acquire,
    ),
    (
        Type("tokio::sync::batch_semaphore::Acquire"),
        semaphore::acquire_leaf,
    ),
    (Type("tokio::sync::notify::Notified"), notify::notified),
    (
        AsyncFn {
            module: "tokio::sync::mpsc::bounded::",
            name: "recv",
        },
        channels::mpsc_recv,
    ),
    (
        AsyncFn {
            module: "tokio::sync::mpsc::bounded::",
            name: "recv_many",
        },
        channels::mpsc_recv,
    ),
    (
        AsyncFn {
            module: "tokio::sync::mpsc::unbounded::",
            name: "recv",
        },
        channels::mpsc_recv,
    ),
    (
        AsyncFn {
            module: "tokio::sync::mpsc::unbounded::",
            name: "recv_many",
        },
        channels::mpsc_recv,
    ),
    (
        Type("tokio::sync::oneshot::Receiver<"),
        channels::oneshot_recv,
    ),
    (
        AsyncFn {
            module: "tokio::sync::watch::",
            name: "changed",
        },
        channels::watch_changed,
    ),
    (
        AsyncFn {
            module: "tokio::sync::broadcast::",
            name: "recv",
        },
        channels::broadcast_recv,
    ),
    (
        AsyncFn {
            module: "tokio::net::",
            name: "accept",
        },
        io::socket_wait,
    ),
    (
        AsyncFn {
            module: "tokio::net::",
            name: "readable",
        },
        io::socket_wait,
    ),
    (
        AsyncFn {
            module: "tokio::net::",
            name: "writable",
        },
        io::socket_wait,
    ),
    (
        AsyncFn {
            module: "tokio::net::",
            name: "ready",
        },
        io::socket_wait,
    ),
    (Type("tokio::io::util::read::Read<"), io::read),
    (Type("tokio::io::util::read_exact::ReadExact<"), io::read),
    (Type("tokio::io::util::read_buf::ReadBuf<"), io::read),
    (Type("tokio::io::util::read_to_end::ReadToEnd<"), io::read),
    (Type("tokio::io::util::read_until::ReadUntil<"), io::read),
    (Type("tokio::io::util::read_line::ReadLine<"), io::read_line),
    (Type("tokio::io::util::write::Write<"), io::write),
    (Type("tokio::io::util::write_all::WriteAll<"), io::write),
    (Type("tokio::io::util::write_buf::WriteBuf<"), io::write),
    (
        Type("tokio::io::util::write_all_buf::WriteAllBuf<"),
        io::write,
    ),
    (Type("tokio::io::util::copy::Copy<"), io_util::copy),
    (
        Type("tokio::io::util::copy_buf::CopyBuf<"),
        io_util::copy_buf,
    ),
    (
        AsyncFn {
            module: "tokio::io::util::copy_bidirectional::",
            name: "copy_bidirectional_impl",
        },
        io_util::copy_bidirectional,
    ),
    (Type(tokio_util_layout::FRAMED_TYPES[0]), io_util::framed),
    (Type(tokio_util_layout::FRAMED_TYPES[1]), io_util::framed),
    (Type(tokio_util_layout::FRAMED_TYPES[2]), io_util::framed),
    (Type(tokio_util_layout::READER_STREAM), io::reader_stream),
    (Type(tokio_util_layout::CANCELLED), tokio_util::cancelled),
    (
        Type(tokio_util_layout::TRACKER_WAIT),
        tokio_util::tracker_wait,
    ),
    (
        AsyncFn {
            module: "tokio::signal::",
            name: "recv",
        },
        signals::signal_recv,
    ),
    (
        AsyncFn {
            module: "tokio::process::",
            name: "wait",
        },
        process::child_wait,
    ),
    (
        AsyncFn {
            module: "tokio::sync::barrier::",
            name: "wait",
        },
        sync_waits::barrier_wait,
    ),
    (
        AsyncFn {
            module: "tokio::sync::once_cell::",
            name: "get_or_init",
        },
        sync_waits::once_cell_get_or_init,
    ),
    (
        AsyncFn {
            module: "tokio::sync::once_cell::",
            name: "get_or_try_init",
        },
        sync_waits::once_cell_get_or_init,
    ),
    (
        AsyncFn {
            module: "tokio::sync::set_once::",
            name: "wait",
        },
        sync_waits::set_once_wait,
    ),
    (
        Type(futures_channel::MPSC_RECEIVER),
        futures_channels::mpsc_receiver,
    ),
    (
        Type(futures_channel::MPSC_UNBOUNDED_RECEIVER),
        futures_channels::mpsc_receiver,
    ),
    (
        Type(futures_channel::ONESHOT_RECEIVER),
        futures_channels::oneshot_receiver,
    ),
    (Type(flume::RECV_FUT), futures_channels::flume_recv),
    (
        Type("tokio::runtime::io::scheduled_io::Readiness"),
        io::readiness_leaf,
    ),
    (
        AsyncFn {
            module: "tokio::task::yield_now::",
            name: "yield_now",
        },
        trivial::yield_now,
    ),
    (Type("core::future::pending::Pending<"), trivial::pending),
    (
        Type("futures_util::future::pending::Pending<"),
        trivial::pending,
    ),
    (Type("core::future::ready::Ready<"), trivial::ready),
    (Type("futures_util::future::ready::Ready<"), trivial::ready),
    // Trees.
    (
        Type("futures_util::stream::futures_unordered::FuturesUnordered<"),
        sets::futures_unordered,
    ),
    (
        Type("futures_util::stream::futures_ordered::FuturesOrdered<"),
        sets::futures_ordered,
    ),
    (Type("tokio::task::join_set::JoinSet<"), sets::join_set),
    (
        AsyncFn {
            module: "tokio::task::join_set::",
            name: "join_next",
        },
        sets::join_set_join_next,
    ),
    (
        Type("futures_util::future::join_all::JoinAll<"),
        sets::join_all,
    ),
    (
        Type("futures_util::future::select_all::SelectAll<"),
        sets::select_all,
    ),
    (Type("futures_util::future::select::Select<"), sets::select),
    // Streams and libraries.
    (Type(tokio_stream::STREAM_MAP_TYPE), streams::stream_map),
    (
        Type(tokio_stream::RECEIVER_STREAM),
        channels::mpsc_receiver_stream,
    ),
    (
        Type(tokio_stream::UNBOUNDED_RECEIVER_STREAM),
        channels::mpsc_receiver_stream,
    ),
    (Type(tokio_stream::TCP_LISTENER_STREAM), io::listener_stream),
    (
        Type(tokio_stream::UNIX_LISTENER_STREAM),
        io::listener_stream,
    ),
    (Type(async_stream::STREAM_TYPE), streams::async_stream),
    (
        Type(hyper_layout::SERVER_DISPATCHER),
        hyper::server_connection,
    ),
    (
        Type(hyper_layout::CLIENT_DISPATCHER),
        hyper::client_connection,
    ),
    (Type(tonic_layout::STREAMING), tonic::streaming),
    (Type(tower_layout::BUFFER_RESPONSE), tower::buffer_response),
    (Type(h2_layout::RESPONSE_FUTURE), hyper::http2_response),
    (Type(libraries::ITER_STREAM), trivial::iter_stream),
    (
        Type(libraries::HICKORY_UDP_CLIENT_STREAM),
        trivial::udp_client_stream,
    ),
    (Type(tower_layout::BUFFER_WORKER), tower::buffer_worker),
    (Type("tokio::task::local::LocalSet"), wrappers::local_set),
    // A `poll_fn` no macro made (macros' are recognised by the coroutine awaiting them).
    (Type("core::future::poll_fn::PollFn<"), poll_fn::poll_fn),
    (Type("tokio::future::poll_fn::PollFn<"), poll_fn::poll_fn),
    (
        Type("futures_util::future::poll_fn::PollFn<"),
        poll_fn::poll_fn,
    ),
    // What a future keeps and polls from its own `poll` (a hand-written future's fields):
    // no futures, but what it can wait on. Found by the search of its fields.
    (
        Type("tokio::sync::mpsc::bounded::Receiver<"),
        channels::mpsc_receiver_held,
    ),
    (
        Type("tokio::sync::mpsc::unbounded::UnboundedReceiver<"),
        channels::mpsc_receiver_held,
    ),
    (
        Type("tokio::sync::watch::Receiver<"),
        channels::watch_receiver_held,
    ),
    (
        Type("tokio::sync::broadcast::Receiver<"),
        channels::broadcast_receiver_held,
    ),
    (
        Type("alloc::sync::Arc<tokio::sync::notify::Notify"),
        notify::notify_held,
    ),
    (Type("tokio::sync::notify::Notify"), notify::notify_held),
    (Type("tokio::net::tcp::stream::TcpStream"), io::held_io),
    (Type("tokio::net::tcp::listener::TcpListener"), io::held_io),
    (Type("tokio::net::udp::UdpSocket"), io::held_io),
    (Type("tokio::net::unix::stream::UnixStream"), io::held_io),
    (
        Type("tokio::net::unix::listener::UnixListener"),
        io::held_io,
    ),
    (Type("tokio::io::poll_evented::PollEvented<"), io::held_io),
    // Not `SignalKind`, which a listener keeps beside it.
    (Exactly("tokio::signal::unix::Signal"), signals::signal_held),
];

/// The decoder for a future of this type, if one is known.
pub fn decoder_for(info: &TypeInfo) -> Option<DecodeFn> {
    if info.tag == TypeTag::Pointer {
        return Some(wrappers::pointer);
    }
    if boxed::is_dyn_future(info) || boxed::is_dyn_body(info) {
        return Some(boxed::dyn_future);
    }
    let (entry, (_, decode)) = TABLE
        .iter()
        .enumerate()
        .find(|(_, (pattern, _))| matches(pattern, &info.name))?;
    #[cfg(test)]
    USED.with(|used| used.borrow_mut().insert(entry));
    #[cfg(not(test))]
    let _ = entry;
    Some(*decode)
}

#[cfg(test)]
thread_local! {
    /// The table's entries this thread's decoding used: which entries the decoder tests
    /// reach (decoders/tests.rs).
    pub static USED: std::cell::RefCell<rustc_hash::FxHashSet<usize>> = Default::default();
}

/// What each entry of the table matches, in order (`module::name()` for an async fn).
#[cfg(test)]
pub fn entries() -> Vec<String> {
    TABLE
        .iter()
        .map(|(pattern, _)| match pattern {
            Type(prefix) => prefix.to_string(),
            Exactly(name) => name.to_string(),
            AsyncFn { module, name } => format!("{module}{name}()"),
        })
        .collect()
}

fn matches(pattern: &Pattern, type_name: &str) -> bool {
    match pattern {
        Type(prefix) => type_name.starts_with(prefix),
        Exactly(name) => type_name == *name,
        AsyncFn { module, name } => {
            if !type_name.starts_with(module) {
                return false;
            }
            let segments = names::split_path(type_name);
            match segments.as_slice() {
                [.., function, env] => env.starts_with("{async_fn_env#") && function == name,
                _ => false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn async_fn_patterns_ignore_impl_numbers_and_generics() {
        let lock = AsyncFn {
            module: "tokio::sync::mutex::",
            name: "lock",
        };
        assert!(matches(
            &lock,
            "tokio::sync::mutex::{impl#10}::lock::{async_fn_env#0}<u32>"
        ));
        assert!(!matches(
            &lock,
            "tokio::sync::mutex::{impl#10}::lock::{async_fn#0}::{async_block_env#0}<u32>"
        ));
        assert!(!matches(&lock, "app::mutex::lock::{async_fn_env#0}"));
    }

    #[test]
    fn a_kept_signal_is_told_from_the_kind_kept_beside_it() {
        let signal = Exactly("tokio::signal::unix::Signal");
        assert!(matches(&signal, "tokio::signal::unix::Signal"));
        assert!(!matches(&signal, "tokio::signal::unix::SignalKind"));
    }
}
