"""The `async` commands, shared by both debuggers: parse arguments, gather threads from
the adapter, hand everything to the Rust core, return its output; and complete them."""

import functools
import os
import shlex
import threading
import traceback
from typing import Callable, List, NamedTuple, Optional

from .adapter import DebuggerAdapter, StopCache, UserError

# The commands, as `async <name>`: what each takes. One table feeds parsing, help and
# completion in both debuggers.
BACKTRACE, TASKS, TASK, WAITS, DIFF = "backtrace", "tasks", "task", "waits", "diff"
HELP_ASYNC = "Async backtraces of the tokio tasks in the program being debugged."


class Option(NamedTuple):
    long: str
    short: str
    value: Optional[str]  # the value's name, or None for a flag
    help: str
    commands: tuple
    choices: tuple = ()


# How GDB names a file it read through the target (a container's, or gdbserver's), and
# how the kernel names a deleted one in /proc/PID/exe.
TARGET_PREFIX = "target:"
DELETED = " (deleted)"
# The parsed executable, by what it is valid for (`_binary_key`); loads started ahead of
# any command (`preload_for`), by the same key. LLDB starts those from a thread of its own
# (`lldb_adapter._preload_on_module_loads`), so both are touched only under `_lock`.
_binaries = {}
_preloads = {}
_lock = threading.Lock()
# Why the last load ahead of a command failed, if it did: the next command says so.
_preload_failure = None
_stop_cache = StopCache()


def _core():
    try:
        from . import _core as core
    except ImportError as error:
        raise UserError(
            "the Rust extension is not built (%s); run `make build` in the tokio-async checkout" % error
        ) from None
    return core


NO_EXTENSION_HELP = "(the Rust extension is not built: run `make build` in the tokio-async checkout)"


def _command_table():
    """Every `async` command as the core's parser takes it (help, usage, words, flags);
    none without the extension (or with one built before the table was), whose commands
    then say so when run."""
    try:
        return tuple(_core().command_table())
    except (UserError, AttributeError):
        return ()


_TABLE = {entry.name: entry for entry in _command_table()}
# Each report command's words besides flags (`all`, `full`), and every flag of the report
# commands with the commands that take it: help, completion and LLDB's parsed options.
WORDS = {name: tuple(entry.words) for name, entry in _TABLE.items() if entry.runs_in == "report"}


def _options():
    commands_of = {}
    flags = {}
    for name, entry in _TABLE.items():
        for flag in entry.flags:
            flags.setdefault(flag.long, flag)
            commands_of.setdefault(flag.long, []).append(name)
    return tuple(
        Option(flag.long, flag.short, flag.value, flag.help, tuple(commands_of[flag.long]), tuple(flag.choices))
        for flag in flags.values()
    )


OPTIONS = _options()


def short_help(command: str) -> str:
    """What `async COMMAND` does, from the core's table."""
    entry = _TABLE.get(command)
    return entry.help if entry is not None else NO_EXTENSION_HELP


def help_text(command: str) -> str:
    """A command's help and usage line, from the core's table."""
    entry = _TABLE.get(command)
    return entry.help + "\n" + entry.usage if entry is not None else NO_EXTENSION_HELP


@functools.lru_cache(maxsize=None)
def register_names():
    """How the debuggers name the registers the glue reads: `general`, `by_dwarf_number`,
    `frame_pointer`, `thread_pointer` (the core's architecture facts)."""
    return _core().register_names()


def block_on_frames():
    """The functions whose frames hold a block_on future, with the local that does."""
    return _core().block_on_frames()


def _user_error(error) -> UserError:
    """The core's error (`_core.Error`, with its `kind`) as the one line the user sees."""
    user_error = UserError(str(error))
    user_error.kind = getattr(error, "kind", None)
    return user_error


def _option_named(command: str, word: str) -> Optional[Option]:
    for option in OPTIONS:
        if command in option.commands and word in ("--" + option.long, "-" + option.short):
            return option
    return None


def parse_arguments(argument_string: str, command: str = BACKTRACE):
    """The command's words, split as a shell splits them, read by the core's parser (the
    `tokio-async` executable's too: one set of rules; OPTIONS, made from its table, only
    helps and completes): the core's `ParsedCommand`, handed to `Request.of_command`
    whole."""
    core = _core()
    try:
        words = shlex.split(argument_string)
    except ValueError as error:
        raise UserError("%s; %s" % (error, _TABLE[command].usage)) from None
    try:
        return core.parse_command(command, words)
    except core.Error as error:
        raise _user_error(error) from None


def parse_sample(argument_string: str):
    """`async sample`'s words, split as a shell splits them, read by the core's parser:
    its `SampleOptions` (interval, count, folded, svg)."""
    core = _core()
    try:
        words = shlex.split(argument_string)
    except ValueError as error:
        raise UserError("%s; %s" % (error, _TABLE["sample"].usage)) from None
    try:
        return core.parse_sample(words)
    except core.Error as error:
        raise _user_error(error) from None


def parse_stepping(command: str, argument_string: str):
    """A stepping command's words read by the core's parser: its `SteppingArguments`
    (task, own_frame)."""
    core = _core()
    try:
        return core.parse_stepping(command, argument_string.split())
    except core.Error as error:
        raise _user_error(error) from None


def _binary_key(path: str, debug_dirs, debugger_file=None):
    """What a parsed executable is valid for: the file as it is now, and where its debug
    files were looked for."""
    try:
        stat = os.stat(path)
    except OSError as error:
        raise UserError("cannot read the executable %s: %s" % (path, error.strerror)) from None
    return (path, stat.st_mtime_ns, stat.st_size, tuple(debug_dirs), debugger_file)


def _index_ahead() -> bool:
    """Whether to load ahead of commands (TOKIO_ASYNC_PRELOAD, default on): the DWARF when
    the debugger loads a program, and its units no command needed yet after the first."""
    return os.environ.get("TOKIO_ASYNC_PRELOAD", "1") != "0"


def preload_for(adapter: DebuggerAdapter) -> None:
    """Starts loading the adapter's executable's DWARF on the core's own thread, ahead of
    any command, as the debugger indexes its own symbols when it loads a file; only for
    programs that link tokio, so other programs cost nothing, and not with
    TOKIO_ASYNC_PRELOAD=0. Never raises: it is called from debugger events (and from a
    thread of LLDB's); what fails is said by the next command."""
    if not _index_ahead():
        return
    try:
        path = adapter.executable_path()
        if not path:
            return
        debug_dirs, debugger_file = adapter.debug_file_directories(), adapter.debug_file_path()
        key = _binary_key(path, debug_dirs, debugger_file)
        with _lock:
            if key in _binaries or key in _preloads:
                return
            _preloads.clear()
            _preloads[key] = _start_loading(path, debug_dirs, debugger_file, only_if_tokio=True)
    except UserError:
        pass  # the executable cannot be read: the command will say so
    except Exception as error:
        note_preload_failure(error)


def note_preload_failure(error: BaseException) -> None:
    """Keeps why a load ahead of the commands failed, for the next command to say."""
    global _preload_failure
    with _lock:
        _preload_failure = "%s: %s" % (type(error).__name__, error)


def _take_preload_failure() -> Optional[str]:
    global _preload_failure
    with _lock:
        failure, _preload_failure = _preload_failure, None
    return failure


def _start_loading(path, debug_dirs, debugger_file, only_if_tokio=False):
    return _core().start_loading(
        path, debug_dirs=list(debug_dirs), only_if_tokio=only_if_tokio, debugger_file=debugger_file,
        index_ahead=_index_ahead(),
    )


def preload_outcomes():
    """(executable name, outcome) of each load started ahead of the commands: `ok`, or the
    kind of the core's error (`not_tokio`, ...). Waits for them."""
    with _lock:
        preloads = list(_preloads.items())
    outcomes = []
    for key, pending in preloads:
        try:
            pending.wait()
            outcome = "ok"
        except _core().Error as error:
            outcome = error.kind
        outcomes.append((os.path.basename(key[0]), outcome))
    return outcomes


def start_loading_binary(path: str, debug_dirs=(), debugger_file=None, only_if_tokio=False):
    """A function giving the core's parsed view of an executable. A view cached while the
    file and the debugger's debug-file directories (and the debug file it loaded) are
    unchanged is given at once; a preloaded one when its load is done; else the DWARF loads
    on a thread of the core's own while the caller goes on (the debugger walks the stacks
    meanwhile)."""
    core = _core()
    key = _binary_key(path, debug_dirs, debugger_file)
    with _lock:
        cached = _binaries.get(key)
        preloaded = _preloads.pop(key, None) if cached is None else None
    if cached is not None:
        return lambda interrupted=None: cached
    pending = preloaded if preloaded is not None else _start_loading(path, debug_dirs, debugger_file, only_if_tokio)

    def wait(interrupted=None):
        try:
            binary = pending.wait(interrupted)
        except core.Error as error:
            if error.kind == "interrupted":
                # The load goes on: the next command waits for the same one.
                with _lock:
                    _preloads[key] = pending
                raise _user_error(error) from None
            if preloaded is None or only_if_tokio:
                raise _user_error(error) from None
            # Skipped or failed ahead of time: load now, and report what this load says.
            try:
                binary = _start_loading(path, debug_dirs, debugger_file).wait()
            except core.Error as again:
                raise _user_error(again) from None
        with _lock:
            _binaries.clear()
            _binaries[key] = binary
        return binary

    return wait


def _process(adapter: DebuggerAdapter, load_bias: int):
    """The core's view of the stopped program: how it reads its memory."""
    stop_key = adapter.stop_key()
    return _core().Process(
        load_bias=load_bias,
        read_memory=adapter.read_memory,
        live_pid=adapter.live_pid(),
        core_path=adapter.core_file_path(),
        # Read everything through the debugger (to compare memory backends, or to rule one out).
        read_through_debugger=os.environ.get("TOKIO_ASYNC_MEMORY") == "debugger",
        interrupted=adapter.interrupt_requested,
        # A core says its own time (or none).
        stop_clock=None if adapter.is_core() else adapter.stop_clock(),
        target=adapter.target_key(),
        # Changes when the memory may have: a command at an unchanged stop takes the stop's
        # snapshot an earlier one kept.
        memory_key=None if stop_key is None else repr(stop_key),
    )


def run(adapter: DebuggerAdapter, command: str, argument_string: str) -> str:
    """Runs `async <command>` and returns its output; raises UserError with one line."""
    parsed = parse_arguments(argument_string, command)
    adapter.check_process()
    binary, load_bias, threads = _stopped_program(adapter)
    core = _core()
    style = None if parsed.json or parsed.output else adapter.text_style()
    notes = _unwind_notes(threads) if parsed.verbose else ""
    request = core.Request.of_command(parsed, threads, style)
    try:
        return notes + core.backtrace(binary, _process(adapter, load_bias), request)
    except core.Error as error:
        raise _user_error(error) from None


def _unwind_notes(threads) -> str:
    """What `--verbose` says before the report: who unwound the stacks, and where the core
    found frames other than by call frame information or a stack ended short."""
    if not isinstance(threads, _core().UnwoundThreads):
        notes = ["the debugger walked the stacks (the core unwinds them where it reads the program's files "
                 "itself, a live process here or a core file the debugger names, unless TOKIO_ASYNC_FRAMES=debugger)"]
    else:
        notes = threads.notes or ["each stack was unwound by its call frame information to its outermost frame"]
    return "".join("tokio-async: %s\n" % note for note in notes)


def backtrace(adapter: DebuggerAdapter, argument_string: str) -> str:
    return run(adapter, BACKTRACE, argument_string)


def _stopped_program(adapter: DebuggerAdapter):
    """The parsed executable, its load bias and the threads of this stop, as `Request`
    takes them."""
    path = _executable_to_read(adapter, adapter.executable_path())
    loaded_binary = start_loading_binary(path, adapter.debug_file_directories(), adapter.debug_file_path())
    loaded = []

    def program():
        if not loaded:
            binary = loaded_binary(adapter.interrupt_requested)
            loaded.append((binary, _load_bias(adapter, binary)))
        return loaded[0]

    threads = _stop_cache.threads_of(adapter, lambda: _threads_at_stop(adapter, program))
    binary, load_bias = program()
    return binary, load_bias, threads


def _threads_at_stop(adapter: DebuggerAdapter, program):
    """The threads of this stop as `Request` takes them (`program()` gives the binary and
    its load bias, waiting for the load). Where the core reads the program's files itself
    (a live process on this machine, a core file) it unwinds each stack from the
    debugger's registers, as the executable does: GDB's own walk expands the symbol table
    of every function on the stacks, most of what a first `async bt` costs in it.
    Elsewhere (a remote target, an LLDB minidump), or with TOKIO_ASYNC_FRAMES=debugger,
    the debugger walks them."""
    core = _core()
    unwinds = adapter.live_pid() is not None or adapter.core_file_path() is not None
    if unwinds and os.environ.get("TOKIO_ASYNC_FRAMES") != "debugger":
        registers = [thread.to_request() for thread in adapter.thread_registers()]
        binary, load_bias = program()
        try:
            return core.unwind_threads(binary, _process(adapter, load_bias), registers)
        except core.Error as error:
            if error.kind == "interrupted":
                raise _user_error(error) from None
            # The files are not readable here after all (a minidump): the debugger's walk.
    return [thread.to_request() for thread in adapter.threads(core.block_on_frames())]


def _load_bias(adapter: DebuggerAdapter, binary) -> int:
    entry = adapter.entry_address()
    if entry is None:
        raise UserError("cannot find where the program was loaded (no AT_ENTRY in its auxiliary vector)")
    return (entry - binary.entry) & 0xFFFFFFFFFFFFFFFF


class StackViews:
    """Each thread's stack as `bt` should show it in a tokio program (the core's
    `stack_views`), kept for the stop: a frame filter asks on every `bt`. None for a
    thread, or a program, it has nothing to say about; never raises."""

    KEPT = 256

    def __init__(self):
        self._views = {}
        # Executables that are no tokio programs (or cannot be read): asked once.
        self._refused = set()

    def of_thread(self, adapter: DebuggerAdapter, tid: int, thread_of_stop):
        """Thread `tid`'s view; `thread_of_stop()` gives its ThreadInfo (its frames walked
        only when the view is not kept already)."""
        try:
            adapter.check_process()
            path = _executable_to_read(adapter, adapter.executable_path())
            debug_dirs, debugger_file = adapter.debug_file_directories(), adapter.debug_file_path()
            program = _binary_key(path, debug_dirs, debugger_file)
            if program in self._refused:
                return None
            key = (adapter.stop_key(), tid)
            if key[0] is not None and key in self._views:
                return self._views[key]
            view = self._read(adapter, program, (path, debug_dirs, debugger_file), thread_of_stop())
            if key[0] is not None:
                if len(self._views) >= self.KEPT:
                    self._views.clear()
                self._views[key] = view
            return view
        except UserError:
            return None
        except Exception:
            if os.environ.get("TOKIO_ASYNC_DEBUG"):
                traceback.print_exc()
            return None

    def _read(self, adapter: DebuggerAdapter, program, files, thread):
        """`program` is the executable's `_binary_key`, `files` its path, the debug-file
        directories and the debug file the debugger loaded."""
        core = _core()
        path, debug_dirs, debugger_file = files
        try:
            # A program without tokio is not loaded for this (a `bt` in any program would).
            binary = start_loading_binary(path, debug_dirs, debugger_file, only_if_tokio=True)(adapter.interrupt_requested)
        except UserError as error:
            if getattr(error, "kind", None) != "interrupted":
                self._refused.add(program)
            return None
        request = core.Request([thread.to_request()])
        try:
            stacks = core.stack_views(binary, _process(adapter, _load_bias(adapter, binary)), request)
        except core.Error as error:
            if error.kind in ("not_tokio", "no_debuginfo"):
                self._refused.add(program)
            return None
        return stacks[0] if stacks else None


stack_views = StackViews()


def _executable_to_read(adapter: DebuggerAdapter, path: Optional[str]) -> str:
    """The file to read the program from: the debugger's, unless the process is live and
    that file is not the one it runs. The kernel keeps the running file at /proc/PID/exe,
    whatever mount namespace it lives in and even when deleted:
    - GDB reads a container's file through the target and names it `target:PATH`, which
      is not at PATH here: it is read from /proc/PID/exe;
    - a deploy deletes or replaces the file after the program started: GDB loads none,
      LLDB the new file at the old path, whose DWARF would misread the process unless it
      is the same build (equal build ids); LLDB loads none for a container's file either.
      Those give one line naming the commands that load the running file;
    - through gdbserver, `target:PATH` is the target's file: PATH here is read only if it
      is the same build (`_local_copy_of_remote_file`)."""
    pid = adapter.live_pid()
    running = "/proc/%d/exe" % pid if pid is not None else None
    try:
        running_file = os.stat(running) if running else None
        running_path = os.readlink(running) if running else None
    except OSError:
        running_file = running_path = None  # not ours to see (permissions)
    if path and path.startswith(TARGET_PREFIX):
        path = path[len(TARGET_PREFIX):]
        if running_path == path:
            return running
        if running_file is None:
            return _local_copy_of_remote_file(adapter, path)
    if running_file is None:
        if not path:
            raise UserError("the debugger does not know the program's executable; load it first (file PATH)")
        return path
    load_it = "load the one it runs: %s" % adapter.how_to_load_running_executable(pid)
    if not path:
        if running_path.endswith(DELETED):
            raise UserError(
                "the program's executable, %s, was deleted or replaced after it started, and the debugger loaded "
                "none; %s" % (running_path, load_it)
            )
        raise UserError(
            "the debugger loaded no executable for process %d, which runs %s (a file of another mount namespace, "
            "as in a container, or one it could not open); %s" % (pid, running_path, load_it)
        )
    if not running_path.endswith(DELETED):
        return path  # the running file, or a copy of it the user chose
    try:
        loaded_file = os.stat(path)
    except OSError:
        return path
    same_file = (loaded_file.st_dev, loaded_file.st_ino) == (running_file.st_dev, running_file.st_ino)
    build = None if same_file else _core().build_id(path)
    if same_file or (build is not None and build == _core().build_id(running)):
        return path
    raise UserError(
        "%s is not the file process %d runs (%s): it was replaced after the program started; %s"
        % (path, pid, running_path, load_it)
    )


def _local_copy_of_remote_file(adapter: DebuggerAdapter, path: str) -> str:
    """GDB read the program from a remote target (gdbserver) at `path`: the same path here
    is read only if it holds the same build."""
    copy_it = "copy the target's file here and load it (file COPY), or set sysroot to a directory that mirrors the target"
    if not os.path.exists(path):
        raise UserError("the debugger reads the program from the remote target (%s%s), which is not here; %s"
                        % (TARGET_PREFIX, path, copy_it))
    theirs, ours = adapter.executable_build_id(), _core().build_id(path)
    if theirs and ours != theirs:
        raise UserError("%s here is not the program the debugger read from the remote target (build id %s here, %s "
                        "there); %s" % (path, ours or "none", theirs, copy_it))
    return path


def execute(make_adapter: Callable[[], DebuggerAdapter], command: str, argument_string: str):
    """Runs a command for a debugger: `(output, None)`, or `(None, error)`: one line, after
    the line saying that a load ahead of the commands failed, when one did (said once).
    Never raises: a bug still gets one line (TOKIO_ASYNC_DEBUG=1 prints its traceback too)."""
    failure = _take_preload_failure()
    note = "tokio-async: loading the program ahead of this command failed (%s)\n" % failure if failure else ""
    try:
        return note + run(make_adapter(), command, argument_string), None
    except UserError as error:
        return None, "%stokio-async: %s" % (note, error)
    except KeyboardInterrupt:
        return None, note + "tokio-async: interrupted"
    except Exception as error:
        if os.environ.get("TOKIO_ASYNC_DEBUG"):
            traceback.print_exc()
        return None, "%stokio-async: internal error: %s" % (note, error)


# What completing an option's value asks of the debugger rather than of this table.
COMPLETE_FILE_NAME = object()


def complete(command: str, text: str, make_adapter: Callable[[], DebuggerAdapter]):
    """Candidates for the word being typed at the end of `text` (the command's arguments so
    far): a list of whole words, or COMPLETE_FILE_NAME. Task ids are read from the stopped
    program; completion never raises."""
    try:
        ended = text == "" or text[-1].isspace()
        words = text.split()
        word = "" if ended else words[-1]
        before = words if ended else words[:-1]
        option = _option_named(command, before[-1]) if before else None
        if option is not None and option.value is not None:
            if option.long in ("output", "since"):
                return COMPLETE_FILE_NAME
            if option.long == "waiting-on":
                return [kind for kind in node_kinds() if kind.startswith(word)]
            return [choice for choice in option.choices if choice.startswith(word)]
        if word.startswith("-"):
            return sorted("--" + option.long for option in OPTIONS if command in option.commands and ("--" + option.long).startswith(word))
        candidates = [extra for extra in WORDS[command] if extra not in before]
        if command == TASK and not any(before_word.isdigit() for before_word in before):
            candidates += [str(task_id) for task_id in task_ids(make_adapter())]
        return [candidate for candidate in candidates if candidate.startswith(word)]
    except Exception:
        return []


def node_kinds() -> List[str]:
    """What `--waiting-on` takes: every node kind."""
    return list(_core().node_kinds())


def task_ids(adapter: DebuggerAdapter) -> List[int]:
    """Every task id of the stopped program (no futures decoded); empty if none can be read."""
    adapter.check_process()
    binary, load_bias, threads = _stopped_program(adapter)
    core = _core()
    request = core.Request(threads, all=True)
    try:
        return list(core.task_ids(binary, _process(adapter, load_bias), request))
    except core.Error:
        return []


class _SteppingCore:
    """What the stepping commands ask of the core, on the stop the debugger is at now."""

    def __init__(self, adapter: DebuggerAdapter, stepper):
        self.adapter, self.stepper = adapter, stepper
        self.frames = []

    def _call(self, function, *arguments):
        binary, load_bias, threads = _stopped_program(self.adapter)
        core = _core()
        request = core.Request(threads)
        try:
            return function(binary, _process(self.adapter, load_bias), request, *arguments)
        except core.Error as error:
            raise _user_error(error) from None

    def plan(self, selected: int):
        self.frames = self.stepper.frames_with_registers()
        frames = [{key: value for key, value in frame.items() if key != "function"} for frame in self.frames]
        return self._call(_core().step_plan, self.stepper.selected_thread_id(), frames, selected)

    def poll_targets(self, task: int):
        return self._call(_core().poll_targets, task)

    def wake_watch(self, task: int):
        return self._call(_core().wake_watch, task)

    def read(self, address: int, size: int):
        return self.adapter.read_memory(address, size)

    def driver_note(self) -> str:
        """What runtime work a thread outside any task is doing, from its frames' names."""
        names = " ".join(frame.get("function", "") for frame in self.frames)
        if "runtime::time::" in names:
            return " (tokio's timer)"
        if "runtime::io::" in names:
            return " (tokio's I/O driver)"
        return ""


def execute_stepping(make_adapter, make_stepper, command: str, argument_string: str):
    """Runs a stepping command (stepping.py) as `execute` runs the others: `(output, None)`
    or `(None, one line)`."""
    from . import stepping

    def run_it():
        adapter = _live_process(make_adapter, command)
        stepper = make_stepper()
        return stepping.run_command(stepper, _SteppingCore(adapter, stepper), command, argument_string)

    return _one_line_on_error(run_it)


def _live_process(make_adapter, command: str) -> DebuggerAdapter:
    """The adapter, for a command that runs the program: a core file cannot."""
    adapter = make_adapter()
    adapter.check_process()
    if adapter.is_core():
        raise UserError("async %s runs the program; a core file cannot run" % command)
    return adapter


def _one_line_on_error(run_it):
    """`(output, None)`, or `(None, one line)` whatever goes wrong: never a traceback
    (TOKIO_ASYNC_DEBUG=1 prints it too)."""
    try:
        return run_it(), None
    except UserError as error:
        return None, "tokio-async: %s" % error
    except KeyboardInterrupt:
        return None, "tokio-async: interrupted"
    except Exception as error:
        if os.environ.get("TOKIO_ASYNC_DEBUG"):
            traceback.print_exc()
        return None, "tokio-async: internal error: %s" % error


class _SamplingCore:
    """What `async sample` asks of the core, at each stop."""

    def __init__(self, adapter: DebuggerAdapter):
        self.adapter = adapter

    def new_sampler(self):
        return _core().Sampler()

    def sample(self, sampler):
        binary, load_bias, threads = _stopped_program(self.adapter)
        core = _core()
        request = core.Request(threads, all=True)
        try:
            return core.sample(binary, _process(self.adapter, load_bias), request, sampler)
        except core.Error as error:
            raise _user_error(error) from None


def execute_sampling(make_adapter, make_stepper, argument_string: str):
    """Runs `async sample` (sampling.py) as `execute` runs the others."""
    from . import sampling

    def run_it():
        adapter = _live_process(make_adapter, sampling.SAMPLE)
        try:
            return sampling.run_command(make_stepper(), _SamplingCore(adapter), argument_string)
        except _core().Error as error:
            raise _user_error(error) from None

    return _one_line_on_error(run_it)
