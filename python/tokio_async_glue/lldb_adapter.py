"""LLDB's side: threads, registers, memory and frames through LLDB's SB API, and the
`async` commands. Loaded by lldb-scripts/tokio_async.py. Nothing here depends on LLDB's
view of Rust types (LLDB cannot represent Rust enums)."""

import json
import os
import re
import shlex
import threading

import lldb

from . import commands, sampling, stepping
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
from .thread_pointers import ThreadPointerError, glibc_thread_pointers, is_thread_pointer

STOPPED_STATES = (lldb.eStateStopped, lldb.eStateCrashed, lldb.eStateSuspended)
# When each stop happened: noted by a stop hook (`StopClockHook`), or at the end of a
# resume run here (stepping, sampling), else at the first command at that stop.
STOP_CLOCKS = StopClocks()


def _stop_of(process):
    return (process.GetUniqueID(), process.GetStopID())


class StopClockHook:
    """A scripted stop hook (`target stop-hook add -P`) noting when each stop happened:
    LLDB gives scripts no stop event of their own that is safe to take (a second process
    listener would run breakpoint actions on its thread in older LLDBs)."""

    def __init__(self, target, extra_args, internal_dict):
        pass

    def handle_stop(self, exe_ctx, stream):
        process = exe_ctx.GetProcess()
        if process.IsValid():
            STOP_CLOCKS.saw_stop(_stop_of(process))
        return True


# Targets (by debugger id and target index) given the stop hook; debuggers (by id) whose
# later targets have it from LLDB's dummy target.
_hooked_targets = set()
_hooked_debuggers = set()


def clock_stops(debugger, target=None):
    """Adds the stop hook to `target`, once, where it is the selected one (the command adds
    it there). With no target yet, to LLDB's dummy target, which every target made later
    copies: their first stop (a breakpoint, an attach) is timed too."""
    if debugger.GetID() in _hooked_debuggers:
        return
    if target is None or not target.IsValid():
        if debugger.GetSelectedTarget().IsValid():
            return
        _hooked_debuggers.add(debugger.GetID())
    elif target != debugger.GetSelectedTarget():
        return
    else:
        key = (debugger.GetID(), debugger.GetIndexOfTarget(target))
        if key in _hooked_targets:
            return
        _hooked_targets.add(key)
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(
        "target stop-hook add -P tokio_async_glue.lldb_adapter.StopClockHook", result
    )


class LldbAdapter(DebuggerAdapter):
    def __init__(self, debugger, exe_ctx=None, target=None):
        self.debugger = debugger
        self.target = exe_ctx.GetTarget() if exe_ctx is not None and exe_ctx.GetTarget().IsValid() else target
        if self.target is None:
            self.target = debugger.GetSelectedTarget()
        self.process = self.target.GetProcess() if self.target.IsValid() else lldb.SBProcess()

    def check_process(self):
        if not self.target.IsValid():
            raise UserError("no program loaded; `file PATH` (and run, attach or load a core) first")
        if not self.process.IsValid() or self.process.GetState() in (
            lldb.eStateInvalid,
            lldb.eStateUnloaded,
            lldb.eStateExited,
            lldb.eStateDetached,
        ):
            raise UserError("the program is not running; start it (run) or attach (lldb -p PID) or load a core first")
        if self.process.GetState() not in STOPPED_STATES:
            raise UserError("the process is running; stop it first (process interrupt)")

    def _executable_module(self):
        return self.target.FindModule(self.target.GetExecutable())

    def executable_path(self):
        spec = self.target.GetExecutable()
        return spec.fullpath if spec.IsValid() else None

    def how_to_load_running_executable(self, pid):
        return "`process detach`, `target create /proc/%d/exe`, `process attach -p %d`" % (pid, pid)

    def executable_build_id(self):
        module = self._executable_module()
        uuid = module.GetUUIDString() if module.IsValid() else None
        return uuid.replace("-", "").lower() if uuid else None

    def debug_file_path(self):
        module = self._executable_module()
        spec = module.GetSymbolFileSpec() if module.IsValid() else None
        path = spec.fullpath if spec is not None and spec.IsValid() else None
        return path if path and path != self.executable_path() else None

    def debug_file_directories(self):
        # A file-list setting reads back as one string, "  [0]: /a  [1]: /b".
        values = lldb.SBDebugger.GetInternalVariableValue(
            "target.debug-file-search-paths", self.debugger.GetInstanceName()
        )
        text = " ".join(values.GetStringAtIndex(i) for i in range(values.GetSize()))
        return [path.strip() for path in re.split(r"\s*\[\d+\]: ", text) if path.strip()]

    def entry_address(self):
        module = self._executable_module()
        if not module.IsValid():
            return None
        address = module.GetObjectFileEntryPointAddress().GetLoadAddress(self.target)
        return None if address == lldb.LLDB_INVALID_ADDRESS else address

    def live_pid(self):
        if self.process.GetPluginName() == "gdb-remote" and self.target.GetPlatform().GetName() == "host":
            return self.process.GetProcessID()
        return None

    def stop_key(self):
        # LLDB counts stops and resumes (expression evaluation included) per process.
        if not self.process.IsValid():
            return None
        return (self.target.GetExecutable().fullpath, self.process.GetProcessID(), self.process.GetUniqueID(), self.process.GetStopID())

    def stop_clock(self):
        if not self.process.IsValid():
            return None
        clock = STOP_CLOCKS.clock_of(_stop_of(self.process))
        # The stops after this one are noted when they happen.
        clock_stops(self.debugger, self.target)
        return clock

    def is_core(self):
        # LLDB 14 cannot say which file, but says it is a core.
        return self.process.IsValid() and self.process.GetPluginName() in ("elf-core", "minidump")

    def core_file_path(self):
        if self.process.GetPluginName() != "elf-core" or not hasattr(self.process, "GetCoreFile"):
            return None  # LLDB 14 cannot say which file
        path = self.process.GetCoreFile().fullpath
        return path or None

    def interrupt_requested(self):
        # LLDB 17 and later: Ctrl-C sets the debugger's interrupt request.
        requested = getattr(self.debugger, "InterruptRequested", None)
        return bool(requested()) if requested is not None else False

    def text_style(self):
        # LLDB turns use-color off itself when its output is no terminal. Its frame format
        # paints file names cyan and numbers yellow; names it leaves plain (bold here).
        if not self.debugger.GetUseColor():
            return None
        return {"function": ansi_escape(intensity="bold"), "file": ansi_escape("cyan"), "state": ansi_escape("yellow")}

    def read_memory(self, address, size):
        error = lldb.SBError()
        data = self.process.ReadMemory(address, size, error)
        if not error.Success() or data is None or len(data) != size:
            return None
        return bytes(data)

    def threads(self, block_on_frames):
        return [ThreadInfo(tid, name, fs_base, self._frames(thread, block_on_frames)) for thread, tid, name, fs_base in self._each_thread()]

    def thread_registers(self):
        return [ThreadRegisters(tid, name, fs_base, _newest_registers(thread)) for thread, tid, name, fs_base in self._each_thread()]

    def _each_thread(self):
        """(thread, tid, name, thread pointer) of every thread."""
        # ELF cores record no thread names; LLDB labels one thread with the process name
        # from NT_PRPSINFO, which would mislabel it. Report none, as GDB does.
        is_core = self.process.GetPluginName() == "elf-core"
        result = []
        fallback = None
        for thread in self.process:
            fs_base = _register(thread.GetFrameAtIndex(0), commands.register_names().thread_pointer)
            # A register whose value is no thread pointer (LLDB's minidumps, or a core whose
            # thread-locals were lost) yields to glibc's list where that list can be read.
            if fs_base is None or not is_thread_pointer(fs_base, self.read_memory):
                if fallback is None:
                    fallback = self._glibc_thread_pointers(required=fs_base is None)
                fs_base = fallback.get(thread.GetThreadID(), fs_base)
            result.append((thread, thread.GetThreadID(), None if is_core else thread.GetName(), fs_base))
        return result

    def _glibc_thread_pointers(self, required):
        """LLDB 14 has no fs_base register, and LLDB's minidumps a wrong one: find thread
        pointers in glibc's thread list. Where that fails, a register read stands if there
        was one (`required` false), but a minidump's does not."""
        try:
            return glibc_thread_pointers(self._symbol_address, self._read_static, self.read_memory)
        except ThreadPointerError as error:
            if self.process.GetPluginName() == "minidump":
                raise UserError(
                    "this core is an LLDB minidump, which gives no thread pointers, and glibc's thread list is not "
                    "readable in it (%s): `process save-core` keeps only the threads' stacks unless asked; save it "
                    "with `process save-core -s modified-memory FILE` or `-s full`" % error
                ) from None
            if not required:
                return {}
            raise UserError(
                "this LLDB (%s) gives no fs_base register, and reading glibc's thread list failed: %s"
                % (lldb.debugger.GetVersionString().split("\n")[0], error)
            ) from None

    def _symbol_address(self, name):
        for context in self.target.FindSymbols(name):
            address = context.GetSymbol().GetStartAddress().GetLoadAddress(self.target)
            if address != lldb.LLDB_INVALID_ADDRESS:
                return address
        return None

    def _read_static(self, address, size):
        """Constant data: from the process, else from the library file (cores omit it)."""
        data = self.read_memory(address, size)
        if data is not None:
            return data
        error = lldb.SBError()
        data = self.target.ReadMemory(self.target.ResolveLoadAddress(address), size, error)
        return bytes(data) if error.Success() and data is not None and len(data) == size else None

    def _frames(self, thread, block_on_frames):
        frames = []
        needs_of_thread = FrameNeedsOfThread(block_on_frames)
        for index in range(min(thread.GetNumFrames(), MAX_FRAMES)):
            frame = thread.GetFrameAtIndex(index)
            inlined = frame.IsInlined()
            needs = needs_of_thread.of(frame.GetFunctionName() or "", inlined)
            file, line = None, None
            if needs.line:
                line_entry = frame.GetLineEntry()
                file = line_entry.GetFileSpec().fullpath if line_entry.IsValid() else None
                line = (line_entry.GetLine() or None) if line_entry.IsValid() else None
            sp = frame.GetSP() if needs.registers else lldb.LLDB_INVALID_ADDRESS
            fp = frame.GetFP() if needs.registers else lldb.LLDB_INVALID_ADDRESS
            info = FrameInfo(
                frame.GetPC(), inlined, file, line,
                None if sp == lldb.LLDB_INVALID_ADDRESS else sp, None if fp == lldb.LLDB_INVALID_ADDRESS else fp,
            )
            for local in needs.locals:
                self._read_local(frame, local, info)
            frames.append(info)
        return frames

    def _read_local(self, frame, local, info):
        value = frame.FindVariable(local)
        if not value.IsValid():
            return  # No such local in this frame.
        address = value.GetLoadAddress()
        size = value.GetByteSize()
        if address != lldb.LLDB_INVALID_ADDRESS and size:
            data = self.read_memory(address, size)
            if data is not None:
                info.locals[local] = data
                return
        error = lldb.SBError()
        data = value.GetData()
        raw = data.ReadRawData(error, 0, data.GetByteSize()) if data.IsValid() and data.GetByteSize() else None
        if error.Success() and raw:
            info.locals[local] = bytes(raw)
        else:
            info.local_errors[local] = "`%s` is optimized out in this build" % local


def _newest_registers(thread):
    """`thread`'s registers where it stopped, by DWARF number."""
    frame = thread.GetFrameAtIndex(0)
    return [_register(frame, name) for name in commands.register_names().by_dwarf_number]


def _register(frame, name):
    """A register's raw value in `frame`; None where LLDB has none. Raw: rust-lldb's
    formatters make every value synthetic, whose reads differ."""
    register = frame.FindRegister(name).GetNonSyntheticValue()
    if not register.IsValid():
        return None
    error = lldb.SBError()
    value = register.GetValueAsUnsigned(error, 0)
    return value if error.Success() else None


def _run(command, debugger, argument, exe_ctx, result):
    output, error = commands.execute(lambda: LldbAdapter(debugger, exe_ctx), command, argument)
    if error is not None:
        result.SetError(error)
    else:
        result.PutCString(output.rstrip("\n"))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class _Help:
    """Help for the `async` subcommand `command`, from the core's table."""

    command = commands.BACKTRACE

    def get_short_help(self):
        return commands.short_help(self.command)

    def get_long_help(self):
        return commands.help_text(self.command)


class _RawCommand(_Help):
    """An `async` subcommand taking its arguments as one string (every LLDB)."""

    def __init__(self, debugger, internal_dict):
        pass

    def __call__(self, debugger, argument, exe_ctx, result):
        _run(self.command, debugger, argument, exe_ctx, result)


try:  # LLDB 18 and later: commands whose options LLDB parses, and so completes.
    from lldb.plugins.parsed_cmd import ParsedCommand
except ImportError:
    ParsedCommand = None

if ParsedCommand is not None:

    class _ParsedCommand(_Help, ParsedCommand):
        """An `async` subcommand whose options come from commands.OPTIONS, so that LLDB
        completes them (and STATE and KIND values, and file names); it hands the same
        words to the shared parser as the raw command would. Task ids cannot be completed:
        LLDB 19 has no hook for a script's own argument completion."""

        def _options(self):
            return [option for option in commands.OPTIONS if self.command in option.commands]

        def setup_command_definition(self):
            parser = self.get_parser()
            for option in self._options():
                choices = option.choices
                if option.long == "waiting-on":
                    choices = tuple(commands.node_kinds())
                value_type = {
                    None: lldb.eArgTypeNone, "FILE": lldb.eArgTypeFilename, "REGEX": lldb.eArgTypeRegularExpression,
                    "N": lldb.eArgTypeCount, "ADDRESS": lldb.eArgTypeAddress, "SECONDS": lldb.eArgTypeValue,
                }.get(option.value, lldb.eArgTypeNone)
                parser.add_option(
                    option.short, option.long, option.help, None, dest=option.long.replace("-", "_"),
                    value_type=value_type, enum_values=[[choice, choice] for choice in choices] or None,
                )
                if option.value is None:
                    # No value_type: LLDB takes the option as a flag without a value.
                    del parser.get_option_element(option.long)["value_type"]
            parser.add_argument_set([parser.make_argument_element(lldb.eArgTypeNone, repeat="star")])

        def set_option_value(self, exe_ctx, opt_name, opt_value):
            element = self.get_parser().get_option_element(opt_name)
            if element is not None and "value_type" not in element:
                setattr(self.get_parser(), element["dest"], True)
                return True
            return super().set_option_value(exe_ctx, opt_name, opt_value)

        def __call__(self, debugger, args_list, exe_ctx, result):
            try:
                argument = self._words(args_list)
            except Exception as error:
                result.SetError("tokio-async: internal error: cannot read the arguments: %s" % (error,))
                return
            _run(self.command, debugger, argument, exe_ctx, result)

        def _words(self, args_list):
            """The arguments and the options set, as the words of the raw command."""
            words = [_string(args_list.GetItemAtIndex(i)) for i in range(args_list.GetSize())]
            parser = self.get_parser()
            for option in self._options():
                value = getattr(parser, option.long.replace("-", "_"), None)
                if option.value is None and value:
                    words.append("--" + option.long)
                elif option.value is not None and value is not None:
                    words += ["--" + option.long, str(value)]
            return " ".join(shlex.quote(word) for word in words)


def _string(data):
    """An SBStructuredData string (an argument of a parsed command)."""
    return data.GetStringValue(1 << 16)


_CLASSES = {
    commands.BACKTRACE: "BacktraceCommand", commands.TASKS: "TasksCommand", commands.TASK: "TaskCommand", commands.WAITS: "WaitsCommand",
    commands.DIFF: "DiffCommand",
}
# LLDB finds a command's class by its dotted name: one named class per command and kind.
for _command, _name in _CLASSES.items():
    globals()["Async" + _name] = type("Async" + _name, (_RawCommand,), {"command": _command})
    if ParsedCommand is not None:
        globals()["Parsed" + _name] = type("Parsed" + _name, (_ParsedCommand,), {"command": _command})
_NAMES = (
    ("backtrace", commands.BACKTRACE), ("bt", commands.BACKTRACE), ("tasks", commands.TASKS), ("task", commands.TASK),
    ("waits", commands.WAITS), ("diff", commands.DIFF),
)


def register(debugger):
    """Adds the `async` commands; importing twice replaces them (-o)."""
    interpreter = debugger.GetCommandInterpreter()
    # LLDB resolves the class by name in its own script namespace.
    interpreter.HandleCommand("script import tokio_async_glue.lldb_adapter", lldb.SBCommandReturnObject())
    steps = ["command container add -o -h '%s' async" % commands.HELP_ASYNC]
    for name, command in _NAMES:
        kind = ("-p -c tokio_async_glue.lldb_adapter.Parsed" if ParsedCommand is not None else "-c tokio_async_glue.lldb_adapter.Async")
        steps.append("command script add -o %s%s async %s" % (kind, _CLASSES[command], name))
    for name, command in [(command, command) for command in stepping.COMMANDS] + [("n", stepping.NEXT)]:
        steps.append("command script add -o -c tokio_async_glue.lldb_adapter.Async%s async %s" % (_STEPPING_CLASSES[command], name))
    steps.append("command script add -o -c tokio_async_glue.lldb_adapter.AsyncSampleCommand async %s" % sampling.SAMPLE)
    for step in steps:
        result = lldb.SBCommandReturnObject()
        interpreter.HandleCommand(step, result)
        if not result.Succeeded():
            print("tokio-async: could not register commands: %s" % (result.GetError() or step).strip())
            return
    # Imported with a target already there (lldb -p PID, then import): index its DWARF now;
    # a target made later is indexed when LLDB loads its modules.
    if debugger.GetSelectedTarget().IsValid():
        clock_stops(debugger, debugger.GetSelectedTarget())
        commands.preload_for(LldbAdapter(debugger))
    else:
        clock_stops(debugger)
    _preload_on_module_loads(debugger)
    _interrupt_when_asked(debugger)


# Debuggers (by id) whose module loads are being listened to.
_listening = set()


def _preload_on_module_loads(debugger):
    """Starts indexing a program's DWARF when LLDB loads it (`file`, `target create`,
    attach, a core), as GDB's new_objfile event does, so that the first command finds it
    done. LLDB has no script callback for this, so a daemon thread waits on a listener of
    its own; the debugger's listeners still get every event. TOKIO_ASYNC_PRELOAD=0 turns
    it off, as it does the preload itself."""
    if debugger.GetID() in _listening or os.environ.get("TOKIO_ASYNC_PRELOAD", "1") == "0":
        return
    listener = lldb.SBListener("tokio-async-preload")
    events = lldb.SBTarget.eBroadcastBitModulesLoaded
    if not listener.StartListeningForEventClass(debugger, lldb.SBTarget.GetBroadcasterClassName(), events):
        return
    _listening.add(debugger.GetID())

    def wait_for_module_loads():
        event = lldb.SBEvent()
        while True:
            try:
                # The SB call releases Python's lock while it waits.
                if listener.WaitForEvent(60, event):
                    target = lldb.SBTarget.GetTargetFromEvent(event)
                    if target.IsValid():
                        commands.preload_for(LldbAdapter(debugger, target=target))
            except Exception as error:
                commands.note_preload_failure(error)

    threading.Thread(target=wait_for_module_loads, name="tokio-async-preload", daemon=True).start()


# Debuggers (by id) whose interrupt FIFO is read.
_interruptible = set()


def _interrupt_when_asked(debugger):
    """Under `tokio-async dap`, which sets TOKIO_ASYNC_INTERRUPT_FIFO: lldb-dap answers no
    request while a REPL command runs the program (`async until-polled` may wait long), so
    the proxy asks for the interrupt by writing to this FIFO, and a daemon thread here
    interrupts the program as Ctrl-C does in LLDB's console; the command then ends."""
    path = os.environ.get("TOKIO_ASYNC_INTERRUPT_FIFO")
    if not path or debugger.GetID() in _interruptible:
        return
    _interruptible.add(debugger.GetID())

    def wait_for_interrupts():
        while True:
            try:
                # Blocks (without Python's lock) until the proxy opens it to write.
                with open(path, "rb") as fifo:
                    while fifo.read(1):
                        process = debugger.GetSelectedTarget().GetProcess()
                        if process.IsValid():
                            process.SendAsyncInterrupt()
            except OSError:
                return  # the proxy is gone, and its FIFO with it

    threading.Thread(target=wait_for_interrupts, name="tokio-async-interrupt", daemon=True).start()


def persist_values(debugger, spec):
    """Under `tokio-async dap` (rust-core/src/dap/held.rs): makes each value a task's frame
    holds across its await a value of LLDB's own, so that the editor expands it as it does
    LLDB's variables. `spec` is JSON: for each local, the coroutine holding it (its type,
    address and await point) and the local's name, address and type. Prints, as JSON, the
    persistent variable (`$N`) naming each for this stop, or null where LLDB cannot make it.
    Only memory is read: evaluating `$N` takes the persistent variable as it is."""
    target = debugger.GetSelectedTarget()
    names = []
    for holder_type, holder_address, await_point, name, address, type_name in json.loads(spec):
        value = _held_in(target, holder_type, holder_address, await_point, name, address)
        if value is None:
            # LLDB finds a type by the name Rust gives it only where it spells it alike
            # (no primitive among its generic arguments).
            sbtype = target.FindFirstType(type_name)
            if sbtype.IsValid():
                value = target.CreateValueFromAddress(name, lldb.SBAddress(address, target), sbtype)
        if value is None or not value.IsValid() or value.GetError().Fail():
            names.append(None)
            continue
        persisted = value.Persist()
        names.append(persisted.GetName() if persisted.IsValid() else None)
    print(json.dumps(names))


def _held_in(target, holder_type, holder_address, await_point, name, address):
    """The local `name` at `address` among the fields of the coroutine holding it: LLDB
    shows a coroutine's variants as `$variants$` > `$variant$K` > `value`, whose type
    ends in `::SuspendN` for await N."""
    sbtype = target.FindFirstType(holder_type) if holder_type else None
    if sbtype is None or not sbtype.IsValid():
        return None
    holder = target.CreateValueFromAddress("holder", lldb.SBAddress(holder_address, target), sbtype)
    suspended = "::Suspend%d" % await_point
    found = None
    variants = holder.GetChildMemberWithName("$variants$")
    for index in range(min(variants.GetNumChildren(), 4096)):
        variant = variants.GetChildAtIndex(index).GetChildMemberWithName("value")
        local = variant.GetChildMemberWithName(name)
        if not local.IsValid() or local.GetLoadAddress() != address:
            continue
        if variant.GetType().GetName().endswith(suspended):
            return local
        found = found or local
    return found


# How deep in a thread's stack the wake's state transition may be.
WAKE_FRAMES = 16


class LldbStepper(stepping.Stepper):
    """The stepping commands' primitives in LLDB: its thread plans (step over, step out),
    `process continue`, breakpoints and watchpoints by address with conditions, and the
    threads' stop reasons. Run synchronously: each call returns once the process stops."""

    def __init__(self, debugger, exe_ctx):
        self.debugger = debugger
        self.target = exe_ctx.GetTarget() if exe_ctx is not None and exe_ctx.GetTarget().IsValid() else debugger.GetSelectedTarget()
        self.process = self.target.GetProcess()
        # Our breakpoints by id: (registers, address) of the instance each stops for.
        self.breakpoints, self.watchpoints = {}, set()

    def _thread(self):
        return self.process.GetSelectedThread()

    def _finish(self, error=None, stepping_thread=None):
        state = self.process.GetState()
        if state in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid):
            return stepping.Stop("exited", text=" with code %d" % self.process.GetExitStatus())
        if error is not None and not error.Success() and state not in STOPPED_STATES:
            raise UserError("cannot run the program: %s" % error.GetCString())
        found = None
        for thread in self.process:
            reason = thread.GetStopReason()
            if reason == lldb.eStopReasonBreakpoint:
                number = thread.GetStopReasonDataAtIndex(0)
                if number in self.breakpoints:
                    if not self._holds_instance(thread, number):
                        continue  # It reached ours too, for another instance.
                    stop = stepping.Stop("ours", handle=("breakpoint", number))
                elif number < 1 << 31 and self.target.FindBreakpointByID(number).IsValid():
                    stop = stepping.Stop("breakpoint", text="breakpoint %d" % number)
                else:
                    continue  # A thread plan's own breakpoint, or a stale one.
            elif reason == lldb.eStopReasonWatchpoint:
                number = thread.GetStopReasonDataAtIndex(0)
                if number in self.watchpoints:
                    stop = stepping.Stop("ours", handle=("watchpoint", number))
                else:
                    stop = stepping.Stop("breakpoint", text="watchpoint %d" % number)
            elif reason == lldb.eStopReasonSignal:
                name = self.process.GetUnixSignals().GetSignalAsCString(thread.GetStopReasonDataAtIndex(0))
                if name == "SIGTRAP":
                    # A thread that reached a breakpoint removed before LLDB saw it (a step's,
                    # or ours): nothing of the user's.
                    continue
                # LLDB stops the program with SIGSTOP when the user presses Ctrl-C.
                interrupted = name in ("SIGINT", "SIGSTOP")
                stop = stepping.Stop("interrupted" if interrupted else "signal", text=name or "a signal")
            elif reason in (lldb.eStopReasonPlanComplete, lldb.eStopReasonTrace):
                if thread.GetThreadID() != stepping_thread:
                    continue  # Another thread's leftover: not the step asked for.
                stop = stepping.Stop("step")
            elif reason == lldb.eStopReasonException:
                stop = stepping.Stop("signal", text=thread.GetStopDescription(256) or "an exception")
            else:
                continue
            # The user's stop first, then ours, then a finished step.
            rank = {"breakpoint": 0, "signal": 0, "interrupted": 0, "ours": 1, "step": 2}[stop.kind]
            if found is None or rank < found[0]:
                found = (rank, stop, thread)
        if found is None:
            # Nothing of ours or the user's: the stepping thread's plan is not done yet (it
            # is kept as the program goes on).
            return stepping.Stop("spurious")
        self.process.SetSelectedThread(found[2])
        return found[1]

    def _holds_instance(self, thread, number):
        registers, value = self.breakpoints[number]
        frame = thread.GetFrameAtIndex(0)
        return any(frame.FindRegister(name).GetNonSyntheticValue().GetValueAsUnsigned(0) == value for name in registers)

    def _until_real_stop(self, run):
        """Runs `run` and, while the only stop is a stale trap, lets the program go on (the
        thread plan in progress stays)."""
        stop = run()
        for _ in range(stepping.MAX_ROUNDS):
            if stop.kind != "spurious":
                return stop
            stop = self._finish(self.process.Continue())
        raise UserError("the program keeps stopping on traps of removed breakpoints")

    def _synchronously(self, run):
        was_async = self.debugger.GetAsync()
        self.debugger.SetAsync(False)
        try:
            stop = run()
            if self.process.IsValid() and self.process.GetState() in STOPPED_STATES:
                STOP_CLOCKS.saw_stop(_stop_of(self.process))
            return stop
        finally:
            self.debugger.SetAsync(was_async)

    def selected_thread_id(self):
        return self._thread().GetThreadID()

    def selected_frame_index(self):
        return self._thread().GetSelectedFrame().GetFrameID()

    def frames_with_registers(self):
        frames = []
        thread = self._thread()
        for index in range(min(thread.GetNumFrames(), MAX_FRAMES)):
            frame = thread.GetFrameAtIndex(index)
            line_entry = frame.GetLineEntry()
            registers = {}
            for name in commands.register_names().general:
                value = _register(frame, name)
                if value is not None:
                    registers[name] = value
            frames.append({
                "pc": frame.GetPC(), "inlined": frame.IsInlined(),
                "file": line_entry.GetFileSpec().fullpath if line_entry.IsValid() else None,
                "line": (line_entry.GetLine() or None) if line_entry.IsValid() else None,
                "registers": registers, "function": frame.GetFunctionName() or "",
            })
        return frames

    def frame_key(self, index):
        thread = self._thread()
        frame = thread.GetFrameAtIndex(index or 0)
        start = frame.GetFunction().GetStartAddress().GetLoadAddress(self.target) if frame.GetFunction().IsValid() else None
        return (thread.GetThreadID(), frame.GetCFA(), start, frame.GetBlock().GetInlinedName())

    def next_line(self):
        def run():
            error = lldb.SBError()
            thread = self._thread()
            thread.StepOver(lldb.eOnlyDuringStepping, error)
            return self._finish(error, stepping_thread=thread.GetThreadID())
        return self._synchronously(lambda: self._until_real_stop(run))

    def finish_frame(self, index):
        def run():
            thread = self._thread()
            error = lldb.SBError()
            frame = thread.GetFrameAtIndex(index or 0)
            if hasattr(thread, "StepOutOfFrame"):
                thread.StepOutOfFrame(frame, error)
            else:
                thread.StepOut()
            stop = self._until_real_stop(lambda: self._finish(error, stepping_thread=thread.GetThreadID()))
            if stop.kind == "step":
                value = self._thread().GetStopReturnValue()
                if value.IsValid():
                    text = str(value)
                    text = text.split(" = ", 1)[-1] if " = " in text else text
                    # LLDB 14 shows a Rust enum (Poll<T>) as an empty struct: that is no value.
                    if text.strip() not in ("", "{}"):
                        stop = stop._replace(returned=text)
            return stop
        return self._synchronously(run)

    def next_instruction(self):
        def run():
            thread = self._thread()
            error = lldb.SBError()
            thread.StepInstruction(True, error)
            return self._finish(error, stepping_thread=thread.GetThreadID())
        return self._synchronously(lambda: self._until_real_stop(run))

    def resume(self):
        return self._synchronously(lambda: self._until_real_stop(lambda: self._finish(self.process.Continue())))

    def add_breakpoint(self, address, condition):
        breakpoint = self.target.BreakpointCreateByAddress(address)
        if not breakpoint.IsValid():
            raise UserError("cannot set a breakpoint at 0x%x" % address)
        registers, value = _parse_register_condition(condition)
        if os.environ.get("TOKIO_ASYNC_LLDB_CONDITIONS") == "expression":
            breakpoint.SetCondition(condition)
        else:
            extra = lldb.SBStructuredData()
            extra.SetFromJSON('{"registers": %s, "value": "%d"}' % (json.dumps(registers), value))
            breakpoint.SetScriptCallbackFunction("tokio_async_glue.lldb_adapter.holds_instance", extra)
        self.breakpoints[breakpoint.GetID()] = (registers, value)
        return ("breakpoint", breakpoint.GetID())

    def add_write_watchpoint(self, address, size, condition):
        error = lldb.SBError()
        watchpoint = self.target.WatchAddress(address, size, False, True, error)
        if not error.Success() or not watchpoint.IsValid():
            raise UserError("no hardware watchpoint left to watch the task's state (%s)" % (error.GetCString() or "refused"))
        watchpoint.SetCondition(condition)
        self.watchpoints.add(watchpoint.GetID())
        return ("watchpoint", watchpoint.GetID())

    def set_enabled(self, handle, enabled):
        kind, number = handle
        if kind == "breakpoint":
            self.target.FindBreakpointByID(number).SetEnabled(enabled)
        else:
            self.target.FindWatchpointByID(number).SetEnabled(enabled)

    def remove(self, handle):
        kind, number = handle
        if kind == "breakpoint":
            self.breakpoints.pop(number, None)
            self.target.BreakpointDelete(number)
        else:
            self.watchpoints.discard(number)
            self.target.DeleteWatchpoint(number)

    def where(self):
        stream = lldb.SBStream()
        self._thread().GetStatus(stream)
        return stream.GetData()

    def select_thread_in(self, functions):
        selected = self._thread()
        others = [thread for thread in self.process if thread.GetThreadID() != selected.GetThreadID()]
        for thread in [selected] + others:
            for index in range(min(thread.GetNumFrames(), WAKE_FRAMES)):
                name = thread.GetFrameAtIndex(index).GetFunctionName() or ""
                if any(function in name for function in functions):
                    self.process.SetSelectedThread(thread)
                    return True
        return False

    def run_for(self, seconds):
        fired = threading.Event()

        def interrupt():
            fired.set()
            self.process.SendAsyncInterrupt()

        timer = threading.Timer(seconds, interrupt)
        timer.start()
        try:
            stop = self.resume()
        finally:
            timer.cancel()
        # LLDB stops the program with SIGSTOP for an interrupt, ours or Ctrl-C's. A SIGINT
        # the program got is the user's even when our interrupt was sent as it came: LLDB
        # drops an interrupt that finds the program stopped.
        if stop.kind == "interrupted" and fired.is_set() and stop.text == "SIGSTOP":
            return stepping.Stop("sampled")
        return stop

    def select(self, thread_id, frame_index):
        if self.process.SetSelectedThreadByID(thread_id):
            self._thread().SetSelectedFrame(frame_index or 0)

    def check_can_sample(self):
        if LldbAdapter(self.debugger, target=self.target).live_pid() is None:
            raise UserError("async sample stops the program every interval, which needs a process on this machine")

    def thread_description(self):
        thread = self._thread()
        return 'thread %d "%s"' % (thread.GetThreadID(), thread.GetName() or "")


def _parse_register_condition(condition):
    """`$rdi == 0x10 || $rsi == 0x10` -> (["rdi", "rsi"], 0x10)."""
    registers = re.findall(r"\$(\w+) ==", condition)
    values = set(re.findall(r"== (0x[0-9a-f]+)", condition))
    return registers, int(values.pop(), 16)


def holds_instance(frame, location, extra_args, internal_dict):
    """A stepping breakpoint's test: stop only if a register holds the coroutine's address."""
    value = int(extra_args.GetValueForKey("value").GetStringValue(32))
    names = extra_args.GetValueForKey("registers")
    for index in range(names.GetSize()):
        register = frame.FindRegister(names.GetItemAtIndex(index).GetStringValue(16)).GetNonSyntheticValue()
        if register.IsValid() and register.GetValueAsUnsigned(0) == value:
            return True
    return False


class _SteppingCommand(_Help):
    """A stepping command (stepping.py), its arguments as one string."""

    def __init__(self, debugger, internal_dict):
        pass

    def __call__(self, debugger, argument, exe_ctx, result):
        output, error = commands.execute_stepping(
            lambda: LldbAdapter(debugger, exe_ctx), lambda: LldbStepper(debugger, exe_ctx), self.command, argument
        )
        if error is not None:
            result.SetError(error)
        else:
            result.PutCString(output.rstrip("\n"))
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


_STEPPING_CLASSES = {
    stepping.NEXT: "NextCommand", stepping.STEP: "StepCommand", stepping.FINISH: "FinishCommand",
    stepping.UNTIL_POLLED: "UntilPolledCommand", stepping.UNTIL_WOKEN: "UntilWokenCommand",
}
for _command, _name in _STEPPING_CLASSES.items():
    globals()["Async" + _name] = type("Async" + _name, (_SteppingCommand,), {"command": _command})


class AsyncSampleCommand(_Help):
    """`async sample` (sampling.py), its arguments as one string."""

    command = sampling.SAMPLE

    def __init__(self, debugger, internal_dict):
        pass

    def __call__(self, debugger, argument, exe_ctx, result):
        output, error = commands.execute_sampling(
            lambda: LldbAdapter(debugger, exe_ctx), lambda: LldbStepper(debugger, exe_ctx), argument
        )
        if error is not None:
            result.SetError(error)
        else:
            result.PutCString(output.rstrip("\n"))
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
