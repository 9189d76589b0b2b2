//! The threads this library starts run inside the debugger's process, which expects its
//! signals (SIGCHLD when the program stops, SIGINT for Ctrl-C) on its own threads: GDB's
//! Python API asks threads it did not start to block them. Ours block every signal, so
//! the kernel never hands one of the debugger's to them.

use std::sync::{Mutex, PoisonError};

use crate::panics;

/// Tasks from which a pass over all of them (the walk of a runtime's shards, the wait
/// analysis, the stop's marks, the `tasks` table's rows) is split between two threads:
/// below it, starting and joining a second thread costs about what it saves.
pub const MANY_TASKS: usize = 20_000;

/// Blocks every signal on the calling thread; the first call of a thread of ours.
pub fn block_signals() {
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: `sigfillset` initialises the set it is given; `pthread_sigmask` reads it and
    // changes only the calling thread's mask (no old mask is asked for).
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_BLOCK, all.as_ptr(), std::ptr::null_mut());
    }
}

/// Starts a scoped thread of ours, named, blocking every signal before it runs `body`.
/// `Err` when no thread can be had (a process at its limit): the caller does the work.
pub fn spawn_scoped<'scope, T: Send + 'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    name: &str,
    body: impl FnOnce() -> T + Send + 'scope,
) -> std::io::Result<std::thread::ScopedJoinHandle<'scope, T>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(scope, move || {
            block_signals();
            body()
        })
}

/// `work` over `first` on this thread and over `second` on a thread of ours at once, the
/// results in that order; both here when no thread can be had. A panic on the helper is
/// caught there quietly and carried on here (`panics`), where the command reports it.
pub fn in_two_halves<I: Send, R: Send>(
    name: &str,
    first: I,
    second: I,
    work: impl Fn(I) -> R + Sync,
) -> (R, R) {
    // Taken by the thread that works on it: the helper, or this one should none start.
    let second = Mutex::new(Some(second));
    let take_second = || {
        let taken = second.lock().unwrap_or_else(PoisonError::into_inner).take();
        work(taken.expect("the second half is taken once"))
    };
    std::thread::scope(|scope| {
        let helper = spawn_scoped(scope, name, || panics::on_helper_thread(take_second));
        let mine = work(first);
        let theirs = match helper.map(|helper| helper.join()) {
            Ok(Ok(Ok(theirs))) => theirs,
            Ok(Ok(Err(caught))) => panics::resume(caught),
            Ok(Err(payload)) => std::panic::resume_unwind(payload),
            Err(_) => take_second(),
        };
        (mine, theirs)
    })
}

#[cfg(test)]
mod tests {
    /// Which of the debugger's signals the calling thread blocks (1: blocked).
    fn blocked_here() -> [i32; 3] {
        let mut mask = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: reads the calling thread's mask into `mask`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), mask.as_mut_ptr());
            [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM]
                .map(|signal| libc::sigismember(mask.as_ptr(), signal))
        }
    }

    /// Each half's result comes back in order (a mutable half changed in place), and a
    /// panic in the helper's half is the caller's, as `guarded` reports it.
    #[test]
    fn two_halves_come_back_in_order_and_the_helpers_panic_here() {
        let mut numbers = [1, 2, 3, 4];
        let (first, second) = numbers.split_at_mut(2);
        let sums = super::in_two_halves("test", first, second, |half: &mut [i32]| {
            half.iter_mut().for_each(|number| *number *= 10);
            half.iter().sum::<i32>()
        });
        assert_eq!(sums, (30, 70));
        assert_eq!(numbers, [10, 20, 30, 40]);
        let failed = crate::panics::guarded(|| {
            super::in_two_halves("test", 1, 2, |half| match half {
                2 => panic!("the second half failed"),
                _ => half,
            });
            Ok(())
        })
        .unwrap_err();
        assert!(
            failed.message().contains("the second half failed"),
            "{failed:?}"
        );
    }

    #[test]
    fn a_thread_of_ours_blocks_every_signal() {
        let blocked = std::thread::spawn(|| {
            super::block_signals();
            blocked_here()
        })
        .join()
        .unwrap();
        assert_eq!(blocked, [1, 1, 1]);
    }

    #[test]
    fn a_scoped_thread_of_ours_blocks_every_signal() {
        let blocked = std::thread::scope(|scope| {
            super::spawn_scoped(scope, "test", blocked_here)
                .unwrap()
                .join()
                .unwrap()
        });
        assert_eq!(blocked, [1, 1, 1]);
    }
}
