//! Panics stop at the boundary with the debugger: a call runs under `guarded`, and a
//! panic inside becomes one error line with where it happened and which task was being
//! read. The panic hook that records the place is installed only while a guarded call
//! runs (on any thread), and panics elsewhere in the debugger's process still reach the
//! hook that was there before.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe, PanicHookInfo};
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

/// Runs `body`; a panic becomes an `Internal` error naming where it happened and the task
/// being read (`budget::note_reading_task`).
pub fn guarded<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    enter();
    let result = catch_unwind(AssertUnwindSafe(body));
    leave();
    result.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        let at = PANICKED_AT
            .with(|at| at.borrow_mut().take())
            .map(|at| format!(" at {at}"))
            .unwrap_or_default();
        let reading = crate::budget::reading_task()
            .map(|(id, address)| format!(" while reading task {id} ({address:#x})"))
            .unwrap_or_default();
        crate::budget::note_reading_task(None);
        Err(Error::new(
            ErrorKind::Internal,
            format!("internal error (a bug in tokio-async){at}{reading}: {message}"),
        ))
    })
}
