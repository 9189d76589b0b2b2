"""Core files (written by GDB's gcore) loaded into both debuggers, and GDB and LLDB giving
the same JSON: identical on the same core; on live runs identical up to addresses and
thread ids, which differ between two processes."""

import json
import os
import re

import pytest
from support import build
from support.debuggers import LLDB_14, Gdb, Lldb, capture
from support.elf_core import vdso_pages
from support.process import RunningFixture
from test_backtrace import assert_breakpoint_report, assert_tasks

PROFILES = ["dev", "release"]


@pytest.fixture(scope="module", params=PROFILES)
def core_file(request, tmp_path_factory):
    """A core of the fixture stopped at its checkpoint, and the fixture's manifest."""
    directory = tmp_path_factory.mktemp("core-%s" % request.param)
    manifest = directory / "manifest.json"
    core = directory / "tokio-app.core"
    binary = build.fixture("tokio-app", request.param)
    gdb = Gdb()
    run = gdb.run_steps(
        [gdb.break_at("tokio_async_checkpoint"), "run", "gcore %s" % core],
        program=binary,
        args=["breakpoint"],
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert core.exists(), run.stdout + run.stderr
    return request.param, binary, str(core), json.loads(manifest.read_text())


def core_report(debugger, binary, core):
    run = debugger.run_steps(capture(debugger, "async bt all --json"), program=binary, core=core)
    sections = run.json_sections()
    assert len(sections) == 1, run.stdout + run.stderr
    return sections[0]


def test_core_file(debugger, core_file):
    profile, binary, core, manifest = core_file
    report = core_report(debugger, binary, core)
    # Neither debugger reads thread names from a core.
    assert_breakpoint_report(report, manifest, profile, thread_names=False)
    assert all(thread["name"] is None for thread in report["threads"])


def test_gdb_and_lldb_agree_exactly_on_a_core(core_file):
    _, binary, core, _ = core_file
    reports = [core_report(debugger, binary, core) for debugger in (Gdb(), Lldb(), LLDB_14)]
    # LLDB 14 cannot say which file its core is, so it reads through the debugger.
    assert [report.pop("memory_source") for report in reports] == ["core_file", "core_file", "debugger"]
    # GDB's and LLDB 19's stacks unwound by the core, LLDB 14's walked by itself: the same.
    assert [report.pop("stack_source") for report in reports] == ["core", "core", "debugger"]
    # The core's file time, where the debugger says which file it is.
    mtime = os.stat(core).st_mtime
    taken = [report.pop("taken_at", None) for report in reports]
    assert taken[0] == taken[1] and taken[0]["source"] == "core_file_time" and taken[2] is None, taken
    assert abs(taken[0]["unix_secs"] - mtime) < 1e-3
    gdb, lldb, lldb14 = reports
    assert gdb == lldb
    assert gdb == lldb14


def without_time_left(report):
    """The report without what the clock changes between two looks at one process: when
    each look's stop was, and times left and since from it."""
    report = {key: value for key, value in report.items() if key != "taken_at"}
    text = json.dumps(report, sort_keys=True)
    text = re.sub(r'"remaining_secs": -?[0-9.]+', '"remaining_secs": 0', text)
    text = re.sub(r'"since_last_tick_secs": -?[0-9.]+', '"since_last_tick_secs": 0', text)
    text = re.sub(r"until [+-][0-9.]+s", "until +0s", text)
    text = re.sub(r"last tick -?[0-9.]+s ago", "last tick 0s ago", text)
    return json.loads(text)


def without_process_identity(report):
    """The report without what differs between two runs of the program: addresses, thread
    ids, and which of the two workers happened to pick up the running task."""
    text = json.dumps(without_time_left(report), sort_keys=True)
    text = re.sub(r"0x[0-9a-f]+", "0x", text)
    # Absolute deadlines depend on when each run started.
    text = re.sub(r'"(secs|nanos)": [0-9]+', r'"\1": 0', text)
    # A thread holding what a task waits for is named by its id (the main thread's is the pid).
    text = re.sub(r'"thread": [0-9]+', '"thread": 0', text)
    text = re.sub(r"thread [0-9]+ at ", "thread 0 at ", text)
    report = json.loads(text)
    for thread in report["threads"]:
        thread["tid"] = None
        thread["worker"] = None
    report["threads"].sort(key=lambda thread: json.dumps(thread, sort_keys=True))
    return report


@pytest.mark.parametrize("profile", PROFILES)
def test_gdb_and_lldb_agree_on_live_runs(tmp_path, profile):
    reports = []
    for debugger in (Gdb(), Lldb(), LLDB_14):
        manifest = tmp_path / ("%s.json" % debugger.name)
        run = debugger.run_steps(
            [debugger.break_at("tokio_async_checkpoint"), "run"] + capture(debugger, "async bt all --json"),
            program=build.fixture("tokio-app", profile),
            args=["breakpoint"],
            env={"FIXTURE_MANIFEST": str(manifest)},
        )
        [report] = run.json_sections()
        assert_breakpoint_report(report, json.loads(manifest.read_text()), profile)
        reports.append(without_process_identity(report))
    assert reports[0] == reports[1] == reports[2]


def test_gdb_and_lldb_agree_on_one_attached_process(tmp_path):
    with RunningFixture(build.fixture("tokio-app", "dev"), "hang", str(tmp_path)) as fixture:
        reports = []
        for debugger in (Gdb(), Lldb(), LLDB_14):
            run = debugger.run_steps(capture(debugger, "async bt all --json"), pid=fixture.pid)
            [report] = run.json_sections()
            assert_tasks(report, fixture.manifest, "hang")
            reports.append(without_time_left(report))
    assert reports[0] == reports[1] == reports[2]


def test_a_gcore_core_holds_no_clock(core_file):
    """GDB's gcore leaves the vDSO's data pages (the clock a process reads without a system
    call) out of the core, so a sleep on it gives its deadline, not the time left (see
    test_kernel_cores for the kernel's cores)."""
    _, _, core, _ = core_file
    code, data_pages = vdso_pages(core)
    assert code[:4] == b"\x7fELF"
    assert data_pages == []
