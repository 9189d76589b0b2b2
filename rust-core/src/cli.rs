//! The `tokio-async` executable: the debuggers' report commands without a debugger, for
//! production hosts and crash pipelines.
//!
//! - `tokio-async PID [COMMAND]`: a live process, stopped (ptrace) only while its registers
//!   and writable memory are copied (`native::memory_copy`), then let go and read from the
//!   copy; `--in-place` reads it stopped, `--nonblocking` without stopping it;
//! - `tokio-async BINARY CORE [COMMAND]`: a core file (the kernel's or `gcore`'s);
//! - `tokio-async BINARY CORE... --output-dir DIR`: many cores at once, in parallel, one
//!   report each in DIR and a summary line each on stdout.
//!
//! COMMAND is what follows `async` in the debuggers (`command::arguments`); none is
//! `backtrace all`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::command::{arguments, Command, Prepared, Stop};
use crate::core_file::CoreFileMemory;
use crate::dwarf::DebugInfo;
use crate::error::{Error, ErrorKind, Result};
use crate::format::thousands;
use crate::inspect::Inspection;
use crate::memory::{Memory, PageCache, ProcessMemory};
use crate::model::{ClockSource, StackSource};
use crate::native::core_notes::CoreNotes;
use crate::native::memory_copy::{CopyRoom, MemoryCopy};
use crate::native::modules::Modules;
use crate::native::registers::{Registers, RETURN_ADDRESS, STACK_POINTER};
use crate::native::{self, proc, ptrace, NativeThread, AT_ENTRY, AT_SYSINFO_EHDR};
use crate::panics::guarded;
use crate::render::{Style, View};

const USAGE: &str = "usage: tokio-async PID [COMMAND] [--verbose] [--nonblocking | --in-place]
       tokio-async BINARY CORE [COMMAND]
       tokio-async BINARY CORE... --output-dir DIR [--json]
       tokio-async dap [--] ADAPTER [ARGS...]   (a DAP adapter with the tasks as threads)
       tokio-async top PID [--interval SECS] [--since FILE.json] [--nonblocking]
       tokio-async top BINARY CORE              (a live view of every task; `?` lists its keys)

COMMAND is what follows `async` in GDB and LLDB (`backtrace` when none, with `all`):
  backtrace [all] [full]   every thread's future and await stack; `all`: every task
  tasks                    one line per task
  task ID [full]           one task's whole tree
  waits                    who waits for whom; deadlocks, futurelocks, stranded tasks
  diff --since FILE.json   each task stuck, moved, new or finished since a saved report
with --json, --output FILE, --group, the filters --name REGEX, --state STATE,
--waiting-on KIND, --runtime ADDRESS, --limit N, --stuck-for SECONDS (with --since),
and the budget --max-nodes N, --max-bytes N.

  --verbose         say how long the process was stopped, and for what; and (of a core
                    too) where a thread's stack was unwound by frame pointer or cut short
  --nonblocking     read a live process without stopping it (as py-spy does): what moves
                    meanwhile shows as errors in the report
  --in-place        read the stopped process where it is: no copy of its memory is
                    held, but it stays stopped until every task is read (by default it
                    is stopped only while its memory is copied)
  --debug-dir DIR   where separate debug files are (as GDB's debug-file-directory),
                    besides /usr/lib/debug; may be given more than once
  --output-dir DIR  with several cores: one report per core in DIR";

/// Set by SIGINT, SIGTERM and SIGHUP: the walk stops, the process is let go.
static INTERRUPTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn interruption() -> &'static AtomicBool {
    INTERRUPTED.get_or_init(Arc::default)
}

/// What the command line asks.
struct Invocation {
    target: Target,
    view: View,
    words: Vec<String>,
    verbose: bool,
    nonblocking: bool,
    in_place: bool,
    debug_dirs: Vec<PathBuf>,
    output_dir: Option<PathBuf>,
}

enum Target {
    Process(u32),
    Cores {
        binary: PathBuf,
        cores: Vec<PathBuf>,
    },
}

/// Runs the executable; returns its exit status.
pub fn main() -> i32 {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    if arguments.first().map(String::as_str) == Some("dap") {
        return match guarded(|| crate::dap::run(&arguments[1..])) {
            Ok(code) => code,
            Err(error) => {
                eprintln!("tokio-async: {}", error.message());
                2
            }
        };
    }
    if arguments.iter().any(|a| a == "--help" || a == "-h") || arguments.is_empty() {
        println!("{USAGE}");
        return if arguments.is_empty() { 2 } else { 0 };
    }
    if arguments.iter().any(|a| a == "--version") {
        println!("tokio-async {}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let flag = INTERRUPTED.get_or_init(Arc::default);
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        let _ = signal_hook::flag::register(signal, flag.clone());
    }
    // A panic anywhere ends in one line; the stopped process is let go as it unwinds.
    let outcome = guarded(|| run(&arguments));
    match outcome {
        Ok(code) => code,
        Err(error) => {
            // The core's usage hints name the debuggers' commands; here they are ours.
            let message = match error.kind {
                ErrorKind::Usage => error.message().replace("`async ", "`tokio-async PID "),
                _ => error.message(),
            };
            eprintln!("tokio-async: {message}");
            match error.kind {
                ErrorKind::Usage => 2,
                ErrorKind::Interrupted => 130,
                ErrorKind::Internal => 70,
                _ => 1,
            }
        }
    }
}

fn usage_error(message: impl Into<String>) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!("{} (tokio-async --help)", message.into()),
    )
}

fn parse_invocation(arguments: &[String]) -> Result<Invocation> {
    let mut positional = Vec::new();
    let mut words = Vec::new();
    let (mut verbose, mut nonblocking, mut in_place) = (false, false, false);
    let mut debug_dirs = Vec::new();
    let mut output_dir = None;
    let mut view = None;
    let mut iterator = arguments.iter();
    while let Some(argument) = iterator.next() {
        let mut value_of = |name: &str| {
            iterator
                .next()
                .cloned()
                .ok_or_else(|| usage_error(format!("{name} needs a directory")))
        };
        match argument.as_str() {
            "--verbose" | "-v" => verbose = true,
            "--nonblocking" => nonblocking = true,
            "--in-place" => in_place = true,
            "--debug-dir" => debug_dirs.push(PathBuf::from(value_of("--debug-dir")?)),
            "--output-dir" => output_dir = Some(PathBuf::from(value_of("--output-dir")?)),
            word if view.is_some() => words.push(word.to_string()),
            word if word.starts_with('-') => {
                words.push(word.to_string());
                if arguments::takes_a_value(word) {
                    words.extend(iterator.next().cloned());
                }
            }
            word => match arguments::view_named(word) {
                Some(named) if !positional.is_empty() => view = Some(named),
                _ => positional.push(word.to_string()),
            },
        }
    }
    let target = target_of(&positional, output_dir.is_some())?;
    for (given, name) in [(nonblocking, "--nonblocking"), (in_place, "--in-place")] {
        if given && !matches!(target, Target::Process(_)) {
            return Err(usage_error(format!(
                "{name} reads a live process, not a core"
            )));
        }
    }
    if nonblocking && in_place {
        return Err(usage_error(
            "--nonblocking never stops the process; --in-place reads it stopped: one or the other",
        ));
    }
    // None: `backtrace all`.
    let (view, words) = match view {
        Some(view) => (view, words),
        None => (View::Backtrace, [vec!["all".to_string()], words].concat()),
    };
    Ok(Invocation {
        target,
        view,
        words,
        verbose,
        nonblocking,
        in_place,
        debug_dirs,
        output_dir,
    })
}

/// What the positional words name: a process, or a binary and its cores (several only
/// with `--output-dir`).
fn target_of(positional: &[String], output_dir: bool) -> Result<Target> {
    let target = match positional {
        [] => return Err(usage_error("which process, or which binary and core?")),
        [pid, rest @ ..] if pid.bytes().all(|b| b.is_ascii_digit()) && !Path::new(pid).exists() => {
            if let Some(word) = rest.first() {
                return Err(usage_error(format!(
                    "unknown command '{word}': the commands are backtrace (bt), tasks, task, waits and diff"
                )));
            }
            Target::Process(
                pid.parse()
                    .map_err(|_| usage_error(format!("{pid} is no process id")))?,
            )
        }
        [binary] => {
            return Err(usage_error(format!(
                "{binary}: a process id, or a binary followed by its core file"
            )))
        }
        [binary, cores @ ..] => Target::Cores {
            binary: PathBuf::from(binary),
            cores: cores.iter().map(PathBuf::from).collect(),
        },
    };
    if let Target::Cores { cores, .. } = &target {
        if cores.len() > 1 && !output_dir {
            return Err(usage_error(
                "several cores need --output-dir DIR (one report per core goes there)",
            ));
        }
    }
    Ok(target)
}

fn run(arguments: &[String]) -> Result<i32> {
    if arguments.first().map(String::as_str) == Some("top") {
        return run_top(&arguments[1..]);
    }
    let invocation = parse_invocation(arguments)?;
    // The words are checked before anything is loaded or stopped.
    let command = arguments::parse(invocation.view, &invocation.words, "")?;
    // A saved report that cannot be read is said before anything is stopped.
    if let Some(saved) = &command.since {
        crate::history::saved::snapshot_from_file(saved)?;
    }
    if command.filter.stuck_for.is_some() && command.since.is_none() {
        return Err(usage_error(
            "--stuck-for counts from an earlier stop, and tokio-async keeps none between runs: save one \
             (tokio-async PID tasks --json --output stop1.json) and give it, --since stop1.json",
        ));
    }
    match &invocation.target {
        Target::Process(pid) => run_on_process(&invocation, *pid, command),
        Target::Cores { binary, cores } => run_on_cores(&invocation, binary, cores, command),
    }
}

/// Colours as GDB's defaults, when stdout is a terminal and NO_COLOR is unset.
fn text_style(command: &Command) -> Option<Style> {
    let coloured = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none()
        && !command.json
        && command.output.is_none();
    coloured.then(|| Style {
        function: "\x1b[33m".into(),
        file: "\x1b[32m".into(),
        state: "\x1b[2m".into(),
    })
}

fn load(path: &Path, debug_dirs: &[PathBuf]) -> Result<DebugInfo> {
    let debug = guarded(|| crate::tokio::load_program(path, debug_dirs, None, false))?;
    guarded(|| {
        crate::future::prepare(&debug);
        // Everything the walk may ask is indexed before the process stops: the pause is
        // the walk alone.
        debug.index_all();
        crate::tokio::statics::prepare(&debug);
        Ok(())
    })?;
    Ok(debug)
}

fn interrupted() -> bool {
    interruption().load(Ordering::Relaxed)
}

fn mebibytes(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1e3)
}

fn now_clock() -> (f64, f64) {
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64());
    let monotonic = crate::inspect::monotonic_now().map_or(0.0, |(seconds, nanos)| {
        seconds as f64 + f64::from(nanos) / 1e9
    });
    (unix, monotonic)
}

/// A test's way to check that a panic lets the process go: `TOKIO_ASYNC_TEST_PANIC=stopped`
/// panics while the process is stopped, outside the walk's guard (the stop is undone as
/// the panic unwinds to `main`'s), `walk` in the middle of the walk.
fn injected_panic(at: &str) {
    if std::env::var("TOKIO_ASYNC_TEST_PANIC").as_deref() == Ok(at) {
        panic!("a panic injected for a test (TOKIO_ASYNC_TEST_PANIC={at})");
    }
}

const HOW_TO_DIFF_HERE: &str = "tokio-async keeps no stops between runs: save one with `tokio-async PID tasks \
     --json --output stop1.json`, and compare a later one with `tokio-async PID diff --since stop1.json`";

fn run_on_process(invocation: &Invocation, pid: u32, mut command: Command) -> Result<i32> {
    let started = Instant::now();
    let live = LiveProgram::open(invocation, pid)?;
    let loaded = started.elapsed();
    if interrupted() {
        return Err(Error::new(
            ErrorKind::Interrupted,
            "interrupted before the process was stopped",
        ));
    }
    command.style = text_style(&command);
    let LiveRead {
        read,
        taken,
        unwound,
        walked,
    } = read_live(invocation, pid, &live, command)?;
    if invocation.verbose {
        let tasks = read
            .as_ref()
            .map_or(0, |(_, inspection)| inspection.report.tasks_selected());
        let after = [loaded, unwound, walked];
        eprintln!("{}", verbose_line(pid, &taken, tasks, after));
    }
    let (prepared, inspection) = read.map_err(|error| let_go(error, pid))?;
    let (output, report) = guarded(|| prepared.write_keeping(inspection))?;
    print(output);
    // The process exits now: freeing each of a million tasks' nodes would only delay it.
    std::mem::forget(report);
    Ok(0)
}

/// One stop of a live process, read: the command's inspection (or why it failed), the
/// stop (the process already let go) and how long unwinding and walking took.
struct LiveRead {
    read: Result<(Prepared, Inspection)>,
    taken: TakenStop,
    unwound: Duration,
    walked: Duration,
}

/// Stops process `pid` as `invocation` asks (or not, `--nonblocking`), reads `command`
/// and lets the process go, whatever the read gave.
fn read_live(
    invocation: &Invocation,
    pid: u32,
    live: &LiveProgram,
    mut command: Command,
) -> Result<LiveRead> {
    let mut taken = TakenStop::take(invocation, pid, live)?;
    let threads = std::mem::take(&mut taken.threads);
    let memory: &dyn Memory = match &taken.copy {
        Some(copy) => copy,
        None => {
            // The pages read while stopped are of this stop only.
            live.memory.release_cache();
            &live.memory
        }
    };
    let unwind_started = Instant::now();
    command.threads = live.unwind(memory, threads, invocation.verbose);
    command.stack_source = Some(StackSource::Core);
    let unwound = unwind_started.elapsed();
    let (unix, monotonic) = taken.clock;
    let stop = Stop {
        load_bias: live.load_bias,
        live_pid: Some(pid),
        core_path: None,
        stop_clock: Some((unix, monotonic, ClockSource::StopEvent)),
        // One command, then the process exits: no stop is kept for a later one.
        target: None,
        memory_key: None,
        how_to_diff: HOW_TO_DIFF_HERE,
    };
    let walk_started = Instant::now();
    let check = || {
        injected_panic("walk");
        interrupted()
    };
    let read = Prepared::new(&live.debug, &stop, command).and_then(|prepared| {
        let read = guarded(|| {
            prepared.read_memory(&live.debug, live.load_bias, memory, "process", Some(&check))
        })?;
        Ok((prepared, read))
    });
    // Nothing reads the process after this: its copy goes back before the tasks are
    // linked, analysed and written (a million tasks' copy is a quarter of a GB), and a
    // process read in place runs on meanwhile.
    drop(taken.copy.take());
    if let Some(stopped) = taken.stopped.take() {
        taken.paused = Some(stopped.resume());
    }
    let read = read.and_then(|(prepared, read)| {
        let inspection = guarded(|| prepared.analyse(&live.debug, read))?;
        Ok((prepared, inspection))
    });
    let walked = walk_started.elapsed();
    Ok(LiveRead {
        read,
        taken,
        unwound,
        walked,
    })
}

/// `top PID [--interval SECS] [--since FILE] [--nonblocking]`, `top BINARY CORE`.
fn run_top(arguments: &[String]) -> Result<i32> {
    let mut interval = Duration::from_secs(1);
    let mut since = None;
    let mut rest = Vec::new();
    let mut iterator = arguments.iter();
    while let Some(argument) = iterator.next() {
        match argument.as_str() {
            "--interval" => {
                let seconds: f64 = iterator
                    .next()
                    .and_then(|value| value.parse().ok())
                    .filter(|seconds: &f64| seconds.is_finite() && *seconds >= 0.1)
                    .ok_or_else(|| usage_error("--interval needs seconds, 0.1 or more"))?;
                interval = Duration::from_secs_f64(seconds);
            }
            "--since" => {
                let path = iterator
                    .next()
                    .ok_or_else(|| usage_error("--since needs a saved --json report"))?;
                since = Some(crate::history::saved::snapshot_from_file(Path::new(path))?);
            }
            _ => rest.push(argument.clone()),
        }
    }
    let invocation = parse_invocation(&rest)?;
    if let Some(word) = invocation.words.iter().find(|word| *word != "all") {
        return Err(usage_error(format!(
            "top takes no command nor filter ({word}): filter with / once it runs"
        )));
    }
    if invocation.verbose {
        return Err(usage_error(
            "top says what each refresh stopped the program for in its header: no --verbose",
        ));
    }
    let terminal = || match std::io::stdout().is_terminal() {
        true => Ok(()),
        false => Err(usage_error(
            "top draws on a terminal; for a report, leave out `top`",
        )),
    };
    let options = crate::top::Options {
        interval,
        since,
        colour: std::env::var_os("NO_COLOR").is_none(),
    };
    match &invocation.target {
        Target::Process(pid) => {
            let live = LiveProgram::open(&invocation, *pid)?;
            terminal()?;
            let mut source = LiveSource {
                invocation: &invocation,
                pid: *pid,
                live,
            };
            crate::top::run(&mut source, options, &interrupted)?;
        }
        Target::Cores { binary, cores } => {
            let [core] = cores.as_slice() else {
                return Err(usage_error("top shows one core at a time"));
            };
            let mut source = CoreSource {
                debug: load(binary, &invocation.debug_dirs)?,
                core: core.clone(),
            };
            terminal()?;
            crate::top::run(&mut source, options, &interrupted)?;
        }
    }
    Ok(0)
}

/// The command each refresh reads: every task (with its locals where asked), and the
/// wait-for graph.
fn top_command(with_locals: bool) -> Result<Command> {
    let mut command = arguments::parse(View::Waits, &[], "")?;
    command.full = with_locals;
    Ok(command)
}

/// `top`'s refreshes of a live process: one read each, as `tokio-async PID` makes it.
struct LiveSource<'a> {
    invocation: &'a Invocation,
    pid: u32,
    live: LiveProgram,
}

impl crate::top::Source for LiveSource<'_> {
    fn read(&mut self, with_locals: bool) -> Result<crate::top::Refresh> {
        let started = Instant::now();
        let command = top_command(with_locals)?;
        let LiveRead { read, taken, .. } =
            read_live(self.invocation, self.pid, &self.live, command)?;
        let (_, inspection) = read.map_err(|error| let_go(error, self.pid))?;
        Ok(crate::top::Refresh {
            report: inspection.report,
            paused: taken.paused,
            took: started.elapsed(),
        })
    }

    fn name(&self) -> String {
        format!("process {}", self.pid)
    }

    fn live(&self) -> bool {
        true
    }
}

/// `top` of a core: one refresh, a still picture.
struct CoreSource {
    debug: DebugInfo,
    core: PathBuf,
}

impl crate::top::Source for CoreSource {
    /// A core is read once: with its locals, whatever the view.
    fn read(&mut self, _: bool) -> Result<crate::top::Refresh> {
        let started = Instant::now();
        let (_, inspection) = read_core(&self.debug, &self.core, top_command(true)?, false)?;
        Ok(crate::top::Refresh {
            report: inspection.report,
            paused: None,
            took: started.elapsed(),
        })
    }

    fn name(&self) -> String {
        format!("core {}", self.core.display())
    }

    fn live(&self) -> bool {
        false
    }
}

/// An interrupted read says the process runs on.
fn let_go(error: Error, pid: u32) -> Error {
    match error.kind {
        ErrorKind::Interrupted => Error::new(
            ErrorKind::Interrupted,
            format!("{}; process {pid} was let go and runs on", error.message()),
        ),
        _ => error,
    }
}

/// A live process's program, ready to be read: its DWARF, where it was loaded, its memory
/// and its mapped modules.
struct LiveProgram {
    debug: DebugInfo,
    load_bias: u64,
    memory: PageCache<ProcessMemory>,
    modules: Modules,
}

impl LiveProgram {
    fn open(invocation: &Invocation, pid: u32) -> Result<Self> {
        if !proc::exists(pid) {
            return Err(Error::new(ErrorKind::Binary, format!("no process {pid}")));
        }
        // Refused early, before the DWARF is loaded, when another tracer has it.
        if !invocation.nonblocking {
            if let Some(tracer) = proc::tracer(pid) {
                return Err(ptrace::already_traced(pid, tracer));
            }
        }
        let (running, beside) = proc::executable(pid).map_err(|error| {
            // /proc/PID/exe is ours to read exactly when the process is ours to trace.
            match std::fs::read_link(format!("/proc/{pid}/exe")) {
                Err(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
                    ptrace::refused(pid, nix::errno::Errno::EPERM)
                }
                _ => error,
            }
        })?;
        let executable = beside.as_deref().unwrap_or(&running);
        let debug = load(executable, &invocation.debug_dirs)?;
        let auxv = proc::auxv(pid)?;
        let entry = native::core_notes::auxv_value(&auxv, AT_ENTRY).ok_or_else(|| {
            Error::new(
                ErrorKind::Binary,
                "no AT_ENTRY in the process's auxiliary vector",
            )
        })?;
        let load_bias = entry.wrapping_sub(debug.elf.entry);
        let memory = PageCache::new(ProcessMemory::open(pid)?);
        let modules = native::process_modules(
            pid,
            (executable, load_bias),
            native::core_notes::auxv_value(&auxv, AT_SYSINFO_EHDR),
            &memory,
        );
        Ok(LiveProgram {
            debug,
            load_bias,
            memory,
            modules,
        })
    }

    /// The stopped threads' stacks, unwound in `memory`; `verbose` says where one ended
    /// unusually.
    fn unwind(
        &self,
        memory: &dyn Memory,
        threads: Vec<NativeThread>,
        verbose: bool,
    ) -> Vec<crate::inspect::ThreadInput> {
        let (inputs, notes) =
            native::thread_inputs(&self.debug, self.load_bias, &self.modules, memory, threads);
        if verbose {
            for note in notes {
                eprintln!("tokio-async: {note}");
            }
        }
        inputs
    }
}

/// The stop: its threads, and the copy of the memory taken while it lasted (then the
/// process already runs on: `paused` is how long it was stopped), or the stop itself,
/// to be ended once the process is read in place.
struct TakenStop {
    stopped: Option<ptrace::Stopped>,
    paused: Option<Duration>,
    /// Let go once the tasks are read; `copy_size` says what it held.
    copy: Option<MemoryCopy>,
    /// The bytes copied and what they were packed into.
    copy_size: Option<(usize, usize)>,
    threads: Vec<NativeThread>,
    /// When it stopped: the wall clock and CLOCK_MONOTONIC, in seconds.
    clock: (f64, f64),
    thread_count: usize,
    stopping: Option<Duration>,
    copied: Duration,
}

impl TakenStop {
    fn take(invocation: &Invocation, pid: u32, live: &LiveProgram) -> Result<Self> {
        // Why the copy is not taken, where `--verbose` asks; the process is read in place.
        let in_place_because = |error: Error| {
            if invocation.verbose {
                eprintln!("tokio-async: reading in place, with the process stopped: {error}");
            }
        };
        // Room for the copy of its memory, made while it still runs.
        let room = match invocation.nonblocking || invocation.in_place {
            true => None,
            false => CopyRoom::prepare(pid).map_err(in_place_because).ok(),
        };
        let (stopped, threads) = if invocation.nonblocking {
            (None, nonblocking_threads(pid, &live.modules, &live.memory)?)
        } else {
            let stopped = ptrace::stop(pid, interruption())?;
            let threads = stopped
                .threads
                .iter()
                .map(|thread| NativeThread {
                    tid: thread.tid,
                    name: proc::thread_name(pid, thread.tid),
                    fs_base: Some(thread.fs_base),
                    registers: thread.registers,
                })
                .collect();
            (Some(stopped), threads)
        };
        let clock = now_clock();
        injected_panic("stopped");
        let thread_count = stopped.as_ref().map_or(0, |stopped| stopped.threads.len());
        let stopping = stopped.as_ref().map(|stopped| stopped.stopping);
        // The process is stopped only for the copy of its memory; it is read after it runs
        // on. Should the copy fail, it is read in place, stopped for as long as that takes.
        let copy_started = Instant::now();
        let copy = room.and_then(|room| room.copy().map_err(in_place_because).ok());
        let copy_size = copy
            .as_ref()
            .map(|copy| (copy.copied_bytes(), copy.packed_bytes()));
        let copied = copy_started.elapsed();
        let (stopped, paused) = match copy {
            Some(_) => (None, stopped.map(ptrace::Stopped::resume)),
            None => (stopped, None),
        };
        Ok(TakenStop {
            stopped,
            paused,
            copy,
            copy_size,
            threads,
            clock,
            thread_count,
            stopping,
            copied,
        })
    }
}

/// What `--verbose` says of a read of process `pid`: how long it was stopped, for what,
/// and what was done after it ran on (`[loaded, unwound, walked]`: the DWARF loaded before
/// the stop, the stacks unwound and the tasks read after it).
fn verbose_line(pid: u32, taken: &TakenStop, tasks: usize, after: [Duration; 3]) -> String {
    let [loaded, unwound, walked] = after;
    let read_part = format!(
        "unwound in {}, {} tasks read in {} (DWARF loaded before, in {})",
        millis(unwound),
        thousands(tasks as u64),
        millis(walked),
        millis(loaded)
    );
    let thread_count = taken.thread_count;
    match (taken.paused, taken.stopping, taken.copy_size) {
        (Some(paused), Some(stopping), Some((copied, packed))) => format!(
            "tokio-async: process {pid} was stopped for {}: {thread_count} threads stopped in {}, \
             {} of memory copied (packed into {}) in {}; then, while it ran on: {read_part}",
            millis(paused),
            millis(stopping),
            mebibytes(copied),
            mebibytes(packed),
            millis(taken.copied),
        ),
        (Some(paused), Some(stopping), None) => format!(
            "tokio-async: process {pid} was stopped for {}: {thread_count} threads stopped in {}, {read_part}",
            millis(paused),
            millis(stopping),
        ),
        _ => format!("tokio-async: process {pid} was read without stopping it: {read_part}"),
    }
}

/// Threads read without stopping them: the blocked ones' stack and pc from `/proc`
/// (a running thread has neither), thread pointers from glibc's own list.
fn nonblocking_threads(
    pid: u32,
    modules: &Modules,
    memory: &dyn Memory,
) -> Result<Vec<NativeThread>> {
    let pointers = native::glibc::thread_pointers(modules, memory).map_err(|error| {
        error.context("--nonblocking finds each thread's thread-locals through glibc's thread list")
    })?;
    Ok(proc::thread_ids(pid)?
        .into_iter()
        .map(|tid| {
            let mut registers = Registers::default();
            if let Some((sp, pc)) = proc::blocked_at(pid, tid) {
                registers.set(STACK_POINTER, Some(sp));
                registers.set(RETURN_ADDRESS, Some(pc));
            }
            NativeThread {
                tid,
                name: proc::thread_name(pid, tid),
                fs_base: pointers.get(&tid).copied(),
                registers,
            }
        })
        .collect())
}

fn print(output: String) {
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`| head`) is not an error of ours.
    let _ = stdout.write_all(output.as_bytes());
    let _ = stdout.flush();
}

/// What a batch's summary says of one core.
struct Counts {
    tasks: usize,
    deadlocks: usize,
    errors: usize,
}

/// One core's report, read and written (to `output` when given).
fn core_report(
    debug: &DebugInfo,
    core: &Path,
    command: Command,
    output: Option<PathBuf>,
    verbose: bool,
) -> Result<(String, Counts)> {
    let mut command = command;
    if output.is_some() {
        command.output = output;
    }
    let (prepared, inspection) = read_core(debug, core, command, verbose)?;
    let report = &inspection.report;
    let counts = Counts {
        tasks: report.tasks_selected(),
        deadlocks: report.deadlocks.len(),
        errors: report.errors.len(),
    };
    Ok((guarded(|| prepared.write(inspection))?, counts))
}

/// A core of another build would be read with the wrong DWARF: says so instead.
fn same_build(
    debug: &DebugInfo,
    core: &Path,
    notes: &CoreNotes,
    memory: &CoreFileMemory,
) -> Result<()> {
    let theirs = notes
        .executable_base()
        .and_then(|base| native::core_notes::build_id_in_memory(memory, base));
    match (theirs, debug.build_id()) {
        (Some(theirs), Some(ours)) if theirs != ours => Err(Error::new(
            ErrorKind::Binary,
            format!(
                "core file {} was written by another build than {} (build id {theirs} in the core, {ours} in the binary): give the binary the process ran",
                core.display(),
                debug.path.display()
            ),
        )),
        _ => Ok(()),
    }
}

/// One core read as `command` asks; `verbose`: what its threads' unwinds found unusual
/// goes to stderr.
fn read_core(
    debug: &DebugInfo,
    core: &Path,
    command: Command,
    verbose: bool,
) -> Result<(Prepared, Inspection)> {
    let notes = CoreNotes::read(core)?;
    let entry = notes.auxv_value(AT_ENTRY).ok_or_else(|| {
        Error::new(
            ErrorKind::Binary,
            format!(
                "core file {}: no AT_ENTRY in its auxiliary vector",
                core.display()
            ),
        )
    })?;
    let load_bias = entry.wrapping_sub(debug.elf.entry);
    let memory = CoreFileMemory::open(core)?;
    same_build(debug, core, &notes, &memory)?;
    let executable = debug.path.clone();
    let modules = native::core_modules(&notes, (&executable, load_bias), &memory);
    let threads = notes
        .threads
        .iter()
        .map(|thread| NativeThread {
            tid: thread.tid,
            // Debuggers read no thread names from a core.
            name: None,
            fs_base: Some(thread.fs_base),
            registers: thread.registers,
        })
        .collect();
    let mut command = command;
    let (threads, notes) = native::thread_inputs(debug, load_bias, &modules, &memory, threads);
    if verbose {
        for note in notes {
            eprintln!("tokio-async: core {}: {note}", core.display());
        }
    }
    command.threads = threads;
    command.stack_source = Some(StackSource::Core);
    let stop = Stop {
        load_bias,
        live_pid: None,
        core_path: Some(core.to_path_buf()),
        stop_clock: None,
        target: None,
        memory_key: None,
        how_to_diff: HOW_TO_DIFF_HERE,
    };
    let prepared = Prepared::new(debug, &stop, command)?;
    let check = interrupted;
    let inspection =
        guarded(|| prepared.read(debug, load_bias, &memory, "core_file", Some(&check)))?;
    Ok((prepared, inspection))
}

/// One core of a batch, its report written to `output`: the summary's line for it, or
/// the line saying why there is no report (each core's command is parsed from the words).
fn batch_core(
    debug: &DebugInfo,
    invocation: &Invocation,
    core: &Path,
    output: &Path,
) -> std::result::Result<String, String> {
    let command = arguments::parse(invocation.view, &invocation.words, "")
        .map_err(|error| format!("{}: {}", core.display(), error.message()))?;
    let output_file = Some(output.to_path_buf());
    match core_report(debug, core, command, output_file, invocation.verbose) {
        Ok((_, counts)) => Ok(format!(
            "{}: {} tasks, {} deadlocks, {} errors -> {}",
            core.display(),
            thousands(counts.tasks as u64),
            counts.deadlocks,
            counts.errors,
            output.display()
        )),
        Err(error) => Err(format!("{}: error: {}", core.display(), error.message())),
    }
}

fn run_on_cores(
    invocation: &Invocation,
    binary: &Path,
    cores: &[PathBuf],
    command: Command,
) -> Result<i32> {
    let debug = load(binary, &invocation.debug_dirs)?;
    let Some(directory) = &invocation.output_dir else {
        let mut command = command;
        command.style = text_style(&command);
        let (output, _) = core_report(&debug, &cores[0], command, None, invocation.verbose)?;
        print(output);
        return Ok(0);
    };
    std::fs::create_dir_all(directory).map_err(|error| {
        Error::new(
            ErrorKind::Output,
            format!("cannot create {}: {error}", directory.display()),
        )
    })?;
    let extension = if command.json { "json" } else { "txt" };
    let workers = std::thread::available_parallelism()
        .map_or(1, |count| count.get())
        .min(cores.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<String>>> =
        cores.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(core) = cores.get(index) else { break };
                let name = core.file_name().map_or_else(
                    || format!("core-{index}"),
                    |name| name.to_string_lossy().into_owned(),
                );
                let output = directory.join(format!("{name}.{extension}"));
                let line = batch_core(&debug, invocation, core, &output).unwrap_or_else(|line| {
                    failed.store(true, Ordering::Relaxed);
                    line
                });
                *results[index].lock().unwrap() = Some(line);
            });
        }
    });
    // Each core had its own command, read from the same words.
    drop(command);
    for result in results {
        if let Some(line) = result.into_inner().unwrap_or_default() {
            println!("{line}");
        }
    }
    Ok(if failed.load(Ordering::Relaxed) { 1 } else { 0 })
}
