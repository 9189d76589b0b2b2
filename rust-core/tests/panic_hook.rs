//! `guarded` swaps the process's panic hook while a guarded call runs. This test sets a hook
//! of its own, so it runs alone in its own test binary: guarded calls on other tests'
//! threads would swap the hook under it.

use std::panic::catch_unwind;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_async_core::error::ErrorKind;
use tokio_async_core::panics::{guarded, reading_task};

#[test]
fn a_panic_becomes_one_line_and_the_previous_hook_comes_back() {
    static OUTSIDE: AtomicUsize = AtomicUsize::new(0);
    std::panic::set_hook(Box::new(|_| {
        OUTSIDE.fetch_add(1, Ordering::SeqCst);
    }));
    let line = line!() + 1;
    let error = guarded::<()>(|| reading_task(12, 0x5000, || panic!("boom"))).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Internal);
    assert_eq!(
        error.message(),
        format!("internal error (a bug in tokio-async) at {}:{line} while reading task 12 (0x5000): boom", file!())
    );
    // The debugger's own hook saw nothing of it, and sees panics again afterwards.
    assert_eq!(OUTSIDE.load(Ordering::SeqCst), 0);
    let _ = catch_unwind(|| panic!("elsewhere"));
    assert_eq!(OUTSIDE.load(Ordering::SeqCst), 1);
    // A panic outside any task names none.
    let line = line!() + 1;
    let error = guarded::<()>(|| panic!("bang")).unwrap_err();
    assert_eq!(
        error.message(),
        format!(
            "internal error (a bug in tokio-async) at {}:{line}: bang",
            file!()
        )
    );
    drop(std::panic::take_hook());
    assert_eq!(guarded(|| Ok(7)).unwrap(), 7);
}
