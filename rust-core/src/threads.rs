//! The threads this library starts run inside the debugger's process, which expects its
//! signals (SIGCHLD when the program stops, SIGINT for Ctrl-C) on its own threads: GDB's
//! Python API asks threads it did not start to block them. Ours block every signal, so
//! the kernel never hands one of the debugger's to them.

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
