//! `tokio-async top`: a live view of every task, with no instrumentation. Each refresh is
//! one read of the program as `tokio-async PID` makes it (one short stop, or none with
//! `--nonblocking`); what the view adds is what refreshes tell together: how long each
//! task has been stuck, how often it was busy. `tasks` holds that model; `screen` draws it
//! and takes the keys.

#[cfg(feature = "cli")]
mod screen;
pub mod tasks;

use std::time::Duration;

use crate::error::Result;
use crate::model::Report;

/// Where the reports come from: a live process, or a core (read once).
pub trait Source {
    /// One refresh: every task of the program now; with the locals each coroutine holds
    /// across its await when `with_locals` (a third of a refresh's cost: read only while
    /// a task view shows them).
    fn read(&mut self, with_locals: bool) -> Result<Refresh>;
    /// `process 1234`, `core FILE`.
    fn name(&self) -> String;
    /// False for a core: one refresh, a still picture.
    fn live(&self) -> bool;
}

/// One refresh's report, and what it cost the program.
pub struct Refresh {
    pub report: Report,
    /// How long the program was stopped for it (none: it was not stopped).
    pub paused: Option<Duration>,
    /// How long the refresh took in all.
    pub took: Duration,
}

/// How often to refresh, and what to start from.
pub struct Options {
    pub interval: Duration,
    /// A saved stop (`--since FILE`): stuck times count from it.
    pub since: Option<crate::history::Snapshot>,
    /// Colours (off with NO_COLOR).
    pub colour: bool,
}

/// The longest share of the time the program may spend stopped by refreshes: the interval
/// stretches to keep it.
pub const MAX_STOPPED_SHARE: f64 = 0.01;

/// The interval after a refresh that stopped the program for `paused`: the one asked, or
/// longer, so that the program is stopped at most `MAX_STOPPED_SHARE` of the time.
pub fn next_interval(asked: Duration, paused: Option<Duration>) -> Duration {
    let stretched = paused.map_or(Duration::ZERO, |paused| paused.div_f64(MAX_STOPPED_SHARE));
    asked.max(stretched)
}

/// Runs the view until `q`, Ctrl-C or `interrupted` (SIGTERM, SIGHUP); the terminal is
/// restored on every way out.
#[cfg(feature = "cli")]
pub fn run(
    source: &mut dyn Source,
    options: Options,
    interrupted: &dyn Fn() -> bool,
) -> Result<()> {
    screen::run(source, options, interrupted)
}

/// Built without the terminal (the Python module): there is no view to run.
#[cfg(not(feature = "cli"))]
pub fn run(_: &mut dyn Source, _: Options, _: &dyn Fn() -> bool) -> Result<()> {
    Err(crate::error::Error::new(
        crate::error::ErrorKind::Usage,
        "this build has no terminal view: top comes with the executable (`make build`)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_stretches_to_keep_the_program_stopped_at_most_one_percent_of_the_time() {
        let second = Duration::from_secs(1);
        assert_eq!(next_interval(second, None), second);
        assert_eq!(
            next_interval(second, Some(Duration::from_millis(5))),
            second
        );
        assert_eq!(
            next_interval(second, Some(Duration::from_millis(25))),
            Duration::from_millis(2500)
        );
    }
}
