//! Panics stop at the boundary with the debugger: a call runs under `guarded`, and a
//! panic inside becomes one error line with where it happened and which task was being
//! read. The panic hook that records the place is installed only while a guarded call
//! runs (on any thread), and panics elsewhere in the debugger's process still reach the
//! hook that was there before.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe, PanicHookInfo};
use std::sync::{Arc, Mutex};

use crate::error::{Error, ErrorKind, Result};

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// The hook that was there before the first of the guarded calls running now.
struct Installed {
    calls: usize,
    previous: Option<Arc<Hook>>,
}

static INSTALLED: Mutex<Installed> = Mutex::new(Installed {
    calls: 0,
    previous: None,
});

thread_local! {
    /// Guarded calls running on this thread.
    static GUARDED: Cell<usize> = const { Cell::new(0) };
    /// Where this thread's last guarded panic happened.
    static PANICKED_AT: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn enter() {
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if installed.calls == 0 {
        let previous: Arc<Hook> = Arc::new(std::panic::take_hook());
        let delegate = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            if GUARDED.with(Cell::get) > 0 {
                let place = info
                    .location()
                    .map(|at| format!("{}:{}", at.file(), at.line()));
                PANICKED_AT.with(|at| *at.borrow_mut() = place);
            } else {
                delegate(info);
            }
        }));
        installed.previous = Some(previous);
    }
    installed.calls += 1;
    GUARDED.with(|calls| calls.set(calls.get() + 1));
}

fn leave() {
    GUARDED.with(|calls| calls.set(calls.get().saturating_sub(1)));
    let mut installed = INSTALLED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    installed.calls = installed.calls.saturating_sub(1);
    if installed.calls == 0 {
        // Ours holds the only other reference to the previous hook: drop it first.
        drop(std::panic::take_hook());
        if let Some(previous) = installed.previous.take() {
            match Arc::try_unwrap(previous) {
                Ok(hook) => std::panic::set_hook(hook),
                Err(shared) => std::panic::set_hook(Box::new(move |info| shared(info))),
            }
        }
    }
}

/// A panic while reading a task: its message and the task (`reading_task`).
struct TaskPanic {
    id: u64,
    address: u64,
    message: String,
}

/// Runs `body`, which reads task `id` (its header at `address`): a panic inside carries
/// the task, which `guarded` names in its error.
pub fn reading_task<T>(id: u64, address: u64, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let message = panic_message(&*payload);
            resume_unwind(Box::new(TaskPanic {
                id,
                address,
                message,
            }))
        }
    }
}

/// What a panic's payload says (a task's panic says which task).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(task) = payload.downcast_ref::<TaskPanic>() {
        return format!(
            "while reading task {} ({:#x}): {}",
            task.id, task.address, task.message
        );
    }
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "unknown panic".into())
}

/// A panic caught on a helper thread, for the thread that joins it to carry on.
pub struct CaughtPanic {
    payload: Box<dyn Any + Send>,
    at: Option<String>,
}

/// Runs `body` on a helper thread of a `guarded` call: a panic there is caught quietly (the
/// hook prints nothing), to be resumed by the joining thread with `resume`.
pub fn on_helper_thread<T>(body: impl FnOnce() -> T) -> std::result::Result<T, CaughtPanic> {
    enter();
    let result = catch_unwind(AssertUnwindSafe(body));
    leave();
    result.map_err(|payload| CaughtPanic {
        payload,
        at: PANICKED_AT.with(|at| at.borrow_mut().take()),
    })
}

/// Goes on with a helper thread's panic on this thread, where `guarded` reports it as its
/// own (with the place it happened).
pub fn resume(caught: CaughtPanic) -> ! {
    PANICKED_AT.with(|at| *at.borrow_mut() = caught.at);
    resume_unwind(caught.payload)
}

/// Runs `body`; a panic becomes an `Internal` error naming where it happened and the task
/// being read (`reading_task`).
pub fn guarded<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    enter();
    let result = catch_unwind(AssertUnwindSafe(body));
    leave();
    result.unwrap_or_else(|payload| {
        let at = PANICKED_AT
            .with(|at| at.borrow_mut().take())
            .map(|at| format!(" at {at}"))
            .unwrap_or_default();
        let message = panic_message(&*payload);
        let separator = if payload.is::<TaskPanic>() { " " } else { ": " };
        Err(Error::new(
            ErrorKind::Internal,
            format!("internal error (a bug in tokio-async){at}{separator}{message}"),
        ))
    })
}
