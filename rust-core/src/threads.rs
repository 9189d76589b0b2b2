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

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_of_ours_blocks_every_signal() {
        let blocked = std::thread::spawn(|| {
            super::block_signals();
            let mut mask = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            // SAFETY: reads the calling thread's mask into `mask`.
            unsafe {
                libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), mask.as_mut_ptr());
                [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM]
                    .map(|signal| libc::sigismember(mask.as_ptr(), signal))
            }
        })
        .join()
        .unwrap();
        assert_eq!(blocked, [1, 1, 1]);
    }
}
