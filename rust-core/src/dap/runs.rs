//! The `async` commands that run the program (`next`, `step`, `finish`, `until-polled`,
//! ...), driven through the adapter's REPL: what the editor's `continue`/`next`/`stepIn`/
//! `stepOut` of a task, or a REPL line, becomes, and how the replies read.
//!
//! An LLDB adapter runs a REPL command synchronously: the debugger's own event loop never
//! sees the stops the command makes (nor says `continued`/`stopped`), and it answers no
//! other request until the command ends. So the proxy says `continued` when a run starts
//! and `stopped` (or `exited`) when it ends, from what the debugger says afterwards
//! (`thread info`, `process status`); and it interrupts a run on `pause` through the
//! script's interrupt FIFO (`TOKIO_ASYNC_INTERRUPT_FIFO`), as Ctrl-C would in LLDB.

use std::collections::VecDeque;

use serde_json::Value;

/// What a thread of the editor's is, for a request that runs the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOn {
    /// A task's thread (the proxy's own): the task `id`.
    Task(u64),
    /// A real thread that runs async code (a task it polls, or its block_on future).
    AsyncThread(u64),
    /// Any other thread: the request is the adapter's.
    Other,
}

/// One debugger command of a run, and how its reply reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Selects the thread or frame the command applies to; no output of its own.
    Select(String),
    /// An `async` command that runs the program; its output is the run's.
    Async(String),
    /// `thread info`: the thread the program stopped in.
    WhereNow,
    /// `process status`: whether the program exited.
    ProcessStatus,
}

impl Step {
    pub fn command(&self) -> &str {
        match self {
            Step::Select(command) | Step::Async(command) => command,
            Step::WhereNow => "thread info",
            Step::ProcessStatus => "process status",
        }
    }
}

/// The commands for the editor's `command` (`continue`, `next`, `stepIn`, `stepOut`) on a
/// thread, or None where it is the adapter's to run.
///
/// On a task's thread, the task is suspended: whichever request, it runs until the task is
/// next polled, which stops where its innermost async fn resumes (the next line that task
/// runs); `stepOut` then finishes that fn. On a real thread running async code, `next`,
/// `stepIn` and `stepOut` follow its task (`async next`, `step`, `finish`) across awaits;
/// its `continue` is the adapter's, and so is any request where the thread's innermost
/// frame is not an async fn's own code.
pub fn plan(command: &str, on: RunOn) -> Option<Vec<Step>> {
    let mut steps = match (command, on) {
        ("continue" | "next" | "stepIn", RunOn::Task(id)) => {
            vec![Step::Async(format!("async until-polled {id}"))]
        }
        ("stepOut", RunOn::Task(id)) => vec![
            Step::Async(format!("async until-polled {id}")),
            Step::Async("async finish".into()),
        ],
        ("next" | "stepIn" | "stepOut", RunOn::AsyncThread(tid)) => {
            // Only in the async fn's own frame: in a function it calls, the adapter's own
            // next and step out are what the editor means.
            let follow = match command {
                "next" => "async next --own-frame",
                "stepIn" => "async step",
                _ => "async finish --own-frame",
            };
            vec![
                Step::Select(format!("thread select -t {tid}")),
                Step::Select("frame select 0".into()),
                Step::Async(follow.into()),
            ]
        }
        _ => return None,
    };
    steps.extend([Step::WhereNow, Step::ProcessStatus]);
    Some(steps)
}

/// The commands for a REPL line `async …`, run in the frame the editor has selected (an
/// adapter's frame id; the proxy's own task frames select none): lldb-dap runs a REPL
/// command in whichever thread its debugger has selected, not in the frame's. A line that
/// `resumes` the program is followed by where it stopped.
pub fn repl_plan(line: &str, adapter_frame: Option<u64>, resumes: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some(frame) = adapter_frame {
        let (thread_index, frame_index) = lldb_dap_frame(frame);
        steps.push(Step::Select(format!("thread select {thread_index}")));
        steps.push(Step::Select(format!("frame select {frame_index}")));
    }
    steps.push(Step::Async(line.to_string()));
    if resumes {
        steps.extend([Step::WhereNow, Step::ProcessStatus]);
    }
    steps
}

/// lldb-dap's frame ids: the thread's index id shifted left by 19, plus the frame's index.
fn lldb_dap_frame(frame_id: u64) -> (u64, u64) {
    const THREAD_INDEX_SHIFT: u32 = 19;
    (
        frame_id >> THREAD_INDEX_SHIFT,
        frame_id & ((1 << THREAD_INDEX_SHIFT) - 1),
    )
}

/// Where the editor's request came from, and so how it is answered.
#[derive(Debug)]
pub enum Origin {
    /// `continue`/`next`/`stepIn`/`stepOut`: answered when the run ends, unless
    /// `answered` (a task's `continue`, answered as it starts).
    Request { request: Value, answered: bool },
    /// A REPL line: answered with the commands' output.
    Repl(Value),
}

/// A run in progress.
#[derive(Debug)]
pub struct Run {
    pub origin: Origin,
    pub steps: VecDeque<Step>,
    /// The step whose reply is awaited.
    pub current: Option<Step>,
    /// Whether a request the async command does not apply to goes to the adapter as it is
    /// (a real thread stopped outside async code).
    pub falls_back: bool,
    /// Whether the commands run the program (else: a report, in the editor's frame).
    pub resumes: bool,
    pub output: String,
    pub reason: &'static str,
    /// What the editor shows for the stop instead of its reason: the glue's error, when a
    /// command ended in one (most refuse before the program runs; the reason is then
    /// `pause`, since no step ended).
    pub description: Option<String>,
    pub thread: Option<u64>,
    pub exit_code: Option<i64>,
}

/// What to do once a step's reply is read.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Send this step.
    Send(Step),
    /// The async command does not apply here: the editor's request goes to the adapter.
    FallBack,
    /// The run is over.
    Done,
}

/// The `async next`/`step`/`finish` errors raised before the program runs: where the
/// selected frame is no coroutine's, or its line awaits no async fn
/// (python/tokio_async_glue/stepping.py says them).
const NOT_HERE: &[&str] = &[
    "the selected frame is in no async fn or block of a task",
    "the selected frame is not an async fn's own code",
    "awaits nothing; `step` steps into calls",
    "which is no async fn; use async next",
];

const GLUE_ERROR: &str = "error: tokio-async: ";

impl Run {
    pub fn new(origin: Origin, steps: Vec<Step>, falls_back: bool, resumes: bool) -> Run {
        Run {
            origin,
            steps: steps.into(),
            current: None,
            falls_back,
            resumes,
            output: String::new(),
            reason: "step",
            description: None,
            thread: None,
            exit_code: None,
        }
    }

    /// The first step to send.
    pub fn start(&mut self) -> Next {
        self.advance()
    }

    fn advance(&mut self) -> Next {
        self.current = self.steps.pop_front();
        match &self.current {
            Some(step) => Next::Send(step.clone()),
            None => Next::Done,
        }
    }

    /// Reads the reply to the current step (the adapter's `evaluate` response).
    pub fn replied(&mut self, response: &Value) -> Next {
        let said = without_echo(response["body"]["result"].as_str().unwrap_or_default());
        let refused = (response["success"] != true).then(|| {
            response["message"]
                .as_str()
                .unwrap_or("refused")
                .to_string()
        });
        match self.current.take() {
            Some(Step::Select(_)) => {
                if let Some(error) =
                    refused.or_else(|| said.contains("error:").then(|| said.trim().to_string()))
                {
                    if self.falls_back {
                        return Next::FallBack;
                    }
                    self.output.push_str(&error);
                    self.output.push('\n');
                    self.skip_async_steps();
                }
            }
            Some(Step::Async(_)) => {
                if self.falls_back && NOT_HERE.iter().any(|marker| said.contains(marker)) {
                    return Next::FallBack;
                }
                self.falls_back = false;
                let text = refused.unwrap_or_else(|| said.to_string());
                self.output.push_str(&text);
                if !text.ends_with('\n') {
                    self.output.push('\n');
                }
                self.description = glue_error(&text).map(str::to_string);
                self.reason = match self.description {
                    Some(_) => "pause",
                    None => stop_reason(&text),
                };
                if self.description.is_some() || text.contains(" ended: ") {
                    self.skip_async_steps();
                }
            }
            Some(Step::WhereNow) => self.thread = thread_id(said),
            Some(Step::ProcessStatus) => self.exit_code = exit_code(said),
            None => return Next::Done,
        }
        self.advance()
    }

    /// An error (or a stop not the run's own) ends the run's commands: where the program
    /// is now is still read.
    fn skip_async_steps(&mut self) {
        self.steps.retain(|step| !matches!(step, Step::Async(_)));
    }
}

/// The REPL's reply without the command line it echoes (`(lldb) async next`).
fn without_echo(result: &str) -> &str {
    match result.split_once('\n') {
        Some((first, rest)) if first.starts_with("(lldb) ") => rest,
        _ => result,
    }
}

/// DAP's stop reason for how a command ended (python/tokio_async_glue/stepping.py's
/// `_not_ours`).
fn stop_reason(said: &str) -> &'static str {
    if said.contains(" interrupted") {
        "pause"
    } else if said.contains("ended: the program stopped at") {
        "breakpoint"
    } else if said.contains("ended: the program received") {
        "exception"
    } else {
        "step"
    }
}

/// The glue's error line in what a command said, without its `error: tokio-async: `.
fn glue_error(said: &str) -> Option<&str> {
    let after = said.split_once(GLUE_ERROR)?.1;
    Some(after.lines().next().unwrap_or_default().trim())
}

/// The tid in `thread info`'s `thread #2: tid = 17687, 0x… …`.
fn thread_id(said: &str) -> Option<u64> {
    let after = said.split_once("tid = ")?.1;
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The status in `process status`'s `Process 123 exited with status = 0 (0x00000000)`.
fn exit_code(said: &str) -> Option<i64> {
    let after = said.split_once("exited with status = ")?.1;
    let number: String = after
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '-')
        .collect();
    number.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(result: &str) -> Value {
        serde_json::json!({"type": "response", "success": true, "command": "evaluate",
            "body": {"result": result}})
    }

    fn request() -> Origin {
        Origin::Request {
            request: serde_json::json!({"seq": 4, "command": "next"}),
            answered: false,
        }
    }

    #[test]
    fn requests_become_the_commands_that_follow_a_task() {
        let commands = |command, on| {
            plan(command, on).map(|steps| {
                steps
                    .iter()
                    .map(|step| step.command().to_string())
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            commands("continue", RunOn::Task(9)).unwrap(),
            ["async until-polled 9", "thread info", "process status"]
        );
        assert_eq!(
            commands("stepOut", RunOn::Task(9)).unwrap(),
            [
                "async until-polled 9",
                "async finish",
                "thread info",
                "process status"
            ]
        );
        assert_eq!(
            commands("stepIn", RunOn::AsyncThread(4242)).unwrap(),
            [
                "thread select -t 4242",
                "frame select 0",
                "async step",
                "thread info",
                "process status"
            ]
        );
        assert_eq!(commands("continue", RunOn::AsyncThread(4242)), None);
        assert_eq!(commands("next", RunOn::Other), None);
        let repl = repl_plan("async until-polled 3", Some((2 << 19) + 5), true);
        let repl: Vec<&str> = repl.iter().map(Step::command).collect();
        assert_eq!(
            repl,
            [
                "thread select 2",
                "frame select 5",
                "async until-polled 3",
                "thread info",
                "process status"
            ]
        );
        let report = repl_plan("async bt", None, false);
        assert_eq!(report, [Step::Async("async bt".into())]);
    }

    #[test]
    fn a_run_reads_where_it_stopped_and_how() {
        let mut run = Run::new(
            request(),
            plan("next", RunOn::AsyncThread(7)).unwrap(),
            true,
            true,
        );
        assert_eq!(
            run.start(),
            Next::Send(Step::Select("thread select -t 7".into()))
        );
        assert_eq!(
            run.replied(&reply("(lldb) thread select -t 7\n* thread #2\n")),
            Next::Send(Step::Select("frame select 0".into()))
        );
        assert_eq!(
            run.replied(&reply("(lldb) frame select 0\nframe #0: …\n")),
            Next::Send(Step::Async("async next --own-frame".into()))
        );
        let said =
            "(lldb) async next\nframe #0: …\ntask 14, async fn app::level3 at src/main.rs:36\n";
        assert_eq!(run.replied(&reply(said)), Next::Send(Step::WhereNow));
        assert_eq!(
            run.replied(&reply(
                "(lldb) thread info\nthread #3: tid = 17687, 0x55 app`f at main.rs:36:6\n"
            )),
            Next::Send(Step::ProcessStatus)
        );
        assert_eq!(
            run.replied(&reply("(lldb) process status\nProcess 17600 stopped\n")),
            Next::Done
        );
        assert_eq!(run.thread, Some(17687));
        assert_eq!(run.exit_code, None);
        assert_eq!(run.reason, "step");
        assert_eq!(
            run.output,
            "frame #0: …\ntask 14, async fn app::level3 at src/main.rs:36\n"
        );
    }

    #[test]
    fn outside_async_code_the_request_is_the_adapters() {
        let mut run = Run::new(
            request(),
            plan("stepIn", RunOn::AsyncThread(7)).unwrap(),
            true,
            true,
        );
        run.start();
        run.replied(&reply("(lldb) thread select -t 7\n"));
        run.replied(&reply("(lldb) frame select 0\n"));
        let said = "(lldb) async step\nerror: tokio-async: line 36 of app::level3 awaits nothing; `step` steps into calls\n";
        assert_eq!(run.replied(&reply(said)), Next::FallBack);
    }

    #[test]
    fn an_error_or_a_foreign_stop_ends_the_commands_but_not_the_reading() {
        let mut run = Run::new(
            request(),
            plan("stepOut", RunOn::Task(3)).unwrap(),
            false,
            true,
        );
        run.start();
        let said = "(lldb) async until-polled 3\n* thread #1 …\nasync until-polled ended: the program stopped at breakpoint 1.1\n";
        assert_eq!(run.replied(&reply(said)), Next::Send(Step::WhereNow));
        assert_eq!(run.reason, "breakpoint");
        run.replied(&reply("thread #1: tid = 100, …"));
        assert_eq!(
            run.replied(&reply("Process 100 exited with status = 3 (0x00000003)")),
            Next::Done
        );
        assert_eq!(run.exit_code, Some(3));
        // Not falling back: a task's own thread has no adapter request to fall back to.
        let mut run = Run::new(
            request(),
            plan("next", RunOn::Task(3)).unwrap(),
            false,
            true,
        );
        run.start();
        let said = "error: tokio-async: the selected frame is in no async fn or block of a task; stop in one first";
        assert_eq!(run.replied(&reply(said)), Next::Send(Step::WhereNow));
        assert!(run.output.contains("stop in one first"));
        // Refused before it ran: the editor shows the error, not a step.
        assert_eq!(run.reason, "pause");
        assert_eq!(
            run.description.as_deref(),
            Some("the selected frame is in no async fn or block of a task; stop in one first")
        );
        let interrupted = "async until-polled interrupted";
        assert_eq!(stop_reason(interrupted), "pause");
    }

    #[test]
    fn the_errors_that_fall_back_are_the_ones_the_glue_says() {
        let glue = include_str!("../../../python/tokio_async_glue/stepping.py");
        for marker in NOT_HERE {
            // The glue formats some of them: compare the words around its `%s`.
            let words = marker.replace("`", "");
            let found = glue.replace('`', "").contains(&words)
                || words
                    .split("; ")
                    .all(|part| glue.replace('`', "").contains(part));
            assert!(found, "stepping.py no longer says {marker:?}");
        }
        for ending in [
            "ended: the program stopped at",
            "ended: the program received",
            " interrupted",
        ] {
            assert!(
                glue.contains(ending),
                "stepping.py no longer says {ending:?}"
            );
        }
    }
}
