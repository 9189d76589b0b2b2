"""Following one task as it runs (the stepping-app fixture): `async next`, `step` and
`finish` stay in one task across yields and workers while 50 tasks run the same code;
`until-polled N` stops in task N; `until-woken N` stops in whoever wakes it (a Mutex's
release, a channel's send, the timer). In GDB, LLDB 19 and LLDB 14, on debug builds; on
the release build, what works and the one line that says what cannot. After each command
the program's code is as in its file and the user's breakpoints are as they were."""

import json
import os
import re
import signal
import subprocess
import threading

import pytest
from support import build
from support.inferior import script_step, tagged_lines
from support.paths import FIXTURES

SOURCE = os.path.join(FIXTURES, "stepping-app", "src", "main.rs")
SHORT = "stepping-app/src/main.rs"
STEP_MARKER = re.compile(r"//\s*@step\s+(\w+)")
# The line each command ends with.
STOP = re.compile(r"^(?:task (\d+)|the block_on future), async fn (\S+) at (\S+):(\d+)$", re.M)
WOKEN = re.compile(r"^task (\d+) woken by (.*)$", re.M)
# Steps of a script: the selected thread's function names, innermost first; the task it
# polls, as `async backtrace --json` says; the tasks a worker has claimed (tokio's RUNNING
# bit) and polls no future of yet, each with its innermost async fn's function, file and
# line, the first one's id then standing for CLAIMED in the commands after.
BACKTRACE = "@backtrace"
SELECTED_TASK = "@selected-task"
CLAIMED_TASKS = "@claimed-tasks"
CLAIMED = "{claimed}"


@pytest.fixture(scope="module")
def lines():
    found = {}
    with open(SOURCE) as source:
        for number, text in enumerate(source, start=1):
            match = STEP_MARKER.search(text)
            if match and not text.lstrip().startswith("//!"):
                found[match.group(1)] = number
    return found


# Runs inside the debugger at the first stop: the commands one by one, each output tagged,
# then whether the executable's code in memory is still the file's (no breakpoint left in
# it), and the user's breakpoints before and after.
SCRIPT = r'''
import json

def user_breakpoint_addresses():
    """Where the user's breakpoints are: LLDB keeps them in the code while the program is
    stopped (GDB takes them out)."""
    try:
        import gdb  # noqa: F401
        return set()
    except ImportError:
        import lldb
    target = lldb.debugger.GetSelectedTarget()
    return {
        target.GetBreakpointAtIndex(i).GetLocationAtIndex(j).GetLoadAddress()
        for i in range(target.GetNumBreakpoints()) for j in range(target.GetBreakpointAtIndex(i).GetNumLocations())
    }

def code_differences(executable):
    """Bytes of the executable's code mappings that differ from its file, but for the
    user's breakpoints."""
    differing = []
    skipped = user_breakpoint_addresses()
    with open("/proc/%d/maps" % pid()) as maps, open("/proc/%d/mem" % pid(), "rb", buffering=0) as mem, \
            open(executable, "rb") as image:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or "x" not in fields[1] or os.path.realpath(fields[5]) != os.path.realpath(executable):
                continue
            start, end = (int(part, 16) for part in fields[0].split("-"))
            image.seek(int(fields[2], 16))
            expected = image.read(end - start)
            mem.seek(start)
            actual = mem.read(len(expected))
            differing += [
                "%#x" % (start + at) for at in range(len(expected))
                if actual[at] != expected[at] and start + at not in skipped
            ][:10]
    return differing

import os

def innermost_coroutine(node):
    """The deepest async fn or block of a task's tree (first children), as (function, file, line)."""
    found = None
    while node is not None:
        if node["kind"] in ("async_fn", "async_block", "async_closure") and node.get("location"):
            found = (node["function"], node["location"]["file"], node["location"]["line"])
        node = (node.get("children") or [None])[0]
    return found

def polled_in(node):
    return node.get("running", False) or any(polled_in(child) for child in node.get("children", []))

claimed = []

def run(command):
    if command == CLAIMED_TASKS:
        report = json.loads(run_command("async tasks --json"))
        claimed[:] = [[task["id"]] + list(innermost_coroutine(task["root"])) for task in report["tasks"]
                      if task["state"] == "running" and not polled_in(task["root"])]
        return json.dumps(claimed)
    if CLAIMED in command:
        # None claimed: the command's usage error, and the test's check of the list, say so.
        command = command.replace(CLAIMED, str(claimed[0][0]) if claimed else "(none claimed)")
    # The selected thread's frames (`bt`): LLDB runs a command given from inside another
    # (this script's import) on the thread selected when that one began.
    if command == BACKTRACE:
        return "\n".join(frame_names(40)) + "\n"
    # The task the selected thread polls, as the report says.
    if command == SELECTED_TASK:
        report = json.loads(run_command("async backtrace --json"))
        return str([thread["current_task"] for thread in report["threads"] if thread["tid"] == selection()[0]])
    return run_command(command)

before = breakpoint_list()
outputs = [run(command) for command in COMMANDS]
after = breakpoint_list()
for command in AFTER:
    outputs.append(run(command))
print("@@stepping " + json.dumps({"outputs": outputs, "before": before, "after": after,
                                 "code": code_differences(EXECUTABLE) if CHECK_CODE else None}))
'''


def break_line(debugger, line):
    if debugger.name == "gdb":
        return "break %s:%d" % (SHORT, line)
    return "breakpoint set -f main.rs -l %d" % line


def break_function(debugger, name):
    return debugger.break_at(name)


def delete_numbered(debugger, number):
    return ("delete %d" if debugger.name == "gdb" else "breakpoint delete %d") % number


def delete_first(debugger):
    return delete_numbered(debugger, 1)


def delete_all(debugger):
    return "delete" if debugger.name == "gdb" else "breakpoint delete"


def script_source(commands, binary, after=(), check_code=True):
    """SCRIPT with what it runs and the names of its special steps defined above it."""
    constants = dict(
        COMMANDS=list(commands), AFTER=list(after), EXECUTABLE=binary, CHECK_CODE=check_code,
        BACKTRACE=BACKTRACE, SELECTED_TASK=SELECTED_TASK, CLAIMED_TASKS=CLAIMED_TASKS, CLAIMED=CLAIMED,
    )
    return "".join("%s = %r\n" % pair for pair in constants.items()) + SCRIPT


def run_stepping(debugger, tmp_path, binary, mode, setup, commands, after=(), check_code=True, timeout=240):
    """Runs `binary mode` to the breakpoints of `setup`, then `commands` from a script, and
    returns (outputs, before, after, code differences, task ids by role, run)."""
    steps = list(setup) + [script_step(debugger, tmp_path / "stepping.py", script_source(commands, binary, after, check_code))]
    run = debugger.run_steps(steps, program=binary, args=[mode], timeout=timeout)
    assert run.traceback_free(), run.stdout + run.stderr
    tagged = tagged_lines(run, "stepping")
    assert tagged, run.stdout + run.stderr
    result = json.loads(tagged[0])
    roles = {match.group(1): match.group(2) for match in re.finditer(r"^task (\w+) (\w+)$", run.stdout, re.M)}
    return result, roles, run


def stop_of(output):
    """(task or None, function, file, line) that a command's output ends with."""
    found = STOP.findall(output)
    assert found, output
    task, function, file, line = found[-1]
    return (int(task) if task else None), function, file, int(line)


def definitions(listing):
    """A breakpoint list without hit counts."""
    listing = re.sub(r"\n\s*breakpoint already hit \d+ times?", "", listing)
    return re.sub(r"hit count = \d+", "", listing)


def assert_code_and_breakpoints(result):
    assert result["code"] == [], "breakpoints left in the code: %s" % result["code"]
    assert result["after"] == result["before"]


def test_next_step_and_finish_follow_one_task(debugger, tmp_path, lines):
    """50 tasks run level1 -> level2 -> level3; the user stops in task n == 7 and follows it."""
    binary = build.fixture("stepping-app", "dev")
    setup = [break_line(debugger, lines["begin"]), break_function(debugger, "stepping_app::all_waiting"), "run", delete_first(debugger)]
    commands = ["async next"] * 13 + ["async step", "async step", "async finish"]
    result, roles, run = run_stepping(debugger, tmp_path, binary, "multi", setup, commands)
    watched = int(roles["watched"])
    stops = [stop_of(output) for output in result["outputs"]]
    expected = [
        ("level3", "lock"), ("level3", "bump"), ("level3", "value"), ("level3", "unlock"), ("level3", "send"),
        ("level3", "sleep"), ("level3", "yield"), ("level3", "result"), ("level3", "end3"), ("level2", "after3"),
        ("level2", "end2"), ("level1", "round"), ("level1", "call2"),
        # step: into level2 on its first poll, then into level3; finish: back in level2.
        ("level2", "call3"), ("level3", "first3"), ("level2", "after3"),
    ]
    assert stops == [(watched, "stepping_app::" + function, SHORT, lines[marker]) for function, marker in expected]
    # finish says what level3 returned: its `value + n`, a number, where the debugger can
    # show it (LLDB cannot read a Rust enum returned in registers: it says so).
    returned = r"\d+" if debugger.name == "gdb" else re.escape("(the debugger cannot show the value)")
    assert re.search(r"^stepping_app::level3 returned %s$" % returned, result["outputs"][-1], re.M), result["outputs"][-1]
    assert "tokio-async:" not in "".join(result["outputs"])
    assert_code_and_breakpoints(result)


@pytest.mark.parametrize("mode", ["current", "local-task", "block-on"])
def test_next_in_current_thread_local_set_and_block_on(debugger, tmp_path, lines, mode):
    binary = build.fixture("stepping-app", "dev")
    setup = [break_line(debugger, lines["begin"]), "run", delete_first(debugger)]
    result, roles, run = run_stepping(debugger, tmp_path, binary, mode, setup, ["async next"] * 4)
    watched = None if roles["watched"] == "block_on" else int(roles["watched"])
    stops = [stop_of(output) for output in result["outputs"]]
    assert stops == [(watched, "stepping_app::level3", SHORT, lines[marker]) for marker in ("lock", "bump", "value", "unlock")]
    if mode == "block-on":
        assert all(output.rstrip().splitlines()[-1].startswith("the block_on future, ") for output in result["outputs"])
    assert_code_and_breakpoints(result)


WAKE_ROLES = {"holder", "locker", "sender", "receiver", "sleeper", "forever"}


def wake_roles(fixture):
    """`task ROLE ID` lines of the wake mode, until every task's (in whatever order the
    workers first poll them)."""
    roles = {}
    while set(roles) != WAKE_ROLES:
        line = fixture.stdout.readline()
        assert line, "the fixture ended early"
        _, role, task = line.split()
        roles[role] = task
    return roles


@pytest.fixture(scope="module")
def wake_ids():
    """The task ids of the wake mode's roles: tokio gives them in spawn order, the same in
    every run of the program (each test checks that its run printed the same)."""
    fixture = subprocess.Popen([build.fixture("stepping-app", "dev"), "wake"], stdout=subprocess.PIPE, text=True)
    try:
        return wake_roles(fixture)
    finally:
        fixture.kill()
        fixture.wait()


def wake_setup(debugger):
    return [break_function(debugger, "stepping_app::all_waiting"), "run"]


def test_until_polled_stops_in_that_task(debugger, tmp_path, lines, wake_ids):
    """At `all_waiting` the locker waits on a Mutex (released at 400 ms) and the sleeper on
    a sleep (10 s); each is stopped in when it is next polled, where its innermost async
    fn resumes."""
    binary = build.fixture("stepping-app", "dev")
    sleeper, locker = int(wake_ids["sleeper"]), int(wake_ids["locker"])
    backtrace = BACKTRACE
    result, roles, run = run_stepping(
        debugger, tmp_path, binary, "wake", wake_setup(debugger),
        ["async until-polled %d" % locker, backtrace, "async until-polled %d" % sleeper, backtrace],
    )
    assert roles == wake_ids
    polled_locker, locker_bt, polled_sleeper, sleeper_bt = result["outputs"]
    assert stop_of(polled_sleeper) == (sleeper, "stepping_app::sleeper", SHORT, lines["sleeping"])
    assert "stepping_app::sleeper" in sleeper_bt
    task, function, file, _ = stop_of(polled_locker)
    # Its innermost async fn is tokio's `Mutex::lock` (the tree's leaf), in the locker's stack.
    assert (task, function) == (locker, "tokio::sync::mutex::Mutex<T>::lock")
    assert file.startswith("tokio-1.") and file.endswith("/src/sync/mutex.rs"), file
    assert "stepping_app::mutex_waiter" in locker_bt and "stepping_app::sleeper" not in locker_bt
    assert_code_and_breakpoints(result)


def test_until_polled_stops_in_a_task_a_worker_has_claimed_but_not_entered(debugger, tmp_path, wake_ids):
    """Stopped just after a worker set a task's RUNNING bit (tokio's
    `transition_to_running` returned), before it polls the task's future: the task is not
    being polled on any stack, so `until-polled` waits for that poll instead of refusing,
    and stops where the task's innermost async fn resumes."""
    binary = build.fixture("stepping-app", "dev")
    claim = "tokio::runtime::task::state::State::transition_to_running"
    # The claim's breakpoint is deleted before the step out, so that no other worker's
    # claim ends the step elsewhere.
    setup = wake_setup(debugger) + [break_function(debugger, claim), "continue", delete_numbered(debugger, 2), "finish"]
    result, roles, run = run_stepping(debugger, tmp_path, binary, "wake", setup, [CLAIMED_TASKS, "async until-polled " + CLAIMED])
    assert roles == wake_ids
    listed, polled = result["outputs"]
    claimed = json.loads(listed)
    assert claimed, "no task claimed and not entered at the stop: %s" % listed
    [(task, function, file, line), *_] = claimed
    assert stop_of(polled) == (task, function, file, line), (listed, polled)
    assert "tokio-async:" not in polled, polled
    assert_code_and_breakpoints(result)


@pytest.mark.parametrize("waiting", ["locker", "receiver", "sleeper"])
def test_until_woken_stops_in_the_waker(debugger, tmp_path, lines, wake_ids, waiting):
    binary = build.fixture("stepping-app", "dev")
    backtrace = BACKTRACE
    task = int(wake_ids[waiting])
    result, roles, run = run_stepping(
        debugger, tmp_path, binary, "wake", wake_setup(debugger), ["async until-woken %d" % task, backtrace]
    )
    assert roles == wake_ids
    woken, bt = result["outputs"]
    [(woken_task, waker)] = WOKEN.findall(woken)
    assert int(woken_task) == task
    if waiting == "locker":
        # The holder's guard drop releases the Mutex.
        assert waker == "task %s, async fn stepping_app::mutex_holder at %s:%d" % (roles["holder"], SHORT, lines["release"])
        # (LLDB names it by its legacy symbol: `drop_in_place$LT$tokio..sync..mutex..MutexGuard...`.)
        assert any("drop_in_place" in frame and "MutexGuard" in frame for frame in bt.splitlines()), bt
        assert "stepping_app::mutex_holder" in bt
    elif waiting == "receiver":
        assert waker == "task %s, async fn stepping_app::sender at %s:%d" % (roles["sender"], SHORT, lines["sending"])
        assert "tokio::sync::mpsc" in bt and "stepping_app::sender" in bt
    else:
        assert re.fullmatch(r'thread \d+ "tokio-rt-worker", in no task \(tokio\'s timer\)', waker), waker
        assert "tokio::runtime::time" in bt
    assert "transition_to_notified" in bt
    assert_code_and_breakpoints(result)


def test_the_users_breakpoint_ends_a_command(debugger, tmp_path, lines, wake_ids):
    """The holder's `drop(guard)` line, a breakpoint of the user's, comes before the wake."""
    binary = build.fixture("stepping-app", "dev")
    setup = wake_setup(debugger) + [break_line(debugger, lines["release"])]
    watchpoints = "info watchpoints" if debugger.name == "gdb" else "watchpoint list"
    result, roles, run = run_stepping(
        debugger, tmp_path, binary, "wake", setup, ["async until-woken %s" % wake_ids["locker"], watchpoints], check_code=False,
    )
    ended, listed = result["outputs"]
    assert ended.rstrip().splitlines()[-1] == "async until-woken ended: the program stopped at breakpoint 2", ended
    assert "No watchpoints" in listed, listed
    # The user's breakpoint was hit, once: its count moved, nothing else.
    assert definitions(result["after"]) == definitions(result["before"])


def test_an_interrupt_ends_a_command(debugger, tmp_path):
    """SIGINT (what Ctrl-C sends) while waiting for a task nobody wakes: the command ends,
    its watchpoint gone."""
    binary = build.fixture("stepping-app", "dev")
    fixture = subprocess.Popen([binary, "wake"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        roles = wake_roles(fixture)
        watchpoints = "info watchpoints" if debugger.name == "gdb" else "watchpoint list"
        steps = ["async until-woken %s" % roles["forever"], watchpoints]
        # The signal reaches the program while the command waits (or queued before it runs).
        timer = threading.Timer(5.0, lambda: fixture.send_signal(signal.SIGINT))
        timer.start()
        try:
            script = script_source(steps, binary, check_code=False)
            run = debugger.run_steps([script_step(debugger, tmp_path / "interrupt.py", script)], pid=fixture.pid)
        finally:
            timer.cancel()
        assert run.traceback_free(), run.stdout + run.stderr
        [tagged] = tagged_lines(run, "stepping")
        ended, listed = json.loads(tagged)["outputs"]
        assert ended.rstrip().splitlines()[-1] == "async until-woken interrupted", ended
        assert "No watchpoints" in listed, listed
    finally:
        fixture.kill()
        fixture.wait()


def test_what_cannot_be_done_is_said(debugger, tmp_path, lines, wake_ids):
    binary = build.fixture("stepping-app", "dev")
    select_parked_worker = "thread 2" if debugger.name == "gdb" else "thread select 2"
    # GDB told to use no hardware watchpoint (LLDB has no such setting).
    no_watchpoints = ["set can-use-hw-watchpoints 0", "async until-woken %s" % wake_ids["forever"]] if debugger.name == "gdb" else []
    result, roles, run = run_stepping(
        debugger, tmp_path, binary, "wake", wake_setup(debugger),
        ["async until-polled 9999", "async until-woken", "async next now", select_parked_worker, "async next", "async step"]
        + no_watchpoints,
    )
    errors = [output.strip().splitlines()[-1] if output.strip() else "" for output in result["outputs"]]
    assert errors[0].endswith("tokio-async: no task 9999 among the 6 tasks of this program (`async tasks` lists them)"), errors[0]
    assert errors[1].endswith("tokio-async: which task? usage: async until-woken TASK"), errors[1]
    assert errors[2].endswith("tokio-async: next takes no arguments; usage: async next [--own-frame]"), errors[2]
    for error in errors[4:6]:
        assert error.endswith("tokio-async: the selected frame is in no async fn or block of a task; stop in one first"), error
    if no_watchpoints:
        assert errors[7].endswith(
            "tokio-async: no hardware watchpoint to watch the task's state (can-use-hw-watchpoints is 0)"
        ), errors[7]
    assert_code_and_breakpoints(result)


def test_release_build(debugger, tmp_path, lines):
    """Fully optimized: level3's resume function is inlined into level2's with no register
    for its address (said in one line, nothing changed); tokio's Mutex::lock survives, so
    `async step` enters it, in the task stopped in (the `lock` line is every task's here)."""
    binary = build.fixture("stepping-app", "release")
    setup = [break_line(debugger, lines["lock"]), "run", delete_first(debugger)]
    result, roles, run = run_stepping(
        debugger, tmp_path, binary, "multi", setup, [SELECTED_TASK, "async next", "async finish", "async step"]
    )
    reason = (
        "tokio-async: stepping_app::level3's resume function is inlined into its callers in this build, and the debug "
        "info does not say where the coroutine's address is at their start; rebuild with less optimization (opt-level 1) "
        "to follow it"
    )
    [stopped_task], next_output, finish_output, step_output = json.loads(result["outputs"][0]), *result["outputs"][1:]
    assert next_output.strip().splitlines()[-1].endswith(reason), next_output
    assert finish_output.strip().splitlines()[-1].endswith(reason), finish_output
    task, function, file, _ = stop_of(step_output)
    assert (task, function) == (stopped_task, "tokio::sync::mutex::Mutex<T>::lock"), step_output
    assert_code_and_breakpoints(result)
