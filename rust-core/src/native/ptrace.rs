//! Stopping a live process's threads for as long as they are read, and nothing more:
//! `PTRACE_SEIZE` then `PTRACE_INTERRUPT` each thread (a seize sends no signal, so the
//! program sees none), their registers, and `PTRACE_DETACH` on every way out: the `Drop`
//! of `Stopped` runs on success, on error, on Ctrl-C and while a panic unwinds. A signal
//! that arrived while a thread was stopped is handed back to it at the detach. A process
//! that was stopped already (SIGSTOP) stays stopped. ptrace ties a tracee to the thread
//! that seized it, so all of this runs on one thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::proc;
use super::registers::Registers;
use crate::error::{Error, ErrorKind, Result};

/// Rounds of listing the threads and seizing new ones: a thread started while the others
/// were being seized is caught by the next round.
const MAX_SEIZE_ROUNDS: usize = 16;
/// How long one thread may take to stop before the attach gives up.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// One stopped thread.
pub struct StoppedThread {
    pub tid: u64,
    pub registers: Registers,
    pub fs_base: u64,
}

/// A process whose threads are stopped; dropping it lets them go.
pub struct Stopped {
    pub pid: u32,
    pub threads: Vec<StoppedThread>,
    /// Each seized thread, and the signal to give back at the detach.
    seized: Vec<(Pid, Option<Signal>)>,
    /// When the first thread was seized.
    pub since: Instant,
    /// How long stopping every thread took.
    pub stopping: Duration,
}

impl Stopped {
    /// Detaches every thread now (also what dropping does), and says for how long the
    /// process was stopped.
    pub fn resume(mut self) -> Duration {
        self.detach_all();
        self.since.elapsed()
    }

    fn detach_all(&mut self) {
        for (tid, signal) in self.seized.drain(..) {
            // ESRCH: the thread is gone (it exited, or the process was killed meanwhile).
            let _ = ptrace::detach(tid, signal);
        }
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        self.detach_all();
    }
}

/// Stops every thread of `pid`. `interrupted` is our own Ctrl-C (SIGINT, SIGTERM): the
/// threads seized so far are let go and the attach fails.
pub fn stop(pid: u32, interrupted: &AtomicBool) -> Result<Stopped> {
    if !proc::exists(pid) {
        return Err(Error::new(
            ErrorKind::Binary,
            format!("no process {pid} (it exited, or it is not visible from here)"),
        ));
    }
    if let Some(tracer) = proc::tracer(pid) {
        return Err(already_traced(pid, tracer));
    }
    let mut stopped = Stopped {
        pid,
        threads: Vec::new(),
        seized: Vec::new(),
        since: Instant::now(),
        stopping: Duration::ZERO,
    };
    for _ in 0..MAX_SEIZE_ROUNDS {
        let listed = proc::thread_ids(pid)?;
        let new: Vec<u64> = listed
            .into_iter()
            .filter(|tid| {
                !stopped
                    .seized
                    .iter()
                    .any(|(seized, _)| seized.as_raw() as u64 == *tid)
            })
            .collect();
        if new.is_empty() {
            break;
        }
        let mut this_round = Vec::new();
        for tid in new {
            let thread = Pid::from_raw(tid as i32);
            match ptrace::seize(thread, ptrace::Options::empty()) {
                Ok(()) => {}
                // Exited since it was listed.
                Err(Errno::ESRCH) => continue,
                Err(errno) => {
                    if stopped.seized.is_empty() && this_round.is_empty() {
                        return Err(refused(pid, errno));
                    }
                    return Err(Error::new(
                        ErrorKind::Binary,
                        format!(
                            "cannot stop thread {tid} of process {pid}: {}",
                            errno.desc()
                        ),
                    ));
                }
            }
            stopped.seized.push((thread, None));
            this_round.push(thread);
            if ptrace::interrupt(thread).is_err() {
                continue;
            }
        }
        for thread in this_round {
            if let Some(signal) = wait_for_stop(thread, interrupted)? {
                if let Some(entry) = stopped.seized.iter_mut().find(|(tid, _)| *tid == thread) {
                    entry.1 = Some(signal);
                }
            }
        }
    }
    stopped.stopping = stopped.since.elapsed();
    stopped.threads = registers_of(&stopped.seized);
    Ok(stopped)
}

/// The registers of each seized thread, by tid. A thread that exited while stopping has
/// none; it is not listed.
fn registers_of(seized: &[(Pid, Option<Signal>)]) -> Vec<StoppedThread> {
    let mut threads: Vec<StoppedThread> = seized
        .iter()
        .filter_map(|&(thread, _)| {
            let regs = ptrace::getregs(thread).ok()?;
            let (registers, fs_base) = Registers::from_user_regs_struct(&regs);
            Some(StoppedThread {
                tid: thread.as_raw() as u64,
                registers,
                fs_base,
            })
        })
        .collect();
    threads.sort_by_key(|thread| thread.tid);
    threads
}

/// Waits until `thread` is stopped. A signal that stopped it instead of our interrupt is
/// returned, to be delivered at the detach.
fn wait_for_stop(thread: Pid, interrupted: &AtomicBool) -> Result<Option<Signal>> {
    let started = Instant::now();
    let mut pending = None;
    loop {
        if interrupted.load(Ordering::Relaxed) {
            return Err(Error::new(
                ErrorKind::Interrupted,
                "interrupted while stopping the process's threads",
            ));
        }
        match waitpid(thread, Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if started.elapsed() > STOP_TIMEOUT {
                    return Err(Error::new(
                        ErrorKind::Binary,
                        format!("thread {thread} did not stop within {STOP_TIMEOUT:?}"),
                    ));
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            // Our interrupt, or the process's own group stop (SIGSTOP before we came).
            Ok(WaitStatus::PtraceEvent(_, _, event)) if event == libc::PTRACE_EVENT_STOP => {
                return Ok(pending)
            }
            // A signal arrived first: the thread is stopped at its delivery; hand it back
            // when we leave.
            Ok(WaitStatus::Stopped(_, signal)) => {
                pending = Some(signal);
                return Ok(pending);
            }
            Ok(WaitStatus::Exited(..)) | Ok(WaitStatus::Signaled(..)) | Err(Errno::ECHILD) => {
                return Ok(None)
            }
            Ok(_) => return Ok(pending),
            Err(Errno::EINTR) => continue,
            Err(errno) => {
                return Err(Error::new(
                    ErrorKind::Binary,
                    format!("cannot wait for thread {thread} to stop: {}", errno.desc()),
                ))
            }
        }
    }
}

/// Another tracer holds the process: one line naming it.
pub fn already_traced(pid: u32, tracer: u32) -> Error {
    let name = proc::command_name(tracer).unwrap_or_else(|| "?".into());
    Error::new(
        ErrorKind::Binary,
        format!(
            "process {pid} is already traced by process {tracer} ({name}); a process has one tracer at a time: \
             detach that one first, or, in that debugger, load tokio-async and run `async backtrace all`"
        ),
    )
}

/// The kernel refused to let us trace the process: why, and what to do.
pub fn refused(pid: u32, errno: Errno) -> Error {
    // SAFETY: geteuid has no preconditions.
    let our_uid = unsafe { libc::geteuid() };
    let their_uid: Option<u32> = proc::status_field(pid, "Uid").and_then(|uids| {
        uids.split_whitespace()
            .nth(1)
            .and_then(|uid| uid.parse().ok())
    });
    Error::new(
        ErrorKind::Binary,
        refusal(
            pid,
            errno,
            Tracing {
                scope: proc::ptrace_scope(),
                our_uid,
                their_uid,
            },
        ),
    )
}

/// What decides why the kernel refused: Yama's scope and whose the process is.
struct Tracing {
    scope: Option<u32>,
    our_uid: u32,
    their_uid: Option<u32>,
}

fn refusal(pid: u32, errno: Errno, tracing: Tracing) -> String {
    let Tracing {
        scope,
        our_uid,
        their_uid,
    } = tracing;
    match (errno, scope) {
        (Errno::EPERM, Some(3)) => format!(
            "the kernel refuses to trace process {pid}: kernel.yama.ptrace_scope is 3, which allows no tracing at all \
             until a reboot; read a core file instead (tokio-async BINARY CORE)"
        ),
        (Errno::EPERM, Some(2)) if our_uid != 0 => format!(
            "the kernel refuses to trace process {pid}: kernel.yama.ptrace_scope is 2, which lets only root (or \
             CAP_SYS_PTRACE) trace; run tokio-async with sudo, or grant it the capability \
             (sudo setcap cap_sys_ptrace+ep $(command -v tokio-async))"
        ),
        (Errno::EPERM, _) if their_uid.is_some_and(|uid| uid != our_uid) && our_uid != 0 => format!(
            "the kernel refuses to trace process {pid}: it runs as uid {}, tokio-async as uid {our_uid}, without \
             CAP_SYS_PTRACE; run tokio-async as that user or with sudo",
            their_uid.unwrap_or_default()
        ),
        (Errno::EPERM, Some(1)) if our_uid != 0 => format!(
            "the kernel refuses to trace process {pid}: kernel.yama.ptrace_scope is 1, which lets a process trace \
             only its own descendants; run tokio-async with sudo, grant it CAP_SYS_PTRACE \
             (sudo setcap cap_sys_ptrace+ep $(command -v tokio-async)), or lower the scope \
             (sudo sysctl kernel.yama.ptrace_scope=0)"
        ),
        (Errno::EPERM, _) => format!(
            "the kernel refuses to trace process {pid} (EPERM): tokio-async lacks CAP_SYS_PTRACE (in a container: \
             run it with --cap-add=SYS_PTRACE), or the process is not dumpable (setuid, or prctl PR_SET_DUMPABLE)"
        ),
        (errno, _) => format!("cannot trace process {pid}: {}", errno.desc()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn why(scope: Option<u32>, our_uid: u32, their_uid: u32) -> String {
        let tracing = Tracing {
            scope,
            our_uid,
            their_uid: Some(their_uid),
        };
        refusal(7, Errno::EPERM, tracing)
    }

    #[test]
    fn each_refusal_names_its_cause_and_fix() {
        assert!(why(Some(3), 0, 0).contains("ptrace_scope is 3, which allows no tracing at all"));
        assert!(
            why(Some(2), 1000, 1000).contains("ptrace_scope is 2")
                && why(Some(2), 1000, 1000).contains("setcap")
        );
        assert!(why(Some(1), 1000, 0).contains("it runs as uid 0, tokio-async as uid 1000"));
        let scope_one = why(Some(1), 1000, 1000);
        assert!(
            scope_one.contains("ptrace_scope is 1")
                && scope_one.contains("sysctl kernel.yama.ptrace_scope=0")
        );
        // Root without the capability (a container), or a process that is not dumpable.
        assert!(why(None, 0, 0).contains("--cap-add=SYS_PTRACE"));
        assert!(why(Some(1), 0, 0).contains("--cap-add=SYS_PTRACE"));
        let other = refusal(
            7,
            Errno::EIO,
            Tracing {
                scope: None,
                our_uid: 0,
                their_uid: None,
            },
        );
        assert_eq!(other, "cannot trace process 7: I/O error");
    }
}
