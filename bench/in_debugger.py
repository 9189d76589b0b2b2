"""Runs inside GDB or LLDB for bench/run.py: times one command twice (cold, then warm) and
the debugger's own all-threads backtrace, and prints one `RESULT {json}` line.

Each measurement runs in a debugger session of its own, so neither warms the other:
`measure(run, command)` with the command to time."""

import json
import time


def _status(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak_rss():
    # Writing 5 to clear_refs resets VmHWM (Linux 4.0+), so the peak is this command's own.
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass


def measure(run, command, repeats=5, pause=0.0):
    """Cold call, then the best of `repeats` warm calls; RSS growth peak over all of them.
    With `pause`, the cold call comes that many seconds after the session started, as a
    user's first command would."""
    time.sleep(pause)
    _reset_peak_rss()
    rss_before = _status("VmRSS")
    start = time.perf_counter()
    output = run(command)
    cold = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        output = run(command)
        warm.append(time.perf_counter() - start)
    result = {
        "cold": cold,
        "warm": min(warm),
        "rss_delta": _status("VmHWM") - rss_before,
        "bytes": len(output or ""),
        "head": (output or "")[:200],
        "units": _units_read(),
    }
    print("RESULT " + json.dumps(result), flush=True)


def _units_read():
    """[units of the program's DWARF indexed so far, units in it], or None without the script."""
    try:
        from tokio_async_glue import commands
    except ImportError:
        return None
    binaries = list(commands._binaries.values())
    return list(binaries[0].units_read) if binaries else None


def gdb_run(command):
    import gdb

    return gdb.execute(command, to_string=True)


def lldb_run(command):
    import lldb

    result = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(command, result)
    return (result.GetOutput() or "") + (result.GetError() or "")
