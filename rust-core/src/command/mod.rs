//! One report command (`backtrace`, `tasks`, `task N`, `waits`, `diff`) from its request
//! to its output, the same for the debuggers' glue and for the `tokio-async` executable:
//! `Prepared::new` checks what needs no memory (filters, `--since`, the stop before),
//! `read` reads the stop (the only part that needs the program stopped), `write` compares
//! and renders it.

pub mod arguments;
pub mod run_arguments;

use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;

use crate::budget::{Budget, InterruptCheck, Limits};
use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::history::{self, ProcessKey, Snapshot};
use crate::inspect::{self, Inspection, ReadStop, StopClock, ThreadInput};
use crate::memory::Memory;
use crate::model::{ClockSource, Diff, Report, ReportError, StackSource, TakenAt};
use crate::output::{self, Format};
use crate::render::{Style, TextOptions, View};
use crate::selection::TaskFilter;

/// What a command asks.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Command {
    /// The threads of the stop, with their frames (`inspect::ThreadInput`).
    pub threads: Vec<ThreadInput>,
    /// Every task, not only those running now.
    #[serde(default)]
    pub all: bool,
    /// The locals each suspended coroutine keeps (`full`).
    #[serde(default)]
    pub full: bool,
    /// Which tasks to show.
    #[serde(default)]
    pub filter: TaskFilter,
    /// Merge tasks of the same shape.
    #[serde(default)]
    pub group: bool,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub view: View,
    /// JSON instead of text.
    #[serde(default)]
    pub json: bool,
    /// Say before the report how the core unwound the stacks and where one ended short
    /// (the executable's `--verbose` says it on its own).
    #[serde(default)]
    pub verbose: bool,
    /// Write the report to this file and return one line saying so.
    #[serde(default)]
    pub output: Option<PathBuf>,
    /// Colours for text; none when colour is off.
    #[serde(default)]
    pub style: Option<Style>,
    /// `diff --since FILE`: a saved `--json` report to compare with.
    #[serde(default)]
    pub since: Option<PathBuf>,
    /// What unwound `threads`' stacks, for the report.
    #[serde(skip)]
    pub stack_source: Option<StackSource>,
}

/// The stopped program: where the executable was loaded, whether it is a live process
/// here or a core file, when it stopped, and what names it among others.
#[derive(Default)]
pub struct Stop {
    pub load_bias: u64,
    pub live_pid: Option<u32>,
    pub core_path: Option<PathBuf>,
    /// When the program was seen to stop: (Unix seconds, CLOCK_MONOTONIC seconds, how).
    pub stop_clock: Option<(f64, f64, ClockSource)>,
    /// `pid 1234`, `core /tmp/core`: the snapshots of its stops are kept under it.
    pub target: Option<String>,
    /// What changes when the memory may have (the debugger's stop key: the program ran,
    /// or memory or registers were written); `None` where that cannot be told.
    pub memory_key: Option<String>,
    /// What `diff` without an earlier stop tells the user to do.
    pub how_to_diff: &'static str,
}

/// `diff` without an earlier stop, in a debugger.
pub const HOW_TO_DIFF_IN_A_DEBUGGER: &str =
    "let the program run, stop it again and run `async diff` \
     (or compare with a saved report: --since FILE.json)";

impl Stop {
    /// When the program stopped: a core's own time, else when it was seen to stop.
    pub fn clock(&self) -> StopClock {
        if let Some(path) = &self.core_path {
            return StopClock {
                taken_at: crate::core_file::taken_at(path),
                monotonic: None,
            };
        }
        let Some((unix_secs, monotonic, source)) = self.stop_clock else {
            return StopClock::default();
        };
        let whole = monotonic.trunc();
        StopClock {
            taken_at: Some(TakenAt { unix_secs, source }),
            // Only this machine's clock is the process's.
            monotonic: self
                .live_pid
                .map(|_| (whole as i64, ((monotonic - whole) * 1e9) as u32)),
        }
    }

    /// Under what this process's snapshots are kept, the stop before the one at `now`, and
    /// the one at `now` where an earlier command kept it.
    pub fn history(&self, debug: &DebugInfo, now: Option<TakenAt>) -> History {
        let key = self.target.clone().map(|target| ProcessKey {
            target,
            build_id: debug.build_id(),
        });
        let previous = key
            .as_ref()
            .and_then(|key| history::store::previous(key, now));
        let this_stop = key
            .as_ref()
            .and_then(|key| history::store::this_stop(key, now, self.memory_key.as_deref()));
        History {
            key,
            previous,
            this_stop,
        }
    }
}

/// What is kept of a process's stops (`history::store`), as a command at a stop finds it.
pub struct History {
    /// Under what its snapshots are kept.
    pub key: Option<ProcessKey>,
    /// The snapshot of the stop before this one.
    pub previous: Option<Arc<Snapshot>>,
    /// This stop's own, where an earlier command here took it.
    pub this_stop: Option<Arc<Snapshot>>,
}

/// What `Prepared::read_memory` read, waiting for `Prepared::analyse`.
pub struct ReadMemory<'i> {
    stop: ReadStop,
    budget: Budget<'i>,
    memory_source: &'static str,
}

/// A command checked and ready to read a stop.
pub struct Prepared {
    request: inspect::Request,
    view: View,
    json: bool,
    full: bool,
    output: Option<PathBuf>,
    style: Option<Style>,
    since: Option<(Snapshot, PathBuf)>,
    key: Option<ProcessKey>,
    previous: Option<Arc<Snapshot>>,
    /// The memory this stop's snapshot is marked from, where it counts from the stop kept
    /// before this one (not a saved report): `history::store::keep`.
    of_memory: Option<String>,
    truncated: Option<String>,
    how_to_diff: &'static str,
    stack_source: Option<StackSource>,
}

impl Prepared {
    pub fn new(debug: &DebugInfo, stop: &Stop, command: Command) -> Result<Prepared> {
        let diffing = command.view == View::Diff;
        let clock = stop.clock();
        let History {
            key,
            previous: kept,
            this_stop,
        } = stop.history(debug, clock.taken_at);
        let since = match command.since {
            Some(path) => Some((history::saved::snapshot_from_file(&path)?, path)),
            None => None,
        };
        // Outside `diff`, a saved report stands for the stop before this one (what
        // `--stuck-for` and each task's `since` count from).
        let (since, previous, of_memory) = match (since, diffing) {
            (Some((saved, _)), false) => (None, Some(Arc::new(saved)), None),
            (since, _) => (since, kept, stop.memory_key.clone()),
        };
        Ok(Prepared {
            request: inspect::Request {
                threads: command.threads,
                all: command.all || diffing,
                live_pid: stop.live_pid,
                locals: command.full,
                filter: command.filter,
                group: command.group,
                // As text, `--group` prints the groups in place of the tasks.
                only_groups: command.group
                    && !command.json
                    && matches!(command.view, View::Backtrace | View::Tasks),
                wait_edges: command.view == View::Waits,
                limits: command.limits,
                clock,
                previous: previous.clone(),
                // Counted from a saved report, this stop's snapshot differs from the one kept.
                this_stop: this_stop.filter(|_| of_memory.is_some()),
                snapshot: diffing || previous.is_some() || key.is_some(),
            },
            view: command.view,
            json: command.json,
            full: command.full,
            output: command.output,
            style: command.style,
            since,
            key,
            previous,
            of_memory,
            // A truncated core explains every read that fails: say so first.
            truncated: stop
                .core_path
                .as_deref()
                .and_then(crate::core_file::truncation_note),
            how_to_diff: if stop.how_to_diff.is_empty() {
                HOW_TO_DIFF_IN_A_DEBUGGER
            } else {
                stop.how_to_diff
            },
            stack_source: command.stack_source,
        })
    }

    /// Reads the stop (`memory_source`: `process`, `core_file` or `debugger`, for the
    /// report). `interrupted` is polled every few milliseconds.
    pub fn read(
        &self,
        debug: &DebugInfo,
        load_bias: u64,
        memory: &dyn Memory,
        memory_source: &'static str,
        interrupted: Option<&InterruptCheck<'_>>,
    ) -> Result<Inspection> {
        let read = self.read_memory(debug, load_bias, memory, memory_source, interrupted)?;
        self.analyse(debug, read)
    }

    /// The first half of `read`: all it reads of `memory`, which the caller may then let go.
    pub fn read_memory<'i>(
        &self,
        debug: &DebugInfo,
        load_bias: u64,
        memory: &dyn Memory,
        memory_source: &'static str,
        interrupted: Option<&'i InterruptCheck<'i>>,
    ) -> Result<ReadMemory<'i>> {
        let budget = Budget::new(self.request.limits, interrupted);
        let stop = inspect::read_stop(debug, memory, load_bias, &self.request, &budget)
            .map_err(|error| self.with_truncation(error))?;
        Ok(ReadMemory {
            stop,
            budget,
            memory_source,
        })
    }

    /// The second half of `read`: what was read, linked, analysed and selected.
    pub fn analyse(&self, debug: &DebugInfo, read: ReadMemory<'_>) -> Result<Inspection> {
        let ReadMemory {
            stop,
            budget,
            memory_source,
        } = read;
        let mut done = inspect::analyse_stop(stop, debug, &self.request, &budget)
            .map_err(|error| self.with_truncation(error))?;
        done.report.memory_source = Some(memory_source);
        done.report.stack_source = self.stack_source;
        Ok(done)
    }

    /// An error, saying where the command's output was cut short.
    fn with_truncation(&self, error: Error) -> Error {
        match &self.truncated {
            Some(note) => error.with_cause_note(format!("; {note}")),
            None => error,
        }
    }

    /// The command's output from what `read` read: the report as text or JSON, or the one
    /// line saying where it was written. Keeps the stop's snapshot for the next one.
    pub fn write(self, inspection: Inspection) -> Result<String> {
        self.write_keeping(inspection).map(|(output, _)| output)
    }

    /// `write`, handing the report back: the executable, which exits next, leaves its
    /// million nodes to the exit rather than free them one by one.
    pub fn write_keeping(self, inspection: Inspection) -> Result<(String, Report)> {
        let Inspection {
            mut report,
            snapshot,
        } = inspection;
        let diff = (self.view == View::Diff).then(|| {
            compare(
                &report,
                snapshot.as_deref(),
                self.previous.as_deref(),
                self.since,
                self.how_to_diff,
            )
        });
        // Kept even when there is nothing to compare with yet: the next stop has this one.
        if let (Some(key), Some(snapshot)) = (self.key, snapshot) {
            history::store::keep(key, snapshot, self.of_memory);
        }
        report.diff = diff.transpose()?;
        if let Some(note) = self.truncated {
            // Every read past the core's end fails as memory does.
            report
                .errors
                .insert(0, ReportError::new(ErrorKind::Memory, note));
        }
        let format = match self.json {
            true => Format::Json(self.view),
            // No colour in a file.
            false => Format::Text(TextOptions {
                locals: self.full,
                view: self.view,
                style: self
                    .style
                    .filter(|_| self.output.is_none())
                    .unwrap_or_default(),
            }),
        };
        let output = match &self.output {
            Some(path) => output::to_file(&report, &format, path),
            None => output::to_string(&report, &format),
        }?;
        Ok((output, report))
    }
}

/// `diff`: this stop against the saved report (`since`) or the previous stop.
fn compare(
    report: &Report,
    now: Option<&Snapshot>,
    previous: Option<&Snapshot>,
    since: Option<(Snapshot, PathBuf)>,
    how_to_diff: &str,
) -> Result<Diff> {
    let Some(now) = now else {
        return Err(Error::new(
            ErrorKind::Budget,
            "async diff: the walk did not reach every task (see its budget); nothing to compare",
        ));
    };
    match (since, previous) {
        (Some((saved, path)), _) => {
            let after = Snapshot::of(report, Some(&saved));
            Ok(history::diff(&saved, &after, path.display().to_string()))
        }
        (None, Some(previous)) => Ok(history::diff(
            previous,
            now,
            "the previous stop".to_string(),
        )),
        _ => Err(Error::new(
            ErrorKind::Usage,
            format!("async diff: no earlier stop of this program is known; this one is kept now: {how_to_diff}"),
        )),
    }
}
