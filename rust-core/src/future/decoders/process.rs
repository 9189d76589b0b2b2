//! `process::Child::wait()`: the child's pid, and the pidfd tokio's reaper polls for its
//! exit (Linux 5.3+; older kernels reap on SIGCHLD).

use super::io::fd_of;
use crate::error::Result;
use crate::future::env::async_self;
use crate::future::outcome::{DecodeContext, Decoded, Outcome};
use crate::layouts::tokio_futures as layout;
use crate::model::{ChildWait, Detail};
use crate::std_values;
use crate::value::Value;

pub fn child_wait<'a>(_: &DecodeContext<'a>, value: &Value<'a>) -> Result<Outcome> {
    let child = async_self(value)?;
    let Some(reaper) = std_values::follow(&child, layout::CHILD_REAPER)
        .ok()
        .flatten()
    else {
        // `FusedChild::Done`: the exit status is in; `wait` returns it at once.
        let summary = "waiting for a child process that has exited".to_string();
        let detail = Detail::ChildWait(ChildWait {
            pid: None,
            pidfd: None,
        });
        return Ok(Outcome::Node(Decoded::leaf(detail, summary)));
    };
    let (variant, payload) = reaper.variant()?;
    let inner = std_values::follow(&payload, layout::REAPER_INNER)?;
    let (std_child, pidfd) = match (&inner, variant.as_str()) {
        (Some(inner), layout::PIDFD_REAPER) => (
            Some(inner.field(layout::PIDFD_REAPER_CHILD)?),
            fd_of(&inner.field(layout::PIDFD_REAPER_PIDFD)?).ok(),
        ),
        (Some(inner), _) => (Some(inner.clone()), None),
        (None, _) => (None, None),
    };
    let pid = match std_child {
        Some(std_child) => {
            Some(std_values::at_path(&std_child, layout::STD_CHILD_PID)?.read_uint()?)
        }
        None => None,
    };
    let summary = match (pid, pidfd) {
        (Some(pid), Some(fd)) => format!("waiting for process {pid} to exit (pidfd {fd})"),
        (Some(pid), None) => format!("waiting for process {pid} to exit (SIGCHLD)"),
        (None, _) => "waiting for a child process (its pid is gone)".to_string(),
    };
    Ok(Outcome::Node(Decoded::leaf(
        Detail::ChildWait(ChildWait { pid, pidfd }),
        summary,
    )))
}
