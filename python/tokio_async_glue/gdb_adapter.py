"""GDB's side: threads, registers, memory and frames through GDB's Python API, and the
`async` commands. Loaded by gdb-scripts/tokio_async.py."""

import os
import signal
import threading

import gdb

from . import commands, gdb_frames, sampling, stepping
from .adapter import (
    MAX_FRAMES,
    DebuggerAdapter,
    FrameInfo,
    FrameNeedsOfThread,
    StopClocks,
    ThreadInfo,
    ThreadRegisters,
    UserError,
    ansi_escape,
)


class GdbAdapter(DebuggerAdapter):
    def __init__(self):
        self.inferior = gdb.selected_inferior()
        # One adapter serves one command, which asks for the core's path several times:
        # found once (`info target` lists every section of a big core).
        self._core_path = None
        self._core_path_found = False

    def check_process(self):
        threads = self.inferior.threads()
        if self.inferior.pid == 0 or not threads:
            raise UserError("the program is not running; start it (run) or attach (gdb -p PID) or load a core first")
        # In non-stop mode a stopped thread can sit beside running ones, which change
        # tokio's state while it is read.
        running = sorted(thread.num for thread in threads if thread.is_running())
        if running:
            raise UserError(
                "%s running (non-stop mode); stop every thread first (interrupt -a)"
                % ("thread %d is" % running[0] if len(running) == 1 else "threads %s are" % ", ".join(map(str, running)))
            )

    def executable_path(self):
        progspace = self.inferior.progspace
        return progspace.filename if progspace is not None else None

    def executable_build_id(self):
        progspace = self.inferior.progspace
        if progspace is None or not progspace.filename:
            return None
        for objfile in progspace.objfiles():
            if objfile.filename == progspace.filename:
                return objfile.build_id
        return None

    def debug_file_path(self):
        progspace = self.inferior.progspace
        if progspace is None or not progspace.filename:
            return None
        for objfile in progspace.objfiles():
            owner = objfile.owner
            if owner is not None and owner.filename == progspace.filename:
                return objfile.filename
        return None

    def debug_file_directories(self):
        try:
            value = gdb.parameter("debug-file-directory")
        except (gdb.error, RuntimeError):
            return []
        return [directory for directory in (value or "").split(os.pathsep) if directory]

    def entry_address(self):
        try:
            text = gdb.execute("info auxv", to_string=True)
        except gdb.error:
            return None
        for line in text.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[1] == "AT_ENTRY":
                return int(fields[-1], 0)
        return None

    def live_pid(self):
        connection = getattr(self.inferior, "connection", None)
        if connection is not None and getattr(connection, "type", None) == "native":
            return self.inferior.pid
        return None

    def how_to_load_running_executable(self, pid):
        return "`file /proc/%d/exe`" % pid

    def stop_key(self):
        return (self.inferior.num, self.inferior.pid, self.executable_path(), _stop_generation)

    def stop_clock(self):
        return STOP_CLOCKS.clock_of((self.inferior.num, self.inferior.pid, _stops_seen))

    def core_file_path(self):
        if not self._core_path_found:
            self._core_path, self._core_path_found = self._find_core_file_path(), True
        return self._core_path

    def _find_core_file_path(self):
        corefile = getattr(self.inferior, "corefile", None)  # GDB 16 and later
        if corefile is not None:
            return corefile.filename
        connection = getattr(self.inferior, "connection", None)
        if connection is None or getattr(connection, "type", None) != "core":
            return None
        try:
            text = gdb.execute("info target", to_string=True)
        except gdb.error:
            return None
        # "Local core dump file:\n\t`/path/core', file type elf64-x86-64."
        lines = text.splitlines()
        for title, line in zip(lines, lines[1:]):
            if title.strip() == "Local core dump file:" and "`" in line and "'," in line:
                return line[line.index("`") + 1:line.rindex("',")]
        return None

    def is_core(self):
        connection = getattr(self.inferior, "connection", None)
        return connection is not None and getattr(connection, "type", None) == "core"

    def text_style(self):
        try:
            if not gdb.parameter("style enabled") or not os.isatty(1):
                return None
            return {
                element: ansi_escape(*(gdb.parameter("style %s %s" % (name, aspect)) for aspect in ("foreground", "background", "intensity")))
                for element, name in (("function", "function"), ("file", "filename"), ("state", "metadata"))
            }
        except (gdb.error, RuntimeError, ValueError):
            return None

    def read_memory(self, address, size):
        try:
            return bytes(self.inferior.read_memory(address, size))
        except (gdb.MemoryError, gdb.error, OverflowError, ValueError):
            return None

    def threads(self, block_on_frames):
        return [ThreadInfo(tid, name, fs_base, frames) for tid, name, fs_base, frames in self._each_thread(lambda: self._frames(block_on_frames))]

    def thread_registers(self):
        return [ThreadRegisters(tid, name, fs_base, registers) for tid, name, fs_base, registers in self._each_thread(_newest_registers)]

    def _each_thread(self, read):
        """(tid, name, thread pointer, `read()` in it) of every thread, each selected in
        turn; the selection is given back."""
        selected_thread = gdb.selected_thread()
        selected_frame = gdb.selected_frame() if selected_thread is not None else None
        result = []
        try:
            for thread in self.inferior.threads():
                if not thread.is_valid():
                    continue
                thread.switch()
                result.append((_thread_id(thread), thread.name, self._fs_base(), read()))
        finally:
            if selected_thread is not None and selected_thread.is_valid():
                selected_thread.switch()
                if selected_frame is not None and selected_frame.is_valid():
                    selected_frame.select()
        return result

    def selected_thread(self):
        """The selected thread alone, its stack walked without switching threads (which a
        frame filter, called while `bt` walks that stack, must not do)."""
        thread = gdb.selected_thread()
        return ThreadInfo(
            tid=_thread_id(thread),
            name=thread.name,
            fs_base=self._fs_base(),
            frames=self._frames(commands.block_on_frames()),
        )

    def selected_tid(self):
        return _thread_id(gdb.selected_thread())

    @staticmethod
    def _fs_base():
        try:
            return int(gdb.newest_frame().read_register(commands.register_names().thread_pointer)) & 0xFFFFFFFFFFFFFFFF
        except (gdb.error, ValueError):
            return None

    def _frames(self, block_on_frames):
        frames = []
        try:
            frame = gdb.newest_frame()
        except gdb.error:
            return frames
        needs_of_thread = FrameNeedsOfThread(block_on_frames)
        while frame is not None and len(frames) < MAX_FRAMES:
            inlined = frame.type() == gdb.INLINE_FRAME
            needs = needs_of_thread.of(frame.name() or "", inlined)
            file, line = None, None
            if needs.line:
                try:
                    sal = frame.find_sal()
                    file = sal.symtab.filename if sal.symtab is not None else None
                    line = sal.line or None
                except gdb.error:
                    pass
            info = FrameInfo(
                frame.pc(), inlined, file, line,
                _register(frame, "sp") if needs.registers else None, _register(frame, commands.register_names().frame_pointer) if needs.registers else None,
            )
            for local in needs.locals:
                self._read_local(frame, local, info)
            frames.append(info)
            try:
                frame = frame.older()
            except gdb.error:
                break
        return frames

    def _read_local(self, frame, local, info):
        try:
            value = frame.read_var(local)
        except (gdb.error, ValueError):
            return  # No such local in this frame.
        try:
            if value.is_optimized_out:
                info.local_errors[local] = "`%s` is optimized out in this build" % local
            elif value.address is not None:
                data = self.read_memory(int(value.address), value.type.sizeof)
                if data is None:
                    info.local_errors[local] = "cannot read `%s`" % local
                else:
                    info.locals[local] = data
            else:
                info.locals[local] = _scalar_bytes(value)
        except (gdb.error, ValueError) as error:
            info.local_errors[local] = "cannot read `%s`: %s" % (local, error)


def _thread_id(thread):
    """A thread as the core names it: its LWP (a core's thread has one too), else GDB's number."""
    return thread.ptid[1] or thread.ptid[2] or thread.num


def _newest_registers():
    """The selected thread's registers where it stopped, by DWARF number."""
    try:
        frame = gdb.newest_frame()
    except gdb.error:
        return [None] * len(commands.register_names().by_dwarf_number)
    return [_register(frame, name) for name in commands.register_names().by_dwarf_number]


def _register(frame, name):
    try:
        return int(frame.read_register(name)) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, ValueError):
        return None


def _scalar_bytes(value):
    """Bytes of a pointer-sized value held in a register (no address): descend through
    single-field wrappers such as Pin and NonNull to the integer."""
    for _ in range(8):
        fields = value.type.strip_typedefs().fields() if value.type.strip_typedefs().code == gdb.TYPE_CODE_STRUCT else []
        if not fields:
            break
        value = value[fields[0]]
    return (int(value) & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")


class AsyncPrefix(gdb.Command):
    """Async backtraces of the tokio tasks in the program being debugged."""

    def __init__(self):
        super().__init__("async", gdb.COMMAND_STACK, gdb.COMPLETE_NONE, True)


class AsyncCommand(gdb.Command):
    """One `async` subcommand; its help is set per instance from the core's table."""

    def __init__(self, name, command):
        self.__doc__ = commands.help_text(command)
        super().__init__("async " + name, gdb.COMMAND_STACK)
        self.command = command

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        output, error = commands.execute(GdbAdapter, self.command, argument)
        if error is not None:
            gdb.write(error + "\n", gdb.STDERR)
        else:
            gdb.write(output)

    def complete(self, text, word):
        candidates = commands.complete(self.command, text, GdbAdapter)
        if candidates is commands.COMPLETE_FILE_NAME:
            return gdb.COMPLETE_FILENAME
        # GDB replaces `word`, which ends at the last break character ('-' is one).
        typed = text.split()[-1] if text and not text[-1].isspace() else ""
        cut = len(typed) - len(word or "")
        return [candidate[cut:] for candidate in candidates]


_registered = False
# Counts the events after which the stacks may differ (see `stop_key`).
_stop_generation = 0
_STACK_CHANGING_EVENTS = (
    "cont", "stop", "exited", "new_objfile", "clear_objfiles", "new_inferior", "inferior_deleted",
    "new_thread", "inferior_call", "memory_changed", "register_changed",
)


def _stacks_may_have_changed(*_):
    global _stop_generation
    _stop_generation += 1


# Stop events seen, and when each happened (see `StopClocks`).
_stops_seen = 0
STOP_CLOCKS = StopClocks()


def _on_stop(_event):
    global _stops_seen
    _stops_seen += 1
    inferior = gdb.selected_inferior()
    STOP_CLOCKS.saw_stop((inferior.num, inferior.pid, _stops_seen))


def register():
    global _registered
    if _registered:
        return
    AsyncPrefix()
    names = (("backtrace", commands.BACKTRACE), ("bt", commands.BACKTRACE), ("tasks", commands.TASKS), ("task", commands.TASK),
             ("waits", commands.WAITS), ("diff", commands.DIFF))
    for name, command in names:
        AsyncCommand(name, command)
    for name in stepping.COMMANDS:
        AsyncSteppingCommand(name, name)
    AsyncSampleCommand()
    AsyncSteppingCommand("n", stepping.NEXT)
    gdb_frames.register(GdbAdapter)
    for name in _STACK_CHANGING_EVENTS:
        registry = getattr(gdb.events, name, None)
        if registry is not None:
            registry.connect(_stacks_may_have_changed)
    gdb.events.stop.connect(_on_stop)
    # Index the program's DWARF when GDB loads it, as GDB indexes its own symbols then.
    gdb.events.new_objfile.connect(_on_new_objfile)
    commands.preload_for(GdbAdapter())
    _registered = True


def _on_new_objfile(event):
    try:
        if event.new_objfile.filename == gdb.current_progspace().filename:
            commands.preload_for(GdbAdapter())
    except Exception:
        pass


# How deep in a thread's stack the wake's state transition may be.
WAKE_FRAMES = 16


class GdbStepper(stepping.Stepper):
    """The stepping commands' primitives in GDB: its own `next`, `finish` and `continue`,
    internal breakpoints and watchpoints (not in the user's list), and its stop events."""

    def __init__(self):
        self.stops = []
        self.exited = None
        self.ours = set()

    def _on_stop(self, event):
        self.stops.append(event)

    def _on_exit(self, event):
        self.exited = getattr(event, "exit_code", None)

    def _run(self, command):
        self.stops, self.exited = [], None
        values_before = gdb.history_count()
        gdb.events.stop.connect(self._on_stop)
        gdb.events.exited.connect(self._on_exit)
        try:
            gdb.execute(command, to_string=True)
        except KeyboardInterrupt:
            return stepping.Stop("interrupted")
        except gdb.error as error:
            if self.exited is not None or not gdb.selected_inferior().pid:
                return stepping.Stop("exited", text="" if self.exited is None else " with code %d" % self.exited)
            if "watchpoint" in str(error).lower():
                raise UserError("no hardware watchpoint left to watch the task's state (%s)" % error) from None
            raise UserError("%s failed: %s" % (command, error)) from None
        finally:
            gdb.events.stop.disconnect(self._on_stop)
            gdb.events.exited.disconnect(self._on_exit)
        if self.exited is not None or not gdb.selected_inferior().pid:
            return stepping.Stop("exited", text="" if self.exited is None else " with code %d" % self.exited)
        stop = self._classify(self.stops[-1] if self.stops else None)
        if stop.kind == "step" and command == "finish" and gdb.history_count() > values_before:
            # What `finish` printed as "Value returned is $N = ...".
            stop = stop._replace(returned=str(gdb.history(0)))
        return stop

    def _classify(self, event):
        if isinstance(event, gdb.BreakpointEvent):
            for breakpoint in event.breakpoints:
                if breakpoint in self.ours:
                    return stepping.Stop("ours", handle=breakpoint)
            numbers = ", ".join(str(breakpoint.number) for breakpoint in event.breakpoints)
            return stepping.Stop("breakpoint", text="breakpoint %s" % numbers)
        if isinstance(event, gdb.SignalEvent):
            if event.stop_signal == "SIGINT":
                return stepping.Stop("interrupted")
            return stepping.Stop("signal", text=event.stop_signal)
        return stepping.Stop("step")

    def selected_thread_id(self):
        thread = gdb.selected_thread()
        return _thread_id(thread)

    def selected_frame_index(self):
        selected, frame, index = gdb.selected_frame(), gdb.newest_frame(), 0
        while frame is not None and frame != selected and index < MAX_FRAMES:
            frame, index = frame.older(), index + 1
        return index if frame is not None else 0

    def _frame(self, index):
        frame = gdb.newest_frame()
        for _ in range(index or 0):
            older = frame.older()
            if older is None:
                break
            frame = older
        return frame

    def frames_with_registers(self):
        frames = []
        frame = gdb.newest_frame()
        while frame is not None and len(frames) < MAX_FRAMES:
            try:
                sal = frame.find_sal()
                file = sal.symtab.filename if sal.symtab is not None else None
                line = sal.line or None
            except gdb.error:
                file, line = None, None
            registers = {}
            for name in commands.register_names().general:
                value = _register(frame, name)
                if value is not None:
                    registers[name] = value
            frames.append({
                "pc": frame.pc(), "inlined": frame.type() == gdb.INLINE_FRAME, "file": file, "line": line,
                "registers": registers, "function": frame.name() or "",
            })
            try:
                frame = frame.older()
            except gdb.error:
                break
        return frames

    def frame_key(self, index):
        return (gdb.selected_thread().num, self._frame(index))

    def next_line(self):
        return self._run("next")

    def finish_frame(self, index):
        self._frame(index).select()
        return self._run("finish")

    def resume(self):
        return self._run("continue")

    def next_instruction(self):
        return self._run("nexti")

    def add_breakpoint(self, address, condition):
        with _c_language():
            breakpoint = gdb.Breakpoint("*0x%x" % address, internal=True)
            breakpoint.silent = True
            breakpoint.condition = condition
        self.ours.add(breakpoint)
        return breakpoint

    def add_write_watchpoint(self, address, size, condition):
        spelled = {1: "char", 2: "short", 4: "int", 8: "long"}[size]
        with _c_language():
            watchpoint = gdb.Breakpoint(
                "*(unsigned %s *) 0x%x" % (spelled, address), gdb.BP_WATCHPOINT, gdb.WP_WRITE, internal=True
            )
            if watchpoint.type != gdb.BP_HARDWARE_WATCHPOINT:
                watchpoint.delete()
                raise UserError("no hardware watchpoint to watch the task's state (can-use-hw-watchpoints is 0)")
            watchpoint.silent = True
            watchpoint.condition = condition
        self.ours.add(watchpoint)
        return watchpoint

    def set_enabled(self, handle, enabled):
        if handle.is_valid() and handle.enabled != enabled:
            handle.enabled = enabled

    def remove(self, handle):
        self.ours.discard(handle)
        if handle.is_valid():
            handle.delete()

    def where(self):
        try:
            return gdb.execute("frame", to_string=True)
        except gdb.error as error:
            return "(%s)\n" % error

    def select_thread_in(self, functions):
        selected = gdb.selected_thread()
        # The selected thread first: it is the one the watchpoint stopped, most often.
        others = [thread for thread in gdb.selected_inferior().threads() if thread != selected]
        for thread in [selected] + others:
            if not thread.is_valid():
                continue
            thread.switch()
            frame = gdb.newest_frame()
            for _ in range(WAKE_FRAMES):
                if frame is None:
                    break
                if any(name in (frame.name() or "") for name in functions):
                    return True
                frame = frame.older()
        selected.switch()
        return False

    def thread_description(self):
        thread = gdb.selected_thread()
        return 'thread %d "%s"' % (self.selected_thread_id(), thread.name or "")

    def run_for(self, seconds):
        # GDB stops the program on SIGINT, as on Ctrl-C, and does not pass it on (checked
        # by `check_can_sample`).
        pid = gdb.selected_inferior().pid
        fired = threading.Event()

        def interrupt():
            fired.set()
            try:
                os.kill(pid, signal.SIGINT)
            except OSError:
                pass  # gone: `continue` says how

        timer = threading.Timer(seconds, interrupt)
        timer.start()
        try:
            # GDB prints `Thread N received signal SIGINT` at each such stop: the setting
            # `suppress-cli-notifications` does not cover it.
            stop = self._run("continue")
        finally:
            timer.cancel()
        if stop.kind == "interrupted" and fired.is_set():
            return stepping.Stop("sampled")
        return stop

    def select(self, thread_id, frame_index):
        for thread in gdb.selected_inferior().threads():
            if thread.is_valid() and _thread_id(thread) == thread_id:
                thread.switch()
                try:
                    self._frame(frame_index).select()
                except gdb.error:
                    pass
                return

    def check_can_sample(self):
        if gdb.selected_inferior().connection is None or self._live_pid() is None:
            raise UserError("async sample stops the program with a signal, which needs a process on this machine")
        text = gdb.execute("info signals SIGINT", to_string=True)
        row = next((line.split() for line in text.splitlines() if line.startswith("SIGINT")), [])
        if len(row) >= 4 and row[3] == "Yes":
            raise UserError("async sample stops the program with SIGINT, which GDB is set to pass to it "
                            "(handle SIGINT pass); set `handle SIGINT nopass` first")

    @staticmethod
    def _live_pid():
        return GdbAdapter().live_pid()


class _c_language:
    """The conditions are written in C (as LLDB takes them): GDB parses a breakpoint's
    expressions in the language current when it is made, and keeps that language."""

    def __enter__(self):
        self.language = gdb.parameter("language")
        gdb.execute("set language c", to_string=True)

    def __exit__(self, *_):
        gdb.execute("set language %s" % self.language, to_string=True)


class AsyncSteppingCommand(gdb.Command):
    """One of the commands that run the program to follow a task; help from the core's table."""

    def __init__(self, name, command):
        self.__doc__ = commands.help_text(command)
        super().__init__("async " + name, gdb.COMMAND_RUNNING)
        self.command = command

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        _run_quietly(lambda: commands.execute_stepping(GdbAdapter, GdbStepper, self.command, argument))


def _run_quietly(execute):
    """Runs a command that resumes the program, and prints its output or its one line.
    GDB would print each inner stop; the command prints where it ends."""
    quiet = gdb.parameter("suppress-cli-notifications")
    gdb.execute("set suppress-cli-notifications on", to_string=True)
    try:
        output, error = execute()
    finally:
        gdb.execute("set suppress-cli-notifications %s" % ("on" if quiet else "off"), to_string=True)
    if error is not None:
        gdb.write(error + "\n", gdb.STDERR)
    else:
        gdb.write(output)


class AsyncSampleCommand(gdb.Command):
    """Sample where the tasks wait; help from the core's table."""

    def __init__(self):
        self.__doc__ = commands.help_text(sampling.SAMPLE)
        super().__init__("async " + sampling.SAMPLE, gdb.COMMAND_RUNNING)

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        _run_quietly(lambda: commands.execute_sampling(GdbAdapter, GdbStepper, argument))

    def complete(self, text, word):
        return gdb.COMPLETE_FILENAME
