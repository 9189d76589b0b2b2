"""Time across stops (the timing-app fixture): `async diff` tells every task stuck, moved,
new or finished between two stops 2 s apart, live and from a core against a saved report;
`async tasks --stuck-for` keeps the stuck; `async sample` finds the stuck tasks never
moving, writes folded stacks that add up and a flamegraph, leaves the program stopped as
it found it, and ends on Ctrl-C with the report so far (in LLDB also where the SIGINT
comes as its interrupt is sent). In GDB, LLDB 19 and LLDB 14."""

import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest
from support import build, debuggers
from support.inferior import script_step, tagged_lines
from support.paths import FIXTURES, GDB_SCRIPT, LLDB_SCRIPT

SOURCE = os.path.join(FIXTURES, "timing-app", "src", "main.rs")
SHORT = "timing-app/src/main.rs"
MARKER = re.compile(r"//\s*@line\s+(\w+)")
ROLE = re.compile(r"^task (\w+) (\d+)$", re.M)
# The long-lived tasks of each kind (as the fixture's constants say).
STUCK_ROLES, MOVING_ROLES = {"holder": 1, "waiter": 4}, {"counter": 3, "drainer": 2, "producer": 1, "spawner": 1}
SHORT_LIVED = "timing_app::short_lived"

# Resumes the program for `seconds` and stops it, as a user would with Ctrl-C: the test's
# own doing (helpers of support/inferior.py run beside it).
RUN_FOR = {
    "gdb": r'''
import os, signal, threading, time
def run_for(seconds):
    target = pid()
    timer = threading.Timer(seconds, lambda: os.kill(target, signal.SIGINT))
    timer.start()
    gdb.execute("continue", to_string=True)
''',
    "lldb": r'''
import threading, time
def run_for(seconds):
    process = _process()
    timer = threading.Timer(seconds, process.SendAsyncInterrupt)
    timer.start()
    run_command("process continue")
''',
}


@pytest.fixture(scope="module")
def lines():
    found = {}
    with open(SOURCE) as source:
        for number, text in enumerate(source, start=1):
            match = MARKER.search(text)
            if match and not text.lstrip().startswith("//!"):
                found[match.group(1)] = number
    return found


def roles_of(run):
    """{role: [task ids]} from the `task ROLE ID` lines the fixture printed."""
    roles = {}
    for role, task in ROLE.findall(run.stdout):
        roles.setdefault(role, []).append(int(task))
    counts = {role: len(ids) for role, ids in roles.items()}
    assert counts == dict(STUCK_ROLES, **MOVING_ROLES), run.stdout
    # In id order: the workers may first poll them in any.
    return {role: sorted(ids) for role, ids in roles.items()}


def expected_changes(roles, before_tasks, after_tasks):
    """{task id: change} as the fixture's kinds make them: short-lived tasks are the
    spawner's, one at a time."""
    expected = {}
    for role in STUCK_ROLES:
        expected.update({task: "stuck" for task in roles[role]})
    for role in MOVING_ROLES:
        expected.update({task: "moved" for task in roles[role]})
    short = lambda tasks: {task["id"] for task in tasks if task["root"]["function"] == SHORT_LIVED}  # noqa: E731
    before, after = short(before_tasks), short(after_tasks)
    assert len(before) <= 1 and len(after) <= 1 and not before & after, (before, after)
    expected.update({task: "finished" for task in before})
    expected.update({task: "new" for task in after})
    return expected


def changes(report):
    return {change["id"]: change["change"] for change in report["diff"]["tasks"]}


def run_script(debugger, tmp_path, body, **launch):
    script = RUN_FOR["gdb" if debugger.name == "gdb" else "lldb"] + body
    steps = launch.pop("setup", []) + [script_step(debugger, tmp_path / "timing_steps.py", script)]
    run = debugger.run_steps(steps, timeout=240, **launch)
    assert run.traceback_free(), run.stdout + run.stderr
    tagged = tagged_lines(run, "time")
    assert tagged, run.stdout + run.stderr
    return json.loads(tagged[0]), run


def at_checkpoint(debugger, binary):
    return {"setup": [debugger.break_at("timing_app::checkpoint"), "run"], "program": binary}


DIFF_SCRIPT = r'''
import json, time
paths = PATHS
started = time.time()
first = run_command("async tasks --json --output %s" % paths["stop1"])
run_for(2.0)
resumed_at = time.time()
diff = run_command("async diff --json --output %s" % paths["diff"])
ended = time.time()
text = run_command("async diff")
stuck = run_command("async tasks --stuck-for 1.5 --json --output %s" % paths["stuck"])
print("@@time " + json.dumps({"outputs": [first, diff, text, stuck], "started": started, "ended": ended}))
'''


def test_diff_tells_stuck_moved_new_and_finished(debugger, tmp_path, lines):
    binary = build.fixture("timing-app", "dev")
    paths = {name: str(tmp_path / ("%s.json" % name)) for name in ("stop1", "diff", "stuck")}
    result, run = run_script(debugger, tmp_path, "PATHS = %r\n" % paths + DIFF_SCRIPT, **at_checkpoint(debugger, binary))
    roles = roles_of(run)
    first, wrote_diff, text, wrote_stuck = result["outputs"]
    assert "wrote" in wrote_diff and "wrote" in wrote_stuck, result["outputs"]
    stop1, diff = (json.load(open(paths[name])) for name in ("stop1", "diff"))
    # The breakpoint's stop is timed by the debugger's stop event (LLDB: our stop hook).
    # LLDB runs no stop hook after an interrupt: its second stop is timed by the first
    # command there.
    assert stop1["taken_at"]["source"] == "stop_event"
    assert diff["taken_at"]["source"] == ("stop_event" if debugger.name == "gdb" else "first_command")
    expected = expected_changes(roles, stop1["tasks"], diff["tasks"])
    assert changes(diff) == expected
    # The program ran 2 s between the stops; both happened within the script's time (and
    # the first at most a moment before it started).
    interval = diff["diff"]["interval_secs"]
    assert 2.0 <= interval <= result["ended"] - result["started"] + 1.0, (interval, result)
    stuck = [change for change in diff["diff"]["tasks"] if change["change"] == "stuck"]
    assert {change["stuck_secs"] for change in stuck} == {interval}
    assert {change["since"] for change in stuck} == {stop1["taken_at"]["unix_secs"]}
    # Each moved task names its first difference: a new deadline, values received, another
    # short task awaited.
    for change in diff["diff"]["tasks"]:
        if change["change"] == "moved":
            first_difference = change["first_difference"]
            assert first_difference["before"] != first_difference["after"], change
            # Caught between its rounds, the spawner stands where it stood and only its
            # progress differs: said so.
            same_place = first_difference["after"] == first_difference["before"] + " (its progress changed)"
            assert same_place or re.match(r"sleep \(deadline |mpsc_recv \(.*received |join_handle \(task_id ",
                                          first_difference["before"]), change
    # The text leads with the stuck, grouped, with how long.
    header, _, body = text.partition("\n\n")
    assert header == "tokio 1.54.1: 1 runtime (MultiThread), %d tasks" % len(diff["tasks"]) or header.startswith("tokio "), text
    lines_of_text = body.strip().splitlines()
    assert re.fullmatch(r"Since the previous stop \(\d+\.\d s before this stop\):", lines_of_text[0]), text
    waiters, holder = ", ".join(map(str, roles["waiter"])), roles["holder"][0]
    assert re.fullmatch(
        r"4 tasks stuck for ≥ %.1f s at timing_app::waiter at %s:%d \(waiting for Mutex 0x[0-9a-f]+ \(0 permits, 4 waiters; "
        r"held by task %d at %s:%d\)\): %s" % (interval, SHORT, lines["waiting"], holder, SHORT, lines["holding"], waiters),
        lines_of_text[1],
    ), text
    assert lines_of_text[2] == "1 task stuck for ≥ %.1f s at timing_app::holder at %s:%d (pending (never completes)): %d" % (
        interval, SHORT, lines["holding"], holder), text
    assert lines_of_text[-1] == "%d tasks: 5 stuck, 7 moved, %d new, %d finished" % (
        len(expected), list(expected.values()).count("new"), list(expected.values()).count("finished")), text
    # --stuck-for keeps exactly the stuck tasks.
    kept = json.load(open(paths["stuck"]))
    assert sorted(task["id"] for task in kept["tasks"]) == sorted(roles["holder"] + roles["waiter"])


@pytest.fixture(scope="module")
def saved_stop_and_core(tmp_path_factory):
    """A report saved at the checkpoint and a core written 2 s of running later (GDB's
    gcore), with the fixture's task ids."""
    tmp_path = tmp_path_factory.mktemp("time-core")
    binary = build.fixture("timing-app", "dev")
    paths = {"stop1": str(tmp_path / "stop1.json"), "core": str(tmp_path / "core"), "live": str(tmp_path / "live.json")}
    body = r'''
import json
paths = PATHS
run_command("async tasks --json --output %s" % paths["stop1"])
run_for(2.0)
run_command("async tasks --json --output %s" % paths["live"])
run_command("generate-core-file %s" % paths["core"])
print("@@time " + json.dumps({"done": True}))
'''
    gdb = debuggers.ALL[0]
    _, run = run_script(gdb, tmp_path, "PATHS = %r\n" % paths + body, **at_checkpoint(gdb, binary))
    assert os.path.exists(paths["core"]), run.stdout + run.stderr
    return binary, paths, roles_of(run)


def test_diff_since_a_saved_report_on_a_core(debugger, tmp_path, saved_stop_and_core):
    binary, paths, roles = saved_stop_and_core
    out = str(tmp_path / "diff.json")
    body = r'''
import json
print("@@time " + json.dumps({"outputs": [run_command("async diff --since %s --json --output %s")]}))
''' % (paths["stop1"], out)
    result, run = run_script(debugger, tmp_path, body, program=binary, core=paths["core"])
    assert "wrote" in result["outputs"][0], result
    stop1, live, diff = json.load(open(paths["stop1"])), json.load(open(paths["live"])), json.load(open(out))
    assert diff["diff"]["against"] == paths["stop1"]
    expected = expected_changes(roles, stop1["tasks"], live["tasks"])
    assert changes(diff) == expected
    interval = diff["diff"]["interval_secs"]
    if debugger is debuggers.LLDB_14:
        # LLDB 14 does not say which core file it loaded: the core's time is unknown.
        assert "taken_at" not in diff and interval is None
    else:
        assert diff["taken_at"]["source"] == "core_file_time"
        assert diff["taken_at"]["unix_secs"] == pytest.approx(os.stat(paths["core"]).st_mtime, abs=1e-3)
        assert interval == pytest.approx(os.stat(paths["core"]).st_mtime - stop1["taken_at"]["unix_secs"], abs=2e-3)
        assert interval >= 2.0


SAMPLE_SCRIPT = r'''
import json
paths = PATHS
before = selection()
output = run_command("async sample --count 10 --interval 0.2 --output %s --svg %s" % (paths["folded"], paths["svg"]))
after = selection()
print("@@time " + json.dumps({"output": output, "before": before, "after": after, "alive": pid() != 0}))
'''


def test_sample_finds_the_stuck_never_moving(debugger, tmp_path, lines):
    binary = build.fixture("timing-app", "dev")
    paths = {"folded": str(tmp_path / "tasks.folded"), "svg": str(tmp_path / "tasks.svg")}
    result, run = run_script(debugger, tmp_path, "PATHS = %r\n" % paths + SAMPLE_SCRIPT, **at_checkpoint(debugger, binary))
    roles = roles_of(run)
    output = result["output"]
    # Left stopped, with the thread and frame selected that were at the start.
    assert result["alive"] and result["before"] == result["after"], result
    header = re.search(r"^10 samples 0.2 s apart, (\d+) task-samples$", output, re.M)
    assert header, output
    task_samples = int(header.group(1))
    long_lived = sum(STUCK_ROLES.values()) + sum(MOVING_ROLES.values())
    # Every long-lived task in every sample; the spawner's short task in some.
    assert 10 * long_lived <= task_samples <= 10 * (long_lived + 1), output
    stuck = sorted(roles["holder"] + roles["waiter"])
    assert "5 tasks never moved in any sample: %s" % ", ".join(map(str, stuck)) in output.splitlines(), output
    # Each await point's share: the 4 waiters are 4 of every sample's tasks.
    waiting = re.search(r"^\s*([\d.]+)%%\s+40  timing_app::waiter at %s:%d$" % (SHORT, lines["waiting"]), output, re.M)
    assert waiting and float(waiting.group(1)) == pytest.approx(4000 / task_samples, abs=0.05), output
    with open(paths["folded"]) as folded:
        stacks = [line.rstrip("\n") for line in folded]
    counts = []
    for line in stacks:
        stack, count = line.rsplit(" ", 1)
        assert count.isdigit() and stack.split(";")[0].startswith("timing_app::"), line
        counts.append(int(count))
    assert sum(counts) == task_samples
    assert "timing_app::waiter (%s:%d);mutex_lock 40" % (SHORT, lines["waiting"]) in stacks, stacks
    with open(paths["svg"]) as svg:
        drawn = svg.read()
    assert drawn.lstrip().startswith("<?xml") and "<svg" in drawn and "timing_app::waiter" in drawn


def test_ctrl_c_ends_sampling_with_the_report_so_far(debugger, tmp_path):
    """SIGINT (what Ctrl-C sends) reaches the program 2 s into a long sampling."""
    binary = build.fixture("timing-app", "dev")
    fixture = subprocess.Popen([binary], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    sampling_began = tmp_path / "sampling-began"
    try:
        while "task spawner" not in fixture.stdout.readline():
            pass
        # The script marks when sampling begins: a signal timed from the debugger's start
        # would, on a loaded machine, arrive while it is still attaching.
        body = r'''
import json
open(%r, "w").close()
output = run_command("async sample --count 1000 --interval 0.1")
print("@@time " + json.dumps({"output": output, "alive": pid() != 0}))
''' % str(sampling_began)
        finished = threading.Event()

        def interrupt_once_sampling():
            deadline = time.time() + 120
            while not sampling_began.exists() and time.time() < deadline and not finished.is_set():
                time.sleep(0.05)
            if not finished.wait(2.0):
                fixture.send_signal(signal.SIGINT)

        interrupter = threading.Thread(target=interrupt_once_sampling, daemon=True)
        interrupter.start()
        started = time.time()
        try:
            result, run = run_script(debugger, tmp_path, body, pid=fixture.pid)
        finally:
            finished.set()
            interrupter.join()
        output = result["output"]
        taken = re.search(r"^sampling interrupted \(Ctrl-C\) after (\d+) samples$", output, re.M)
        assert taken and 1 <= int(taken.group(1)) < 1000, output
        assert re.search(r"^%s samples 0.1 s apart, \d+ task-samples$" % taken.group(1), output, re.M), output
        assert "5 tasks never moved in any sample" in output, output
        assert result["alive"] and time.time() - started < 120
    finally:
        fixture.kill()
        fixture.wait()


# The program's SIGINT arriving as sampling's third interrupt is sent: LLDB stops the
# program for the SIGINT and drops the interrupt, which finds it stopped. The two are put
# in that order: sent at once, the interrupt could stop the program before the kernel hands
# a thread the SIGINT (seen on a loaded machine), and the SIGINT would end the next run, a
# sample later; so the interrupt waits for the run to end, and the run's end (its
# classification) for the interrupt. Then a second's run, stopped by a timer.
COLLISION_SCRIPT = r'''
import json, os, signal, threading, time, lldb
from tokio_async_glue import lldb_adapter
sent, resume = lldb.SBProcess.SendAsyncInterrupt, lldb_adapter.LldbStepper.resume
interrupts = []
sigint_sent, stopped, interrupt_sent = threading.Event(), threading.Event(), threading.Event()
stopped_for_the_sigint = []
def interrupt_with_the_programs_sigint(process):
    interrupts.append(time.time())
    if len(interrupts) == 3:
        sigint_sent.set()
        os.kill(pid(), signal.SIGINT)
        stopped_for_the_sigint.append(stopped.wait(10) and process.GetState() == lldb.eStateStopped)
        sent(process)
        interrupt_sent.set()
        return
    return sent(process)
def resume_until_the_interrupt_after_the_sigint(self):
    stop = resume(self)
    if sigint_sent.is_set() and not stopped.is_set():
        stopped.set()
        interrupt_sent.wait(10)
    return stop
lldb.SBProcess.SendAsyncInterrupt = interrupt_with_the_programs_sigint
lldb_adapter.LldbStepper.resume = resume_until_the_interrupt_after_the_sigint
output = run_command("async sample --count 8 --interval 0.1")
began = time.time()
run_for(1.0)
print("@@time " + json.dumps({"output": output, "ran": time.time() - began, "alive": pid() != 0,
                              "stopped_for_the_sigint": stopped_for_the_sigint}))
'''


@pytest.mark.parametrize("debugger", [debuggers.Lldb(), debuggers.LLDB_14], ids=["lldb", "lldb14"])
def test_a_sigint_as_lldbs_interrupt_is_sent_still_ends_sampling(debugger, tmp_path):
    """Taken for a sample, the SIGINT was lost: the sampling ran its whole count."""
    binary = build.fixture("timing-app", "dev")
    fixture = subprocess.Popen([binary], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        while "task spawner" not in fixture.stdout.readline():
            pass
        result, _ = run_script(debugger, tmp_path, COLLISION_SCRIPT, pid=fixture.pid)
        assert result["stopped_for_the_sigint"] == [True], result
        output = result["output"]
        assert re.search(r"^sampling interrupted \(Ctrl-C\) after 2 samples$", output, re.M), output
        assert re.search(r"^2 samples 0.1 s apart, \d+ task-samples$", output, re.M), output
        # No stop was left over: the next run lasts until its own timer stops it.
        assert result["alive"] and result["ran"] >= 0.95, result
    finally:
        fixture.kill()
        fixture.wait()


def test_what_cannot_be_done_is_said(debugger, tmp_path, saved_stop_and_core):
    binary, paths, _ = saved_stop_and_core
    not_a_report = tmp_path / "other.json"
    not_a_report.write_text('{"hello": 1}')
    body = r'''
import json
commands = ["async diff", "async tasks --stuck-for 5", "async diff --since %s", "async diff --since %s",
            "async tasks --stuck-for soon", "async sample --count 3"]
print("@@time " + json.dumps({"outputs": [run_command(command) for command in commands]}))
''' % (tmp_path / "missing.json", not_a_report)
    result, run = run_script(debugger, tmp_path, body, program=binary, core=paths["core"])
    errors = [output.strip().splitlines()[-1] if output.strip() else "" for output in result["outputs"]]
    assert errors[0].endswith(
        "tokio-async: async diff: no earlier stop of this program is known; this one is kept now: let the program "
        "run, stop it again and run `async diff` (or compare with a saved report: --since FILE.json)"), errors[0]
    assert errors[1].endswith(
        "tokio-async: --stuck-for: no earlier stop of this program is known to compare with; run `async tasks` now, "
        "let the program run, stop it again, then ask again (or `async diff --since FILE`)"), errors[1]
    assert re.search(r"tokio-async: cannot read \S+/missing.json as a saved report \(No such file or directory \(os error 2\)\); "
                     r"save one with `async tasks --json --output FILE`$", errors[2]), errors[2]
    assert re.search(r"tokio-async: cannot read \S+/other.json as a saved report \(missing field `version` at line 1 "
                     r"column 12\); save one", errors[3]), errors[3]
    assert errors[4].endswith("tokio-async: --stuck-for needs a number of seconds, not 'soon'"), errors[4]
    assert errors[5].endswith("tokio-async: async sample runs the program; a core file cannot run"), errors[5]
    assert run.traceback_free()


def test_loaded_before_the_program_the_first_stop_is_timed_at_the_stop(debugger, tmp_path):
    """As from ~/.gdbinit or ~/.lldbinit (`make install`): the script is loaded before the
    program, whose first stop (a breakpoint) is timed by the stop event, not by the command
    run 1 s later."""
    binary = build.fixture("timing-app", "dev")
    out = tmp_path / "stop.json"
    if debugger.name == "gdb":
        argv = [debugger.executable, "-nx", "-batch", "-iex", "source %s" % GDB_SCRIPT, "-ex", "break timing_app::checkpoint",
                "-ex", "run", "-ex", "python import time; time.sleep(1)", "-ex", "async tasks --json --output %s" % out, binary]
    else:
        argv = [debugger.executable, "--no-lldbinit", "-b", "-O", "command script import %s" % LLDB_SCRIPT,
                "-o", "file %s" % binary, "-o", "breakpoint set -n timing_app::checkpoint", "-o", "run",
                "-o", "script import time; time.sleep(1)", "-o", "async tasks --json --output %s" % out]
    completed = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
                               timeout=120)
    assert out.exists(), completed.stdout
    report = json.loads(out.read_text())
    assert report["taken_at"]["source"] == "stop_event", report["taken_at"]
    # The counters' 100 ms sleeps are due at most one period after the stop, not 1 s before.
    left = [node["detail"]["remaining_secs"] for task in report["tasks"] for node in task["root"]["children"]
            if task["root"]["function"] == "timing_app::counter" and node["kind"] == "sleep"]
    assert len(left) == 3 and all(-0.5 < seconds <= 0.1 for seconds in left), left
