//! `tokio-async dap [[--] ADAPTER [ARGS…]]`: a Debug Adapter Protocol proxy that puts a
//! tokio program's tasks into any DAP editor. It starts the real adapter (`lldb-dap-19`,
//! CodeLLDB's) and passes every message through, adding:
//! - the LLDB script loaded into the adapter's debugger (`initCommands` of launch/attach);
//! - at each stop, one thread per task in `threads` (ids from `TASK_THREAD_BASE`, capped
//!   by `tokioAsync.taskLimit`, filtered by `tokioAsync.taskFilter`), read from the
//!   report the debugger's `async bt all full --json` writes;
//! - `stackTrace`, `scopes` and `variables` of those threads: the task's await chain,
//!   the locals each coroutine keeps across its await, those the report does not spell
//!   made the adapter's own values, which it expands (held.rs);
//! - `evaluate` of the `async` commands in the REPL as the debugger's own; those that run
//!   the program, and `continue`/`next`/`stepIn`/`stepOut` of a task (runs.rs), with the
//!   `continued`/`stopped` events the adapter does not send for them;
//! - the custom request `tokioAsync/tasks`: the whole report.
//!
//! Everything added is read-only; a failure to read adds one `output` event and keeps the
//! adapter's own answer.

mod held;
mod runs;
mod tasks;
mod wire;

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use held::HeldVariables;
use runs::{Next, Origin, Run, RunOn, Step};
use tasks::{Report, Thread};
use wire::{read_message, write_message};

/// Task N is thread `TASK_THREAD_BASE + N`: far above any tid, below 2^53.
pub const TASK_THREAD_BASE: u64 = 1 << 40;
/// The thread that says how many tasks the limit left out.
const MORE_TASKS_THREAD: u64 = TASK_THREAD_BASE - 1;
/// Frame ids (and the variables references of their one scope) of a task's await chain:
/// `FRAME_BASE + the task's index in the report * MAX_DEPTH + depth`; the last of a
/// task's ids is its label row in the stack of the thread that polls it.
const FRAME_BASE: u64 = 1 << 42;
const MAX_DEPTH: u64 = tasks::MAX_CHAIN as u64 + 1;
/// Sequence numbers of the requests the proxy sends the adapter itself.
const PROXY_SEQ_BASE: u64 = 1 << 31;
const DEFAULT_TASK_LIMIT: usize = 100;
/// An LLDB adapter's REPL runs a line that starts with this as a debugger command.
const COMMAND_PREFIX: char = '`';

const USAGE: &str =
    "usage: tokio-async dap [[--] ADAPTER [ARGS…]]   (e.g. tokio-async dap -- lldb-dap-19)";

/// Runs the proxy until the editor or the adapter ends; its exit status.
pub fn run(arguments: &[String]) -> Result<i32> {
    let mut adapter: Vec<String> = match arguments.first().map(String::as_str) {
        Some("--") => arguments[1..].to_vec(),
        _ => arguments.to_vec(),
    };
    if adapter.is_empty() {
        adapter.extend(default_adapter());
    }
    let Some((program, adapter_arguments)) = adapter.split_first() else {
        return Err(Error::new(
            ErrorKind::Usage,
            format!(
                "no DAP adapter named, and none of {} is on PATH; {USAGE}",
                DEFAULT_ADAPTERS.join(", ")
            ),
        ));
    };
    let interrupt = InterruptFifo::make();
    let mut adapter_command = Command::new(program);
    if let Some(fifo) = &interrupt {
        adapter_command.env(INTERRUPT_FIFO_VARIABLE, &fifo.0);
    }
    let mut child = adapter_command
        .args(adapter_arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| {
            Error::new(ErrorKind::Usage, format!("cannot start {program}: {error}"))
        })?;
    let proxy = Arc::new(Proxy {
        to_editor: Mutex::new(Box::new(std::io::stdout())),
        to_adapter: Mutex::new(
            child
                .stdin
                .take()
                .map(|input| Box::new(input) as Box<dyn Write + Send>),
        ),
        state: Mutex::new(State::default()),
        interrupt,
    });
    let adapter_output = child.stdout.take();
    let from_adapter = {
        let proxy = proxy.clone();
        std::thread::Builder::new()
            .name("tokio-async-dap".into())
            .spawn(move || {
                if let Some(output) = adapter_output {
                    proxy.pump_adapter(BufReader::new(output));
                }
            })
            .map_err(|error| Error::new(ErrorKind::Internal, error.to_string()))?
    };
    proxy.pump_editor(BufReader::new(std::io::stdin()));
    // The editor is gone: the adapter's input closes, and it ends as it would alone.
    drop(proxy.lock_adapter().take());
    let _ = from_adapter.join();
    Ok(wait_for(&mut child))
}

/// Requests that run the program: the stop they end has no tasks to show any more.
const RUNNING_REQUESTS: &[&str] = &[
    "continue",
    "next",
    "stepIn",
    "stepOut",
    "stepBack",
    "reverseContinue",
    "goto",
    "restart",
];

/// The adapters tried, in order, when none is named.
const DEFAULT_ADAPTERS: &[&str] = &["lldb-dap-19", "lldb-dap"];

fn default_adapter() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    DEFAULT_ADAPTERS
        .iter()
        .find(|name| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
        .map(|name| name.to_string())
}

fn frame_id(task_index: usize, depth: usize) -> u64 {
    FRAME_BASE + task_index as u64 * MAX_DEPTH + depth as u64
}

fn wait_for(child: &mut Child) -> i32 {
    child
        .wait()
        .ok()
        .and_then(|status| status.code())
        .unwrap_or(1)
}

struct Proxy {
    to_editor: Mutex<Box<dyn Write + Send>>,
    to_adapter: Mutex<Option<Box<dyn Write + Send>>>,
    state: Mutex<State>,
    /// How a run is interrupted (the script reads it); None where it could not be made.
    interrupt: Option<InterruptFifo>,
}

const INTERRUPT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);
const INTERRUPT_TRIES: usize = 100;

/// Where the script learns the interrupt FIFO's path.
const INTERRUPT_FIFO_VARIABLE: &str = "TOKIO_ASYNC_INTERRUPT_FIFO";

/// A FIFO the script's thread reads: a byte written asks it to interrupt the program
/// (the adapter answers no `pause` while a REPL command runs). Removed when dropped.
struct InterruptFifo(PathBuf);

impl InterruptFifo {
    fn make() -> Option<InterruptFifo> {
        let path =
            std::env::temp_dir().join(format!("tokio-async-dap-{}.interrupt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        nix::unistd::mkfifo(
            &path,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .ok()
        .map(|()| InterruptFifo(path))
    }

    /// Asks the script to interrupt; false when no script reads the FIFO.
    fn interrupt(&self) -> bool {
        Self::write(&self.0)
    }

    /// Asks again every `INTERRUPT_EVERY` until `over` (at most `INTERRUPT_TRIES` times):
    /// an interrupt that comes before the command has resumed the program is lost.
    fn interrupt_until(&self, over: Arc<AtomicBool>) -> bool {
        if !self.interrupt() {
            return false;
        }
        let path = self.0.clone();
        let _ = std::thread::Builder::new()
            .name("tokio-async-interrupt".into())
            .spawn(move || {
                for _ in 0..INTERRUPT_TRIES {
                    std::thread::sleep(INTERRUPT_EVERY);
                    if over.load(Ordering::Relaxed) || !Self::write(&path) {
                        return;
                    }
                }
            });
        true
    }

    fn write(path: &Path) -> bool {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .and_then(|mut fifo| fifo.write_all(b"i"))
            .is_ok()
    }
}

impl Drop for InterruptFifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[derive(Default)]
struct State {
    task_limit: Option<usize>,
    /// The command's filter words (`--name REGEX`, ...), from `tokioAsync.taskFilter`.
    filter: Vec<String>,
    /// The program launched or attached to, for its compilation directories.
    program: Option<PathBuf>,
    compilation_dirs: Option<Vec<String>>,
    /// Counts the stops: a report is of one.
    stop: u64,
    report: Option<Arc<StopReport>>,
    asked: Option<u64>,
    /// What waits for this stop's report: the adapter's `threads` responses, the
    /// editor's `tokioAsync/tasks` requests.
    waiting: Vec<Waiting>,
    next_seq: u64,
    /// The proxy's own requests in flight: seq -> (stop, report file).
    pending: HashMap<u64, (u64, PathBuf)>,
    /// Whether the program is stopped now (its last event was `stopped`).
    stopped: bool,
    /// The thread the last stop named, for a `continue` sent to a task thread.
    stopped_thread: Option<u64>,
    /// The editor's `stackTrace` requests of threads that poll a task, asked of the adapter
    /// whole: seq -> (task index in the report, startFrame, levels).
    polling_stacks: HashMap<u64, (usize, usize, usize)>,
    /// The `async` command running the program, and the seq of its step in flight.
    run: Option<(Run, u64)>,
    /// Set when that run ends, for the interrupts asked of it.
    run_over: Option<Arc<AtomicBool>>,
    /// Task frames' `variables` requests whose values the adapter is making, by id, and
    /// the proxy's requests for them: seq -> (id, the variable an evaluation is for).
    held: HashMap<u64, HeldVariables>,
    held_requests: HashMap<u64, (u64, Option<usize>)>,
    /// A frame of the adapter's at this stop (the first of a stack it answered), in which
    /// it evaluates the held values' names.
    real_frame: Option<u64>,
}

impl State {
    /// The seq of a request the proxy sends the adapter itself.
    fn proxy_seq(&mut self) -> u64 {
        self.next_seq += 1;
        PROXY_SEQ_BASE + self.next_seq
    }
}

enum Waiting {
    Threads(Value),
    Tasks(Value),
    /// The editor's step of a real thread, which follows its task if it runs one.
    Step(Value),
}

/// One stop's report as read, or why it could not be.
struct StopReport {
    raw: Option<Value>,
    report: Option<Report>,
    /// The tasks shown as threads (indices into `report.tasks`), and how many were not.
    shown: Vec<usize>,
    left_out: usize,
    error: Option<String>,
}

#[derive(Serialize)]
struct Response<'a, T: Serialize> {
    seq: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    request_seq: u64,
    success: bool,
    command: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    body: T,
}

#[derive(Serialize)]
struct Event<T: Serialize> {
    seq: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    event: &'static str,
    body: T,
}

#[derive(Serialize)]
struct Output {
    category: &'static str,
    output: String,
}

#[derive(Serialize)]
struct Evaluate {
    seq: u64,
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'static str,
    arguments: EvaluateArguments,
}

#[derive(Serialize)]
struct EvaluateArguments {
    expression: String,
    context: &'static str,
}

#[derive(Serialize)]
struct Scope {
    name: &'static str,
    #[serde(rename = "variablesReference")]
    variables_reference: u64,
    expensive: bool,
}

fn seq_of(message: &Value) -> u64 {
    message["seq"].as_u64().unwrap_or(0)
}

fn to_value(value: impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

impl Proxy {
    fn lock_state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_adapter(&self) -> std::sync::MutexGuard<'_, Option<Box<dyn Write + Send>>> {
        self.to_adapter
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn to_editor(&self, message: &Value) {
        let mut output = self
            .to_editor
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let _ = write_message(&mut *output, message);
    }

    fn to_adapter(&self, message: &Value) {
        if let Some(input) = self.lock_adapter().as_mut() {
            let _ = write_message(input, message);
        }
    }

    fn respond<T: Serialize>(&self, request: &Value, result: std::result::Result<T, String>) {
        let command = request["command"].as_str().unwrap_or_default();
        let message = match result {
            Ok(body) => to_value(Response {
                seq: 0,
                kind: "response",
                request_seq: seq_of(request),
                success: true,
                command,
                message: None,
                body,
            }),
            Err(message) => to_value(Response {
                seq: 0,
                kind: "response",
                request_seq: seq_of(request),
                success: false,
                command,
                message: Some(message),
                body: Value::Null,
            }),
        };
        self.to_editor(&message);
    }

    /// An event of the proxy's own to the editor.
    fn event(&self, event: &'static str, body: impl Serialize) {
        self.to_editor(&to_value(Event {
            seq: 0,
            kind: "event",
            event,
            body,
        }));
    }

    fn say(&self, line: String) {
        self.event(
            "output",
            Output {
                category: "console",
                output: format!("tokio-async: {line}\n"),
            },
        );
    }

    /// The editor's messages, to the adapter (or answered here).
    fn pump_editor(&self, mut input: impl std::io::BufRead) {
        while let Ok(Some(mut message)) = read_message(&mut input) {
            if message["type"] == "request" && !self.answer_editor(&mut message) {
                continue;
            }
            // An adapter need not say `continued` when asked to run: the stop is over.
            if RUNNING_REQUESTS.contains(&message["command"].as_str().unwrap_or_default()) {
                self.stop_is_over(false);
            }
            self.to_adapter(&message);
        }
    }

    /// A stop ended (or, with `stopped`, began): its report no longer holds.
    fn stop_is_over(&self, stopped: bool) {
        let waiting = {
            let mut state = self.lock_state();
            state.stop += 1;
            state.report = None;
            state.real_frame = None;
            state.asked = None;
            state.stopped = stopped;
            std::mem::take(&mut state.waiting)
        };
        // What waited for the ended stop's report gets the adapter's own answer.
        let none = StopReport::new(Err("the program ran on".into()), 0);
        for waiting in waiting {
            self.deliver(waiting, &none);
        }
    }

    /// Handles one request of the editor's; false when answered here.
    fn answer_editor(&self, request: &mut Value) -> bool {
        let command = request["command"].as_str().unwrap_or_default().to_string();
        let thread = request["arguments"]["threadId"].as_u64();
        let is_task_thread = thread.is_some_and(|id| id >= MORE_TASKS_THREAD);
        match command.as_str() {
            "launch" | "attach" => {
                self.prepare_session(request);
                true
            }
            "stackTrace" if is_task_thread => {
                let result = self.task_stack(request);
                self.respond(request, result);
                false
            }
            "stackTrace" => {
                self.ask_whole_stack_if_polling(request);
                true
            }
            "scopes"
                if request["arguments"]["frameId"]
                    .as_u64()
                    .is_some_and(|id| id >= FRAME_BASE) =>
            {
                self.task_scopes(request);
                false
            }
            "variables"
                if request["arguments"]["variablesReference"]
                    .as_u64()
                    .is_some_and(|id| id >= FRAME_BASE) =>
            {
                match self.task_variables(request) {
                    Ok(held) => self.make_expandable(held),
                    Err(error) => self.respond::<Value>(request, Err(error)),
                }
                false
            }
            "evaluate" => self.evaluate(request),
            "tokioAsync/tasks" => {
                self.when_reported(Waiting::Tasks(request.clone()));
                false
            }
            "pause" if self.lock_state().run.is_some() => {
                self.pause_run(request);
                false
            }
            "disconnect" | "terminate" => {
                self.end_run_first();
                true
            }
            "continue" | "next" | "stepIn" | "stepOut" => {
                // Whether a real thread runs async code is the stop's report's to say: a
                // step asked before it is read waits for it.
                let report = {
                    let state = self.lock_state();
                    let waits = !is_task_thread && command != "continue" && state.stopped;
                    if waits && state.report.is_none() {
                        drop(state);
                        self.when_reported(Waiting::Step(request.clone()));
                        return false;
                    }
                    state.report.clone()
                };
                self.run_request(request, report.as_deref())
            }
            "stepBack" | "restartFrame" | "goto" if is_task_thread => {
                let refusal = format!(
                    "{command} on a task: a task runs on the thread that polls it; select that thread"
                );
                self.respond::<Value>(request, Err(refusal));
                false
            }
            _ => true,
        }
    }

    /// A task frame's one scope: the locals its coroutine keeps across its await.
    fn task_scopes(&self, request: &Value) {
        let frame = request["arguments"]["frameId"].as_u64().unwrap_or_default();
        let scopes = vec![Scope {
            name: "Held across await",
            variables_reference: frame,
            expensive: false,
        }];
        self.respond(request, Ok(ScopesBody { scopes }));
    }

    /// An `async` command in the REPL runs in the editor's frame; a command that runs the
    /// program (async next, sample, until-polled, ...) also says when the program runs and
    /// stops, which the adapter does not for a REPL command. False when answered here.
    fn evaluate(&self, request: &Value) -> bool {
        let Some(expression) = request["arguments"]["expression"].as_str() else {
            return true;
        };
        let trimmed = expression.trim_start().to_string();
        let mut words = trimmed.split_whitespace();
        if words.next() != Some("async") {
            return true;
        }
        let resumes = words
            .next()
            .is_some_and(|view| crate::command::arguments::view_named(view).is_none());
        let frame = request["arguments"]["frameId"]
            .as_u64()
            .filter(|&id| id < FRAME_BASE);
        let steps = runs::repl_plan(&trimmed, frame, resumes);
        self.start_run(Origin::Repl(request.clone()), steps, false, resumes);
        false
    }

    /// The editor's pause while an `async` command runs the program: the script
    /// interrupts it (the adapter answers nothing meanwhile).
    fn pause_run(&self, request: &Value) {
        let over = self
            .lock_state()
            .run_over
            .get_or_insert_with(Default::default)
            .clone();
        let interrupted = self
            .interrupt
            .as_ref()
            .is_some_and(|fifo| fifo.interrupt_until(over));
        let result = match interrupted {
            true => Ok(serde_json::json!({})),
            false => Err(
                "cannot interrupt the running command: the script reads no interrupt FIFO"
                    .to_string(),
            ),
        };
        self.respond(request, result);
    }

    /// Before a disconnect: the adapter answers once the running command ends, so it is
    /// ended first.
    fn end_run_first(&self) {
        let over = {
            let mut state = self.lock_state();
            match state.run.is_some() {
                true => Some(state.run_over.get_or_insert_with(Default::default).clone()),
                false => None,
            }
        };
        if let (Some(over), Some(fifo)) = (over, &self.interrupt) {
            fifo.interrupt_until(over);
        }
    }

    /// The editor's `continue`/`next`/`stepIn`/`stepOut`: a run that follows a task where
    /// it applies (runs.rs), else true (the adapter's to run).
    fn run_request(&self, request: &mut Value, report: Option<&StopReport>) -> bool {
        let command = request["command"].as_str().unwrap_or_default().to_string();
        let on = match request["arguments"]["threadId"].as_u64() {
            Some(MORE_TASKS_THREAD) => {
                let refusal = "this row stands for the tasks left out; pick a task".to_string();
                self.respond::<Value>(request, Err(refusal));
                return false;
            }
            Some(id) if id > MORE_TASKS_THREAD => RunOn::Task(id - TASK_THREAD_BASE),
            Some(tid) if report.is_some_and(|report| report.runs_async_code(tid)) => {
                RunOn::AsyncThread(tid)
            }
            _ => RunOn::Other,
        };
        let Some(steps) = runs::plan(&command, on) else {
            return true;
        };
        // A task's continue is answered as it starts: it may run for long.
        let answered = command == "continue";
        if answered {
            self.respond(
                request,
                Ok(serde_json::json!({"allThreadsContinued": true})),
            );
        }
        let origin = Origin::Request {
            request: request.clone(),
            answered,
        };
        self.start_run(origin, steps, matches!(on, RunOn::AsyncThread(_)), true);
        false
    }

    /// Starts running `steps`, which `resume` the program or not (one already running
    /// refuses the request).
    fn start_run(&self, origin: Origin, steps: Vec<Step>, falls_back: bool, resumes: bool) {
        let mut run = Run::new(origin, steps, falls_back, resumes);
        let Next::Send(step) = run.start() else {
            return;
        };
        // Checked and taken under one lock: a step that waited for the report may start
        // from the adapter's thread.
        let refused = {
            let mut state = self.lock_state();
            match state.run.is_some() {
                true => Some(run),
                false => {
                    let seq = state.proxy_seq();
                    state.run = Some((run, seq));
                    None
                }
            }
        };
        if let Some(run) = refused {
            let refusal = "an async command is running the program; pause it first".to_string();
            self.answer_origin(&run.origin, Err(refusal));
            return;
        }
        if resumes {
            self.stop_is_over(false);
            let thread = self.lock_state().stopped_thread.unwrap_or(0);
            self.event(
                "continued",
                serde_json::json!({"threadId": thread, "allThreadsContinued": true}),
            );
        }
        let seq = self.lock_state().run.as_ref().map(|(_, seq)| *seq);
        if let Some(seq) = seq {
            self.evaluate_in_adapter(seq, step.command());
        }
    }

    /// The reply to a run's step: the next step, the editor's request given to the adapter,
    /// or the stop (or exit) the run ended in.
    fn run_replied(&self, response: &Value) {
        // The run stays in place while a step is sent, so that a pause meanwhile still
        // finds it.
        let (next, over, run) = {
            let mut state = self.lock_state();
            let Some((run, _)) = state.run.as_mut() else {
                return;
            };
            match run.replied(response) {
                Next::Send(step) => {
                    let seq = state.proxy_seq();
                    if let Some((_, current)) = state.run.as_mut() {
                        *current = seq;
                    }
                    drop(state);
                    self.evaluate_in_adapter(seq, step.command());
                    return;
                }
                next => (
                    next,
                    state.run_over.take(),
                    state.run.take().map(|(run, _)| run),
                ),
            }
        };
        if let Some(over) = over {
            over.store(true, Ordering::Relaxed);
        }
        let Some(run) = run else {
            return;
        };
        match next {
            Next::FallBack => {
                if let Origin::Request { request, .. } = &run.origin {
                    self.to_adapter(request);
                }
            }
            _ => self.run_ended(run),
        }
    }

    fn run_ended(&self, run: Run) {
        match &run.origin {
            Origin::Repl(_) => self.answer_origin(&run.origin, Ok(run.output.clone())),
            Origin::Request { .. } => {
                if !run.output.is_empty() {
                    self.event(
                        "output",
                        Output {
                            category: "console",
                            output: run.output.clone(),
                        },
                    );
                }
                self.answer_origin(&run.origin, Ok(String::new()));
            }
        }
        if !run.resumes {
            return;
        }
        if let Some(code) = run.exit_code {
            for (event, body) in [
                ("exited", serde_json::json!({"exitCode": code})),
                ("terminated", serde_json::json!({})),
            ] {
                self.event(event, body);
            }
            return;
        }
        self.stop_is_over(true);
        let thread = {
            let mut state = self.lock_state();
            state.stopped_thread = run.thread.or(state.stopped_thread);
            state.stopped_thread
        };
        let mut stopped = serde_json::json!({
            "reason": run.reason,
            "threadId": thread,
            "allThreadsStopped": true,
            "preserveFocusHint": false,
        });
        if let Some(description) = &run.description {
            stopped["description"] = description.clone().into();
        }
        self.event("stopped", stopped);
    }

    /// Answers where the run came from, unless already answered: a REPL line with the
    /// output, a request with its success.
    fn answer_origin(&self, origin: &Origin, result: std::result::Result<String, String>) {
        match origin {
            Origin::Repl(request) => self.respond(
                request,
                result.map(|output| serde_json::json!({"result": output, "variablesReference": 0})),
            ),
            Origin::Request { request, answered } => {
                if !answered {
                    self.respond(request, result.map(|_| serde_json::json!({})));
                }
            }
        }
    }

    /// Runs `command` in the adapter's debugger (its REPL), as request `seq`.
    fn evaluate_in_adapter(&self, seq: u64, command: &str) {
        self.to_adapter(&to_value(Evaluate {
            seq,
            kind: "request",
            command: "evaluate",
            arguments: EvaluateArguments {
                expression: format!("{COMMAND_PREFIX}{command}"),
                context: "repl",
            },
        }));
    }

    /// Loads the script into the adapter's debugger, and keeps the proxy's own settings.
    fn prepare_session(&self, request: &mut Value) {
        let arguments = &mut request["arguments"];
        if let Some(script) = lldb_script() {
            let import = Value::String(format!("command script import {}", script.display()));
            match arguments["initCommands"].as_array_mut() {
                Some(commands) => commands.insert(0, import),
                None => arguments["initCommands"] = Value::Array(vec![import]),
            }
        } else {
            self.say("cannot find lldb-scripts/tokio_async.py beside the executable: no tasks will be shown (set TOKIO_ASYNC_LLDB_SCRIPT)".into());
        }
        let settings = &arguments["tokioAsync"];
        let program = arguments["program"]
            .as_str()
            .map(PathBuf::from)
            .or_else(|| {
                arguments["pid"]
                    .as_u64()
                    .map(|pid| PathBuf::from(format!("/proc/{pid}/exe")))
            });
        let mut state = self.lock_state();
        state.task_limit = settings["taskLimit"].as_u64().map(|limit| limit as usize);
        state.filter = filter_words(&settings["taskFilter"]);
        state.program = program;
    }

    /// The adapter's messages, to the editor (the `threads` responses with the tasks).
    fn pump_adapter(&self, mut input: impl std::io::BufRead) {
        while let Ok(Some(message)) = read_message(&mut input) {
            match message["type"].as_str() {
                Some("response") => {
                    let request_seq = message["request_seq"].as_u64().unwrap_or_default();
                    if request_seq >= PROXY_SEQ_BASE {
                        if self.lock_state().held_requests.contains_key(&request_seq) {
                            self.held_replied(request_seq, &message);
                            continue;
                        }
                        let is_run =
                            matches!(self.lock_state().run, Some((_, seq)) if seq == request_seq);
                        match is_run {
                            true => self.run_replied(&message),
                            false => self.report_arrived(request_seq, &message),
                        }
                        continue;
                    }
                    if message["command"] == "stackTrace" && message["success"] == true {
                        let first = message["body"]["stackFrames"][0]["id"].as_u64();
                        if let Some(frame) = first.filter(|&frame| frame < FRAME_BASE) {
                            self.lock_state().real_frame.get_or_insert(frame);
                        }
                    }
                    if message["command"] == "threads" && message["success"] == true {
                        self.when_reported(Waiting::Threads(message));
                        continue;
                    }
                    let polling = self.lock_state().polling_stacks.remove(&request_seq);
                    if let (Some(polling), true) = (polling, message["success"] == true) {
                        let mut message = message;
                        self.splice_polled_task(&mut message, polling);
                        self.to_editor(&message);
                        continue;
                    }
                }
                Some("event") => {
                    let event = message["event"].as_str().unwrap_or_default();
                    if matches!(event, "stopped" | "continued" | "exited" | "terminated") {
                        self.stop_is_over(event == "stopped");
                        if event == "stopped" {
                            let mut state = self.lock_state();
                            state.stopped_thread = message["body"]["threadId"]
                                .as_u64()
                                .or(state.stopped_thread);
                        }
                    }
                }
                _ => {}
            }
            self.to_editor(&message);
        }
    }

    /// Runs `waiting` now if this stop's report is read, else when it is (asking for it).
    fn when_reported(&self, waiting: Waiting) {
        let report = {
            let mut state = self.lock_state();
            match state.report.clone() {
                Some(report) => report,
                // Running (or not started): no tasks to read; the adapter's answer as it is.
                None if !state.stopped => {
                    drop(state);
                    let running = StopReport::new(Err("the program is not stopped".into()), 0);
                    self.deliver(waiting, &running);
                    return;
                }
                None => {
                    state.waiting.push(waiting);
                    if state.asked != Some(state.stop) {
                        let stop = state.stop;
                        state.asked = Some(stop);
                        let seq = state.proxy_seq();
                        let file = std::env::temp_dir()
                            .join(format!("tokio-async-dap-{}-{seq}.json", std::process::id()));
                        state.pending.insert(seq, (stop, file.clone()));
                        let mut words = vec![
                            "async".to_string(),
                            "bt".into(),
                            "all".into(),
                            "full".into(),
                            "--json".into(),
                        ];
                        words.extend(state.filter.iter().cloned());
                        words.extend(["--output".into(), file.display().to_string()]);
                        drop(state);
                        self.evaluate_in_adapter(seq, &shell_words(&words));
                    }
                    return;
                }
            }
        };
        self.deliver(waiting, &report);
    }

    fn report_arrived(&self, seq: u64, response: &Value) {
        let (stop, file) = match self.lock_state().pending.remove(&seq) {
            Some(found) => found,
            None => return,
        };
        let read = read_report(response, &file);
        let _ = std::fs::remove_file(&file);
        let (report, waiting) = {
            let mut state = self.lock_state();
            if stop != state.stop {
                return; // the program ran on: the next stop asks again
            }
            let limit = state.task_limit.unwrap_or(DEFAULT_TASK_LIMIT);
            let report = Arc::new(StopReport::new(read, limit));
            state.report = Some(report.clone());
            if state.compilation_dirs.is_none() {
                state.compilation_dirs = Some(
                    state
                        .program
                        .as_deref()
                        .and_then(|program| crate::dwarf::compilation_dirs(program).ok())
                        .unwrap_or_default(),
                );
            }
            (report, std::mem::take(&mut state.waiting))
        };
        if let Some(error) = &report.error {
            self.say(format!("cannot read the tasks at this stop: {error}"));
        }
        for waiting in waiting {
            self.deliver(waiting, &report);
        }
    }

    fn deliver(&self, waiting: Waiting, report: &StopReport) {
        match waiting {
            Waiting::Threads(mut response) => {
                if let Some(threads) = response["body"]["threads"].as_array_mut() {
                    threads.extend(report.threads().into_iter().map(to_value));
                }
                self.to_editor(&response);
            }
            Waiting::Tasks(request) => match &report.raw {
                Some(raw) => self.respond(&request, Ok(raw.clone())),
                None => {
                    let error = report.error.clone().unwrap_or_else(|| "no report".into());
                    self.respond::<Value>(&request, Err(error));
                }
            },
            Waiting::Step(mut request) => {
                if self.run_request(&mut request, Some(report)) {
                    self.to_adapter(&request);
                    self.stop_is_over(false);
                }
            }
        }
    }

    /// A stack of a thread that polls a task (as this stop's report says) is asked of the
    /// adapter whole, so that the task's rows are spliced in and paged consistently.
    fn ask_whole_stack_if_polling(&self, request: &mut Value) {
        let Some(thread) = request["arguments"]["threadId"].as_u64() else {
            return;
        };
        let mut state = self.lock_state();
        let Some(index) = state
            .report
            .as_ref()
            .and_then(|report| report.task_polled_by(thread))
        else {
            return;
        };
        let arguments = &mut request["arguments"];
        let start = arguments["startFrame"].as_u64().unwrap_or(0) as usize;
        let levels = arguments["levels"].as_u64().unwrap_or(0) as usize;
        arguments["startFrame"] = Value::from(0);
        arguments["levels"] = Value::from(0);
        state
            .polling_stacks
            .insert(seq_of(request), (index, start, levels));
    }

    /// Below the frame that polls the task: its label row and what it has suspended.
    fn splice_polled_task(
        &self,
        response: &mut Value,
        (index, start, levels): (usize, usize, usize),
    ) {
        let Ok((report, dirs)) = self.current() else {
            return;
        };
        let Some(task) = report
            .report
            .as_ref()
            .and_then(|read| read.tasks.get(index))
        else {
            return;
        };
        let Some(frames) = response["body"]["stackFrames"].as_array_mut() else {
            return;
        };
        let poll = frames.iter().position(|frame| {
            let name = frame["name"].as_str().unwrap_or_default();
            crate::layouts::tokio::TASK_POLL_FUNCTIONS.contains(&frame_function_path(name).as_str())
        });
        if let Some(poll) = poll {
            let rows = tasks::polled_task_frames(
                task,
                frame_id(index, MAX_DEPTH as usize - 1),
                |depth| frame_id(index, depth),
                |path| absolute_path(path, &dirs),
            );
            let rows: Vec<Value> = rows.into_iter().map(to_value).collect();
            frames.splice(poll + 1..poll + 1, rows);
        }
        let total = frames.len();
        let end = match levels {
            0 => total,
            levels => (start + levels).min(total),
        };
        let page: Vec<Value> = frames.drain(start.min(total)..end).collect();
        response["body"]["stackFrames"] = Value::Array(page);
        response["body"]["totalFrames"] = Value::from(total);
    }

    fn task_stack(&self, request: &Value) -> std::result::Result<StackTraceBody, String> {
        let (report, dirs) = self.current()?;
        let thread = request["arguments"]["threadId"]
            .as_u64()
            .unwrap_or_default();
        let Some((index, task)) = report.task_of_thread(thread) else {
            return Ok(StackTraceBody {
                stack_frames: Vec::new(),
                total_frames: 0,
            });
        };
        let frames = tasks::stack_frames(
            task,
            |depth| frame_id(index, depth),
            |path| absolute_path(path, &dirs),
        );
        let total = frames.len();
        let start = request["arguments"]["startFrame"].as_u64().unwrap_or(0) as usize;
        let levels = match request["arguments"]["levels"].as_u64().unwrap_or(0) as usize {
            0 => total,
            levels => levels,
        };
        Ok(StackTraceBody {
            stack_frames: frames.into_iter().skip(start).take(levels).collect(),
            total_frames: total,
        })
    }

    fn task_variables(&self, request: &Value) -> std::result::Result<HeldVariables, String> {
        let (report, _) = self.current()?;
        let reference = request["arguments"]["variablesReference"]
            .as_u64()
            .and_then(|reference| reference.checked_sub(FRAME_BASE))
            .ok_or_else(|| "no such variables".to_string())?;
        let (index, depth) = (
            (reference / MAX_DEPTH) as usize,
            (reference % MAX_DEPTH) as usize,
        );
        let task = report
            .report
            .as_ref()
            .and_then(|read| read.tasks.get(index));
        let variables = task
            .map(|task| tasks::variables(task, depth))
            .unwrap_or_default();
        let holder = task.and_then(|task| tasks::holder(task, depth));
        Ok(HeldVariables::new(request.clone(), holder, variables))
    }

    /// Answers a task frame's `variables` request once the adapter has made the values
    /// the report does not spell into its own (`held.rs`); at once if there are none.
    fn make_expandable(&self, held: HeldVariables) {
        // The adapter evaluates names in a frame of its own: without one of this stop's,
        // the values stay as the report shows them.
        if held.asked.is_empty() || self.lock_state().real_frame.is_none() {
            let HeldVariables {
                request, variables, ..
            } = held;
            self.respond(&request, Ok(VariablesBody { variables }));
            return;
        }
        let script = held.script();
        let seq = {
            let mut state = self.lock_state();
            let seq = state.proxy_seq();
            state.held.insert(seq, held);
            state.held_requests.insert(seq, (seq, None));
            seq
        };
        self.evaluate_in_adapter(seq, &script);
    }

    /// The adapter's answer to one of the proxy's requests for held values.
    fn held_replied(&self, seq: u64, response: &Value) {
        let mut state = self.lock_state();
        let Some((id, variable)) = state.held_requests.remove(&seq) else {
            return;
        };
        let Some(held) = state.held.get_mut(&id) else {
            return;
        };
        let mut evaluations = Vec::new();
        match variable {
            // The script's answer: the names to evaluate.
            None => {
                let output = response["body"]["result"].as_str().unwrap_or_default();
                let names = held.names(output);
                held.unanswered = names.len();
                for (index, name) in names {
                    evaluations.push((index, name));
                }
            }
            Some(index) => held.evaluated(index, response),
        }
        let asked: Vec<(u64, usize, String)> = evaluations
            .into_iter()
            .map(|(index, name)| (state.proxy_seq(), index, name))
            .collect();
        for (eval_seq, index, _) in &asked {
            state.held_requests.insert(*eval_seq, (id, Some(*index)));
        }
        let frame = state.real_frame;
        let done = state.held.get(&id).is_some_and(|held| held.unanswered == 0);
        let finished = done.then(|| state.held.remove(&id)).flatten();
        drop(state);
        for (eval_seq, _, name) in asked {
            self.to_adapter(&serde_json::json!({
                "seq": eval_seq,
                "type": "request",
                "command": "evaluate",
                "arguments": {"expression": name, "context": "watch", "frameId": frame},
            }));
        }
        if let Some(held) = finished {
            let HeldVariables {
                request, variables, ..
            } = held;
            self.respond(&request, Ok(VariablesBody { variables }));
        }
    }

    fn current(&self) -> std::result::Result<(Arc<StopReport>, Vec<String>), String> {
        let state = self.lock_state();
        match &state.report {
            Some(report) => Ok((
                report.clone(),
                state.compilation_dirs.clone().unwrap_or_default(),
            )),
            None => Err("the tasks of this stop are not read yet: ask for threads first".into()),
        }
    }
}

#[derive(Serialize)]
struct ScopesBody {
    scopes: Vec<Scope>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StackTraceBody {
    stack_frames: Vec<tasks::StackFrame>,
    total_frames: usize,
}

#[derive(Serialize)]
struct VariablesBody {
    variables: Vec<tasks::Variable>,
}

impl StopReport {
    fn new(read: std::result::Result<Value, String>, limit: usize) -> StopReport {
        let raw = match read {
            Ok(raw) => raw,
            Err(error) => {
                return StopReport {
                    raw: None,
                    report: None,
                    shown: Vec::new(),
                    left_out: 0,
                    error: Some(error),
                }
            }
        };
        match serde_json::from_value::<Report>(raw.clone()) {
            Ok(report) => {
                let count = report.tasks.len();
                StopReport {
                    raw: Some(raw),
                    report: Some(report),
                    shown: (0..count.min(limit)).collect(),
                    left_out: count.saturating_sub(limit),
                    error: None,
                }
            }
            Err(error) => StopReport {
                raw: Some(raw),
                report: None,
                shown: Vec::new(),
                left_out: 0,
                error: Some(format!("the report does not read as expected: {error}")),
            },
        }
    }

    fn threads(&self) -> Vec<Thread> {
        let Some(report) = &self.report else {
            return Vec::new();
        };
        let mut threads: Vec<Thread> = self
            .shown
            .iter()
            .map(|&index| {
                let task = &report.tasks[index];
                Thread {
                    id: TASK_THREAD_BASE + task.id,
                    name: tasks::thread_name(task),
                }
            })
            .collect();
        if self.left_out > 0 {
            threads.push(Thread {
                id: MORE_TASKS_THREAD,
                name: format!(
                    "… {} more tasks (tokioAsync.taskLimit, tokioAsync.taskFilter)",
                    self.left_out
                ),
            });
        }
        threads
    }

    /// Whether a real thread runs async code at this stop (a task, or a block_on future).
    fn runs_async_code(&self, tid: u64) -> bool {
        self.report.as_ref().is_some_and(|report| {
            report.threads.iter().any(|thread| {
                thread.tid == tid && (thread.current_task.is_some() || thread.future.is_some())
            })
        })
    }

    /// The index in the report of the task that thread `tid` polls now.
    fn task_polled_by(&self, tid: u64) -> Option<usize> {
        let report = self.report.as_ref()?;
        let task = report
            .threads
            .iter()
            .find(|thread| thread.tid == tid)?
            .current_task?;
        report
            .tasks
            .iter()
            .position(|candidate| candidate.id == task)
    }

    /// The shown task a thread id stands for: (its index in the report, the task).
    fn task_of_thread(&self, thread: u64) -> Option<(usize, &tasks::Task)> {
        let report = self.report.as_ref()?;
        let id = thread.checked_sub(TASK_THREAD_BASE)?;
        self.shown
            .iter()
            .enumerate()
            .find(|(_, &index)| report.tasks[index].id == id)
            .map(|(_, &index)| (index, &report.tasks[index]))
    }
}

/// The report the debugger wrote for the proxy's `evaluate`, or the one line of why not.
fn read_report(response: &Value, file: &Path) -> std::result::Result<Value, String> {
    if response["success"] != true {
        return Err(response["message"]
            .as_str()
            .unwrap_or("the debugger refused")
            .to_string());
    }
    let text = std::fs::read(file).map_err(|_| {
        // The command said why in its output (the REPL's echo first).
        let said = response["body"]["result"].as_str().unwrap_or_default();
        said.lines()
            .find(|line| line.contains("tokio-async:"))
            .unwrap_or(said.lines().last().unwrap_or("no report written"))
            .trim()
            .to_string()
    })?;
    serde_json::from_slice(&text).map_err(|error| format!("the report is no JSON: {error}"))
}

/// The function path of an LLDB frame name, without generic arguments or symbol hash:
/// `tokio::runtime::task::harness::Harness$LT$T$C$S$GT$::poll::h0123456789abcdef` (legacy
/// mangling, as demangled without its escapes) and `…::Harness<T,S>::poll` both give
/// `tokio::runtime::task::harness::Harness::poll`.
fn frame_function_path(name: &str) -> String {
    let unescaped = name
        .replace("$LT$", "<")
        .replace("$GT$", ">")
        .replace("$C$", ",")
        .replace("$u20$", " ")
        .replace("..", "::");
    let without_hash = match unescaped.rsplit_once("::h") {
        Some((path, hash)) if hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            path
        }
        _ => unescaped.as_str(),
    };
    crate::stack_view::without_generics(without_hash)
}

/// `tokioAsync.taskFilter` ({name, state, waitingOn}) as the command's filter words.
fn filter_words(filter: &Value) -> Vec<String> {
    let mut words = Vec::new();
    for (key, flag) in [
        ("name", "--name"),
        ("state", "--state"),
        ("waitingOn", "--waiting-on"),
    ] {
        if let Some(value) = filter[key].as_str() {
            words.extend([flag.to_string(), value.to_string()]);
        }
    }
    words
}

/// Words quoted as a shell reads them (the glue splits commands with `shlex`).
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|word| {
            if !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=".contains(c))
            {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A source path made absolute: DWARF gives the user's own files relative to a unit's
/// compilation directory; the first directory that holds the file is taken.
fn absolute_path(path: &str, compilation_dirs: &[String]) -> String {
    if Path::new(path).is_absolute() {
        return path.to_string();
    }
    compilation_dirs
        .iter()
        .map(|dir| Path::new(dir).join(path))
        .find(|joined| joined.exists())
        .map(|joined| joined.display().to_string())
        .unwrap_or_else(|| path.to_string())
}

/// The LLDB script: `TOKIO_ASYNC_LLDB_SCRIPT`, else beside the executable in a checkout
/// (`target/release/tokio-async`) or an install (`INSTALL_DIR/bin`).
fn lldb_script() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TOKIO_ASYNC_LLDB_SCRIPT") {
        return Some(PathBuf::from(path));
    }
    let executable = std::env::current_exe().ok()?;
    executable
        .ancestors()
        .skip(1)
        .take(4)
        .map(|dir| dir.join("lldb-scripts").join("tokio_async.py"))
        .find(|script| script.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test reads back: what the proxy sent one side.
    #[derive(Clone, Default)]
    struct Sent(Arc<Mutex<Vec<u8>>>);

    impl Write for Sent {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Sent {
        fn take(&self) -> Vec<Value> {
            let bytes = std::mem::take(&mut *self.0.lock().unwrap());
            let mut input = std::io::Cursor::new(bytes);
            std::iter::from_fn(|| read_message(&mut input).unwrap()).collect()
        }
    }

    fn message(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    const THREADS: &str = r#"{"seq": 0, "type": "response", "request_seq": 5, "success": true,
        "command": "threads", "body": {"threads": [{"id": 7, "name": "main"}]}}"#;

    #[test]
    fn threads_get_the_tasks_of_a_stop_and_never_wait_past_it() {
        let (editor, adapter) = (Sent::default(), Sent::default());
        let proxy = Proxy {
            to_editor: Mutex::new(Box::new(editor.clone())),
            to_adapter: Mutex::new(Some(Box::new(adapter.clone()))),
            state: Mutex::new(State::default()),
            interrupt: None,
        };
        let feed = |text: &str| proxy.pump_adapter(std::io::Cursor::new(framed(text)));
        // Running: the adapter's answer as it is, and nothing asked of it.
        feed(THREADS);
        assert_eq!(editor.take(), vec![message(THREADS)]);
        assert!(adapter.take().is_empty());
        // Stopped: the answer waits for the report the debugger is asked to write.
        feed(r#"{"seq": 0, "type": "event", "event": "stopped", "body": {"threadId": 7}}"#);
        feed(THREADS);
        assert_eq!(editor.take().len(), 1); // the stopped event only
        let [evaluate] = adapter.take().try_into().unwrap();
        let expression = evaluate["arguments"]["expression"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            expression.starts_with("`async bt all full --json --output "),
            "{expression}"
        );
        let file = expression.rsplit(' ').next().unwrap().to_string();
        std::fs::write(
            &file,
            r#"{"tasks": [{"id": 3, "state": "idle", "root": {"kind": "sleep", "type": "Sleep", "summary": "Sleep until +1s"}}]}"#,
        )
        .unwrap();
        feed(&format!(
            r#"{{"seq": 0, "type": "response", "request_seq": {}, "success": true, "command": "evaluate", "body": {{"result": ""}}}}"#,
            evaluate["seq"]
        ));
        let [threads] = editor.take().try_into().unwrap();
        let names: Vec<&str> = threads["body"]["threads"]
            .as_array()
            .unwrap()
            .iter()
            .map(|thread| thread["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["main", "task 3 · Sleep · Sleep until +1s"]);
        assert!(!Path::new(&file).exists());
        // A stop that ends before its report arrives hands back what waited for it.
        feed(r#"{"seq": 0, "type": "event", "event": "stopped", "body": {"threadId": 7}}"#);
        feed(THREADS);
        assert_eq!(adapter.take().len(), 1);
        feed(r#"{"seq": 0, "type": "event", "event": "continued", "body": {"threadId": 7}}"#);
        let sent = editor.take();
        assert!(sent.contains(&message(THREADS)), "{sent:?}");
    }

    /// A proxy at a stop whose report says thread 7 polls task 3.
    fn stopped_in_task_3() -> (Proxy, Sent, Sent) {
        let (editor, adapter) = (Sent::default(), Sent::default());
        let proxy = Proxy {
            to_editor: Mutex::new(Box::new(editor.clone())),
            to_adapter: Mutex::new(Some(Box::new(adapter.clone()))),
            state: Mutex::new(State::default()),
            interrupt: None,
        };
        let raw = serde_json::json!({
            "tasks": [{"id": 3, "state": "running", "root": {"kind": "async_fn", "type": "T"}}],
            "threads": [{"tid": 7, "current_task": 3, "future": {"kind": "async_fn"}}]});
        {
            let mut state = proxy.lock_state();
            state.stopped = true;
            state.stopped_thread = Some(7);
            state.report = Some(Arc::new(StopReport::new(Ok(raw), 100)));
        }
        (proxy, editor, adapter)
    }

    /// The adapter's reply to the proxy's one evaluate in flight, saying `result`.
    fn reply(proxy: &Proxy, adapter: &Sent, result: &str) -> String {
        let [evaluate] = adapter.take().try_into().unwrap();
        let reply = serde_json::json!({"seq": 0, "type": "response", "command": "evaluate",
            "request_seq": evaluate["seq"], "success": true, "body": {"result": result}});
        proxy.pump_adapter(std::io::Cursor::new(framed(&reply.to_string())));
        evaluate["arguments"]["expression"]
            .as_str()
            .unwrap()
            .to_string()
    }

    #[test]
    fn a_step_of_a_thread_in_a_task_follows_it_and_says_where_it_stopped() {
        let (proxy, editor, adapter) = stopped_in_task_3();
        let next =
            r#"{"seq": 9, "type": "request", "command": "next", "arguments": {"threadId": 7}}"#;
        proxy.pump_editor(std::io::Cursor::new(framed(next)));
        let [continued] = editor.take().try_into().unwrap();
        assert_eq!(continued["event"], "continued");
        assert_eq!(reply(&proxy, &adapter, ""), "`thread select -t 7");
        assert_eq!(reply(&proxy, &adapter, ""), "`frame select 0");
        // A pause meanwhile: no FIFO here to interrupt through, which it says.
        let pause =
            r#"{"seq": 10, "type": "request", "command": "pause", "arguments": {"threadId": 7}}"#;
        proxy.pump_editor(std::io::Cursor::new(framed(pause)));
        let [refused] = editor.take().try_into().unwrap();
        assert_eq!(
            (
                refused["request_seq"].as_u64(),
                refused["success"].as_bool()
            ),
            (Some(10), Some(false))
        );
        let said = "(lldb) async next --own-frame\nframe #0: …\ntask 3, async fn app::f at src/main.rs:9\n";
        assert_eq!(reply(&proxy, &adapter, said), "`async next --own-frame");
        assert_eq!(
            reply(&proxy, &adapter, "thread #2: tid = 8, 0x55 app`f"),
            "`thread info"
        );
        assert_eq!(
            reply(&proxy, &adapter, "Process 1 stopped"),
            "`process status"
        );
        let [output, answer, stopped] = editor.take().try_into().unwrap();
        assert_eq!(
            output["body"]["output"],
            "frame #0: …\ntask 3, async fn app::f at src/main.rs:9\n"
        );
        assert_eq!(
            (answer["request_seq"].as_u64(), answer["success"].as_bool()),
            (Some(9), Some(true))
        );
        assert_eq!(stopped["event"], "stopped");
        assert_eq!(stopped["body"]["threadId"], 8);
        assert_eq!(stopped["body"]["reason"], "step");
        assert!(proxy.lock_state().run.is_none());
    }

    #[test]
    fn a_step_outside_async_code_is_the_adapters_own() {
        let (proxy, editor, adapter) = stopped_in_task_3();
        let step_in =
            r#"{"seq": 9, "type": "request", "command": "stepIn", "arguments": {"threadId": 7}}"#;
        proxy.pump_editor(std::io::Cursor::new(framed(step_in)));
        editor.take();
        reply(&proxy, &adapter, "");
        reply(&proxy, &adapter, "");
        let said = "(lldb) async step\nerror: tokio-async: line 36 of app::f awaits nothing; `step` steps into calls\n";
        assert_eq!(reply(&proxy, &adapter, said), "`async step");
        // The editor's own request goes to the adapter, which answers it.
        let [forwarded] = adapter.take().try_into().unwrap();
        assert_eq!(forwarded, message(step_in));
        assert!(editor.take().is_empty());
        // A thread running no async code: the adapter's at once.
        let (proxy, _, adapter) = stopped_in_task_3();
        let other =
            r#"{"seq": 4, "type": "request", "command": "next", "arguments": {"threadId": 99}}"#;
        proxy.pump_editor(std::io::Cursor::new(framed(other)));
        assert_eq!(adapter.take(), vec![message(other)]);
    }

    fn framed(text: &str) -> Vec<u8> {
        let mut bytes = Vec::new();
        write_message(&mut bytes, &message(text)).unwrap();
        bytes
    }

    #[test]
    fn lldb_frame_names_read_as_function_paths() {
        assert_eq!(
            frame_function_path(
                "tokio::runtime::task::harness::Harness$LT$T$C$S$GT$::poll::h0123456789abcdef"
            ),
            "tokio::runtime::task::harness::Harness::poll"
        );
        assert_eq!(
            frame_function_path("tokio::runtime::task::raw::poll<F, S>"),
            "tokio::runtime::task::raw::poll"
        );
        assert_eq!(frame_function_path("main"), "main");
    }

    #[test]
    fn filters_become_the_commands_words_quoted_as_a_shell_reads_them() {
        let filter: Value =
            serde_json::from_str(r#"{"name": "handler s", "state": "idle"}"#).unwrap();
        let words = filter_words(&filter);
        assert_eq!(shell_words(&words), "--name 'handler s' --state idle");
        assert_eq!(shell_words(&["it's".to_string()]), r"'it'\''s'");
    }

    #[test]
    fn relative_paths_are_found_under_a_compilation_directory() {
        let dir = std::env::temp_dir().join(format!("tokio-async-dap-test-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/main.rs"), "").unwrap();
        let dirs = vec!["/nonexistent".to_string(), dir.display().to_string()];
        assert_eq!(
            absolute_path("src/main.rs", &dirs),
            dir.join("src/main.rs").display().to_string()
        );
        assert_eq!(absolute_path("/abs/x.rs", &dirs), "/abs/x.rs");
        assert_eq!(absolute_path("src/other.rs", &dirs), "src/other.rs");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_limit_leaves_a_line_saying_how_many_more() {
        let raw: Value = serde_json::from_str(
            r#"{"tasks": [
                {"id": 1, "state": "idle", "root": {"kind": "sleep", "type": "Sleep", "summary": "Sleep until +5s"}},
                {"id": 2, "state": "idle", "root": {"kind": "sleep", "type": "Sleep", "summary": "Sleep until +6s"}}]}"#,
        )
        .unwrap();
        let report = StopReport::new(Ok(raw), 1);
        let names: Vec<(u64, String)> = report
            .threads()
            .into_iter()
            .map(|thread| (thread.id, thread.name))
            .collect();
        assert_eq!(
            names,
            vec![
                (
                    TASK_THREAD_BASE + 1,
                    "task 1 · Sleep · Sleep until +5s".to_string()
                ),
                (
                    MORE_TASKS_THREAD,
                    "… 1 more tasks (tokioAsync.taskLimit, tokioAsync.taskFilter)".to_string()
                ),
            ]
        );
        assert!(report.task_of_thread(TASK_THREAD_BASE + 2).is_none());
    }
}
