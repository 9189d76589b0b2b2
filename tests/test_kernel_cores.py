"""Core files written by the kernel when a process dies: a panic in a `panic = "abort"`
release build, SIGABRT from outside, and a real SIGSEGV. Loaded in each debugger, a core
gives the tasks and trees the live process showed just before it died. The services and
waits fixtures, stopped at their checkpoints, die of SIGABRT delivered by GDB. A kernel
core holds no clock of its own, so sleeps there give their deadline, not the time left."""

import json
import os
import re
import signal
import time

import pytest
from support import build, expect
from support.debuggers import Gdb, capture
from support.elf_core import vdso_pages
from support.process import RunningFixture
from test_backtrace import assert_tasks

# (profile, how the process dies, the signal that kills it). The panic case needs
# panic = "abort", which only the release profile has.
CRASHES = [
    ("release", "panic", signal.SIGABRT),
    ("release", "segv", signal.SIGSEGV),
    ("release", "sigabrt", signal.SIGABRT),
    ("dev", "segv", signal.SIGSEGV),
    ("dev", "sigabrt", signal.SIGABRT),
]


def without_clock(report):
    """The report without what only a clock gives: a sleep's time left (a live process is
    read against this machine's clock; a kernel core holds none), and when the stop was."""
    report = {key: value for key, value in report.items() if key != "taken_at"}
    text = json.dumps(report, sort_keys=True)
    text = re.sub(r'"remaining_secs": -?[0-9.]+', '"remaining_secs": null', text)
    text = re.sub(r', "since_last_tick_secs": -?[0-9.]+', "", text)
    text = re.sub(r"(Sleep|Timeout) until [^\"]*", r"\1 until", text)
    # What kind of file a descriptor is comes from /proc, which a core does not have.
    text = re.sub(r'"fd_kind": "[^"]*"', '"fd_kind": null', text)
    text = re.sub(r" \((socket|pipe|file|anon_inode[^)]*)\)", "", text)
    return json.loads(text)


def core_memory_source(debugger):
    """How the core reads a core file's memory in this debugger: the file itself, or through
    LLDB 14, which cannot say which file its core is."""
    return "debugger" if debugger.name == "lldb14" else "core_file"


def core_stack_source(debugger):
    """What unwinds a core's stacks in this debugger: the core, which reads the core file's
    list of mapped files, or LLDB 14's own walk (it cannot say which file its core is)."""
    return "debugger" if debugger.name == "lldb14" else "core"


def pop_sources(report, live, debugger):
    """Takes out where a core's report (`report`, in `debugger`) and the live one read their
    memory and stacks from, checking each."""
    assert (report.pop("memory_source"), live.pop("memory_source")) == (core_memory_source(debugger), "process")
    assert (report.pop("stack_source"), live.pop("stack_source")) == (core_stack_source(debugger), "core")


def differences(left, right, path=""):
    """Where two JSON values differ, as `path: left != right` lines."""
    if isinstance(left, dict) and isinstance(right, dict):
        return [line for key in sorted(set(left) | set(right)) for line in differences(left.get(key), right.get(key), "%s.%s" % (path, key))]
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        return [line for i, pair in enumerate(zip(left, right)) for line in differences(*pair, path="%s[%d]" % (path, i))]
    return [] if left == right else ["%s: %r != %r" % (path, left, right)]


def wait_for_core(core):
    """Waits until the kernel has written `core`: the parent may see the exit first."""
    for _ in range(100):
        if core.exists() and core.stat().st_size > 0:
            break
        time.sleep(0.05)


@pytest.fixture(scope="module", params=CRASHES, ids=["-".join(map(str, crash[:2])) for crash in CRASHES])
def crashed(request, tmp_path_factory):
    """A hanging fixture inspected live in GDB, then killed; its kernel core."""
    profile, how, expected_signal = request.param
    workdir = tmp_path_factory.mktemp("kernel-core-%s-%s" % (profile, how))
    trigger = workdir / "crash-now"
    env = {"FIXTURE_CRASH": how, "FIXTURE_CRASH_TRIGGER": str(trigger)} if how != "sigabrt" else {}
    binary = build.fixture("tokio-app", profile)
    with RunningFixture(binary, "hang", str(workdir), env=env, core_dumps=True) as fixture:
        gdb = Gdb()
        run = gdb.run_steps(capture(gdb, "async bt all --json"), pid=fixture.pid)
        [live] = run.json_sections()
        if how == "sigabrt":
            os.kill(fixture.pid, signal.SIGABRT)
        else:
            trigger.write_text("")
        returncode = fixture.process.wait(timeout=60)
    core = workdir / "core"
    wait_for_core(core)
    assert returncode == -expected_signal, fixture.process.stderr.read()
    assert core.exists(), "no core in %s: is core_pattern `core`?" % workdir
    return binary, str(core), fixture.manifest, live


def test_kernel_core_shows_what_the_live_process_showed(debugger, crashed):
    binary, core, manifest, live = crashed
    run = debugger.run_steps(capture(debugger, "async bt all --json"), program=binary, core=core)
    sections = run.json_sections()
    assert len(sections) == 1, run.stdout + run.stderr
    [report] = sections
    assert_tasks(report, manifest, "hang")
    [main] = [thread for thread in report["threads"] if thread["tid"] == manifest["pid"]]
    assert expect.chain(main["future"]) == expect.main_future_chain()
    assert report["errors"] == []
    live = json.loads(json.dumps(live))  # a copy: the live report is shared by every debugger's run
    pop_sources(report, live, debugger)
    # A core has no thread names; everything else is what the live process showed.
    for thread in live["threads"]:
        thread["name"] = None
    assert differences(without_clock(report), without_clock(live)) == []
    # Without a clock in the core, a sleep says its deadline on the monotonic clock.
    sleeps = [task["root"]["children"][0] for task in report["tasks"] if task["id"] == manifest["tasks"]["sleeper"]]
    [sleep] = sleeps
    assert sleep["detail"]["remaining_secs"] is None
    assert sleep["summary"].endswith("s on the monotonic clock"), sleep["summary"]


def test_a_kernel_core_holds_no_clock(crashed):
    """Why a sleep on a core shows its deadline and not the time left: the clock a process
    reads without a system call lives in the vDSO's data pages ([vvar], [vvar_vclock]), just
    below the vDSO's code, and the kernel writes them into a core as zeros (special mappings
    it cannot take pages from). Should a kernel ever dump them, this fails, and the core
    would hold a clock of its own to compute the time left from."""
    _, core, _, _ = crashed
    code, data_pages = vdso_pages(core)
    assert code[:4] == b"\x7fELF"  # the vDSO's own pages are in the core
    # The kernel writes them, as zeros.
    assert sum(map(len, data_pages)) >= 4096
    assert all(not any(page) for page in data_pages)


@pytest.mark.parametrize("program", ["waits-app", "services-app"])
def test_kernel_core_of_a_fixture_stopped_at_its_checkpoint(debugger, tmp_path, program):
    """Every kind of wait and every service shape, release build: live at the checkpoint in
    GDB, then SIGABRT; the kernel's core in each debugger shows the same."""
    core = tmp_path / "core"
    binary = build.fixture(program, "release")
    gdb = Gdb()
    steps = [gdb.break_at("tokio_async_checkpoint"), "run"] + capture(gdb, "async bt all --json")
    # Only the stopped thread resumes, into the signal's default action: the others stay
    # where the live report saw them.
    steps += ["set scheduler-locking on", "signal SIGABRT"]
    run = gdb.run_steps(steps, program=binary, env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")},
                        cwd=str(tmp_path), core_dumps=True)
    [live] = run.json_sections()
    # Under load GDB can lose the race with the process's exit and report "No
    # unwaited-for children left" instead; the process died all the same, and the core
    # itself is what the rest of the test checks.
    assert re.search("terminated with signal SIGABRT|No unwaited-for children left", run.stdout + run.stderr), run.stdout + run.stderr
    wait_for_core(core)
    assert core.exists(), run.stdout + run.stderr
    run = debugger.run_steps(capture(debugger, "async bt all --json"), program=binary, core=str(core))
    [report] = run.json_sections()
    assert len(report["tasks"]) == len(live["tasks"]) > 10
    assert report["errors"] == []
    pop_sources(report, live, debugger)
    for thread in live["threads"]:
        thread["name"] = None
    assert differences(without_clock(report), without_clock(live)) == []
