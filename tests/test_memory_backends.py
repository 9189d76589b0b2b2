"""The core reads the inferior's memory one of three ways: /proc/PID/mem for a live process,
the core file itself (mapped) for a core, or the debugger's own read call (LLDB 14 on a
core, which cannot name its file, or when TOKIO_ASYNC_MEMORY=debugger asks for it). It
unwinds the threads' stacks itself from their registers where it can list the program's
mapped files (a live process here, a core file), else takes the debugger's walk (LLDB 14
on a core, or when TOKIO_ASYNC_FRAMES=debugger asks for it). On the same stop every way
must give the same report."""

import pytest
from support import build, expect
from support.debuggers import LLDB_14, Gdb, Lldb, capture
from support.process import RunningFixture
from test_kernel_cores import differences, without_clock

DEBUGGER_MEMORY = {"TOKIO_ASYNC_MEMORY": "debugger"}
DEBUGGER_FRAMES = {"TOKIO_ASYNC_FRAMES": "debugger"}


def report_of(debugger, **target):
    run = debugger.run_steps(capture(debugger, "async bt all --json"), **target)
    sections = run.json_sections()
    assert len(sections) == 1, run.stdout + run.stderr
    return sections[0]


def comparable(report, in_core):
    """The report without its memory and stack sources, and for comparing a live process
    with its core, without what only the live machine has (thread names, clocks, /proc facts)."""
    report = dict(report)
    del report["memory_source"]
    del report["stack_source"]
    report.pop("taken_at", None)
    if in_core:
        for thread in report["threads"]:
            thread["name"] = None
    return without_clock(report) if in_core else report


@pytest.mark.parametrize("profile", ["dev", "release"])
def test_every_memory_backend_and_stack_source_give_the_same_report(tmp_path, profile):
    binary = build.fixture("tokio-app", profile)
    core = str(tmp_path / "stop.core")
    # (debugger, memory source, stack source) -> its report.
    with RunningFixture(binary, "hang", str(tmp_path)) as fixture:
        gdb, lldb = Gdb(), Lldb()
        live = {
            ("gdb", "process", "core"): report_of(gdb, pid=fixture.pid),
            ("gdb", "debugger", "core"): report_of(gdb, pid=fixture.pid, env=DEBUGGER_MEMORY),
            ("gdb", "process", "debugger"): report_of(gdb, pid=fixture.pid, env=DEBUGGER_FRAMES),
            ("lldb", "process", "core"): report_of(lldb, pid=fixture.pid),
            ("lldb", "debugger", "core"): report_of(lldb, pid=fixture.pid, env=DEBUGGER_MEMORY),
            ("lldb", "process", "debugger"): report_of(lldb, pid=fixture.pid, env=DEBUGGER_FRAMES),
        }
        gcore = gdb.run_steps(["gcore %s" % core], pid=fixture.pid)
        assert gcore.returncode == 0, gcore.stderr
    cores = {
        ("gdb", "core_file", "core"): report_of(gdb, program=binary, core=core),
        ("gdb", "debugger", "core"): report_of(gdb, program=binary, core=core, env=DEBUGGER_MEMORY),
        ("gdb", "core_file", "debugger"): report_of(gdb, program=binary, core=core, env=DEBUGGER_FRAMES),
        ("lldb", "core_file", "core"): report_of(lldb, program=binary, core=core),
        ("lldb", "debugger", "core"): report_of(lldb, program=binary, core=core, env=DEBUGGER_MEMORY),
        ("lldb", "core_file", "debugger"): report_of(lldb, program=binary, core=core, env=DEBUGGER_FRAMES),
        # LLDB 14 cannot say which file its core is: it reads through the debugger, and
        # walks the stacks itself.
        ("lldb14", "debugger", "debugger"): report_of(LLDB_14, program=binary, core=core),
    }
    for (debugger, memory, stacks), report in list(live.items()) + list(cores.items()):
        assert (report["memory_source"], report["stack_source"]) == (memory, stacks), debugger
        assert report["errors"] == [], (debugger, memory, stacks, report["errors"])
    # Live: every backend and debugger alike, time left on sleeps aside (the clock moves
    # between the runs).
    reference = comparable(live[("gdb", "process", "core")], in_core=True)
    assert len(reference["tasks"]) == len(expect.task_chains("hang"))
    for key, report in list(live.items()) + list(cores.items()):
        assert differences(comparable(report, in_core=True), reference) == [], key
    # Within the cores, nothing at all differs, time left included.
    core_reference = comparable(cores[("gdb", "core_file", "core")], in_core=False)
    for key, report in cores.items():
        assert differences(comparable(report, in_core=False), core_reference) == [], key
