"""Python that runs inside the debugger for tests that handle the stopped inferior
themselves: resume it to a breakpoint, snapshot its state, damage its memory. Each
debugger gets the same helper names, so one test body runs in GDB and LLDB alike. Whatever
these helpers write or resume is the test's doing, never the tool's."""

GDB_HELPERS = r'''
import gdb

def run_command(command):
    """The command's output, our one-line errors included (GDB captures stderr too)."""
    try:
        return gdb.execute(command, to_string=True)
    except gdb.error as error:
        return "error: %s\n" % error

def pid():
    return gdb.selected_inferior().pid

def read_memory(address, size):
    return bytes(gdb.selected_inferior().read_memory(address, size))

def write_memory(address, data):
    gdb.selected_inferior().write_memory(address, data)

def resume():
    """Continues until the next stop; False once the program has exited."""
    gdb.execute("continue", to_string=True)
    return gdb.selected_inferior().pid != 0

def frame_names(count):
    """Function names of the selected thread's innermost frames."""
    names, frame = [], gdb.newest_frame()
    while frame is not None and len(names) < count:
        names.append(frame.name() or "")
        frame = frame.older()
    return names

def stop_line():
    """The source line the selected thread stopped at."""
    return gdb.newest_frame().find_sal().line

def break_at_line(file, line):
    gdb.Breakpoint("%s:%d" % (file, line))

def delete_breakpoints():
    gdb.execute("delete")

def breakpoint_list():
    return run_command("info breakpoints")

REGISTERS = ("rip", "rsp", "rbp", "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
             "r12", "r13", "r14", "r15", "eflags", "fs_base")

def selection():
    thread = gdb.selected_thread()
    return [thread.ptid[1], gdb.selected_frame().level()]

def registers():
    """Every thread's innermost registers, by tid; the selection is left as it was."""
    thread, frame = gdb.selected_thread(), gdb.selected_frame()
    values = {}
    try:
        for other in gdb.selected_inferior().threads():
            other.switch()
            newest = gdb.newest_frame()
            values[str(other.ptid[1])] = {name: int(newest.read_register(name)) for name in REGISTERS}
    finally:
        thread.switch()
        frame.select()
    return values

# Anything that resumes the inferior, calls into it or writes it raises one of these.
EVENTS = ("cont", "inferior_call", "memory_changed", "register_changed", "new_objfile", "exited")
event_counts = {name: 0 for name in EVENTS}

def _counter(name):
    def count(*_):
        event_counts[name] += 1
    return count

for _name in EVENTS:
    getattr(gdb.events, _name).connect(_counter(_name))

def no_call_evidence():
    """What would change if the inferior were resumed or called."""
    return {"events": dict(event_counts), "may-call-functions": gdb.parameter("may-call-functions")}

def try_inferior_call():
    """Calls a function of the program; the error when that is refused."""
    try:
        gdb.parse_and_eval("tokio_async_checkpoint")()
        return "called"
    except gdb.error as error:
        return str(error)
'''

LLDB_HELPERS = r'''
import lldb

def _target():
    return lldb.debugger.GetSelectedTarget()

def _process():
    return _target().GetProcess()

def run_command(command):
    """The command's output, or its error (`error: tokio-async: ...`)."""
    result = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(command, result)
    return (result.GetOutput() or "") + (result.GetError() or "")

def pid():
    return _process().GetProcessID()

def read_memory(address, size):
    error = lldb.SBError()
    data = _process().ReadMemory(address, size, error)
    if not error.Success():
        raise OSError(str(error))
    return bytes(data)

def write_memory(address, data):
    error = lldb.SBError()
    _process().WriteMemory(address, data, error)
    assert error.Success(), error

def resume():
    """Continues until the next stop (the batch-mode debugger is synchronous); False once
    the program has exited."""
    _process().Continue()
    return _process().GetState() not in (lldb.eStateExited, lldb.eStateDetached, lldb.eStateInvalid)

def frame_names(count):
    thread = _process().GetSelectedThread()
    return [thread.GetFrameAtIndex(i).GetFunctionName() or "" for i in range(min(count, thread.GetNumFrames()))]

def stop_line():
    return _process().GetSelectedThread().GetFrameAtIndex(0).GetLineEntry().GetLine()

def break_at_line(file, line):
    assert _target().BreakpointCreateByLocation(file, line).GetNumLocations() > 0, (file, line)

def delete_breakpoints():
    _target().DeleteAllBreakpoints()

def breakpoint_list():
    return run_command("breakpoint list")

def selection():
    thread = _process().GetSelectedThread()
    return [thread.GetThreadID(), thread.GetSelectedFrame().GetFrameID()]

def registers():
    values = {}
    for thread in _process():
        frame = thread.GetFrameAtIndex(0)
        general = frame.GetRegisters().GetValueAtIndex(0)
        values[str(thread.GetThreadID())] = {
            register.GetName(): register.GetValueAsUnsigned() for register in general
        }
    return values

def no_call_evidence():
    """LLDB counts stops, and with `True` also the stops of expression evaluation: any
    resume or inferior call moves one of them."""
    process = _process()
    return {"stop_id": process.GetStopID(), "stop_id_with_expressions": process.GetStopID(True),
            "state": process.GetState()}

def try_inferior_call():
    return run_command("expression -l c -- (int)getpid()")
'''


def helpers(debugger):
    return GDB_HELPERS if debugger.name == "gdb" else LLDB_HELPERS


def script_step(debugger, path, body):
    """Writes the helpers and `body` to `path` (a .py file) and returns the debugger step
    that runs it at that point of the run."""
    path.write_text(helpers(debugger) + body)
    return ("source %s" if debugger.name == "gdb" else "command script import %s") % path


def tagged_lines(run, tag):
    """The payloads of the lines the script printed as `@@tag payload`."""
    prefix = "@@%s " % tag
    return [line[len(prefix):] for line in run.stdout.splitlines() if line.startswith(prefix)]
