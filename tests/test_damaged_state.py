"""Damaged and moving state: core files cut short, a task freed while still listed, a
program stopped while tokio is changing a task list, a runtime stopped in its shutdown.
Each gives a report with errors on the items it could not read, or one clear line; never a
crash, a hang, a Python traceback or an empty report."""

import glob
import json
import os
import re
import signal
import time

import pytest
from support import build, expect
from support.checkpoint import locked_version
from support.debuggers import Gdb, capture
from support.inferior import script_step, tagged_lines
from support.process import RunningFixture
from test_kernel_cores import differences, without_clock

ALIVE = "still-alive"
# The tasks tokio-app parks in `hang` mode, and so in `churn` and `shutdown` mode.
PARKED = sorted(expect.task_chains("hang"))


def assert_debugger_fine(run):
    assert ALIVE + "\n" in run.stdout, run.stdout + run.stderr
    assert run.traceback_free(), run.stdout + run.stderr


def root_function(task):
    return task["root"]["function"]


def expected_roots(ids):
    """Task id -> the function at the root of its tree, for the parked tasks."""
    return {ids[name]: expect.task_chains("hang")[name][0][1] for name in PARKED}


def tokio_source(relative):
    """A file of the tokio the fixtures lock, in cargo's registry."""
    cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    [path] = glob.glob(os.path.join(cargo_home, "registry", "src", "*", "tokio-%s" % locked_version("tokio"), "src", relative))
    return path


def line_of(relative, function, statement):
    """The line of `statement`, the first after `fn function` in tokio's file `relative`."""
    with open(tokio_source(relative)) as source:
        lines = source.read().splitlines()
    start = next(i for i, line in enumerate(lines) if re.search(r"\bfn %s\b" % re.escape(function), line))
    return next(i for i in range(start, len(lines)) if lines[i].strip() == statement) + 1


# --- Core files cut short -------------------------------------------------------------

@pytest.fixture(scope="module")
def kernel_core(tmp_path_factory):
    """The kernel's core of tokio-app (dev, parked in `hang` mode, SIGABRT), and what GDB
    saw of the live process just before."""
    workdir = tmp_path_factory.mktemp("truncated-cores")
    binary = build.fixture("tokio-app", "dev")
    with RunningFixture(binary, "hang", str(workdir), core_dumps=True) as fixture:
        gdb = Gdb()
        [live] = gdb.run_steps(capture(gdb, "async bt all --json"), pid=fixture.pid).json_sections()
        os.kill(fixture.pid, signal.SIGABRT)
        assert fixture.process.wait(timeout=60) == -signal.SIGABRT
    core = workdir / "core"
    for _ in range(100):
        if core.exists() and core.stat().st_size > 0:
            break
        time.sleep(0.05)
    assert core.exists(), "no core in %s: is core_pattern `core`?" % workdir
    return binary, core, fixture.manifest, live


def truncated_copy(core, percent):
    data = core.read_bytes()
    copy = core.parent / ("core-%d-percent" % percent)
    copy.write_bytes(data[: len(data) * percent // 100])
    return copy, len(data) * percent // 100, len(data)


def truncation_note(copy, present, whole):
    return "core file %s is truncated: it has %d of the %d bytes its headers describe, so memory stored past its end cannot be read" % (copy, present, whole)


def without_thread(tree, tid):
    """A future tree as it reads without thread `tid`'s stack: no notifiers or senders found there."""
    text = re.sub(r"; (possible notifiers:|sender held by) thread %d at [^)]*" % tid, "", json.dumps(tree))
    tree = json.loads(text)
    nodes = [tree]
    while nodes:
        node = nodes.pop()
        for key in ("notifiers", "senders_held_by"):
            parties = (node.get("detail") or {}).get(key)
            if parties:
                parties = [party for party in parties if party.get("thread") != tid]
                node["detail"][key] = parties or None
        nodes.extend(node["children"])
    return tree


UNREADABLE_CONTEXT = r"thread %d: cannot read its tokio context: cannot read 1 bytes at 0x[0-9a-f]+"


@pytest.mark.parametrize("percent", [10, 50, 90])
def test_truncated_core(debugger, kernel_core, percent):
    """The kernel writes the notes (threads, registers) first, then memory by address: the
    heap and tokio's allocations, the worker stacks (2 MiB each, their thread-locals at the
    top), the libraries and the main stack. Cut at 10% and 50% no thread's tokio context is
    left; at 90% one worker's is, and with it the runtime and every task."""
    binary, core, manifest, live = kernel_core
    copy, present, whole = truncated_copy(core, percent)
    steps = capture(debugger, "async bt all") + capture(debugger, "async bt all --json") + [debugger.echo(ALIVE)]
    run = debugger.run_steps(steps, program=binary, core=str(copy), timeout=120)
    assert_debugger_fine(run)
    main = manifest["pid"]
    workers = sorted(thread["tid"] for thread in live["threads"] if thread["role"] == "worker")
    assert len(workers) == 2
    if debugger.name == "lldb14":
        # Without fs_base, LLDB 14 needs glibc's thread list, and so libc's symbols: it finds
        # no libc, whose link map was in the lost part.
        assert run.sections() == ["", ""]
        assert run.error_lines() == [
            "tokio-async: this LLDB (lldb version 14.0.6) gives no fs_base register, and reading glibc's thread "
            "list failed: glibc's _thread_db_pthread_tid is not readable (not glibc, or no libc symbols)"
        ] * 2
        return
    note = truncation_note(copy, present, whole)
    if percent < 90:
        # One line per command: the first thread's failure, and why.
        assert run.sections() == ["", ""]
        assert len(run.error_lines()) == 2
        for line in run.error_lines():
            assert re.fullmatch("tokio-async: %s; %s" % (UNREADABLE_CONTEXT % main, re.escape(note)), line), line
        return
    text, report = run.sections()
    report = json.loads(report)
    assert run.error_lines() == []
    # Every task, as the live process showed it; the one worker left; errors for the rest.
    ids = manifest["tasks"]
    assert {task["id"]: root_function(task) for task in report["tasks"]} == expected_roots(ids)
    # Only what the lost main thread's stack said is missing: it may notify a Notify.
    live_trees = {task["id"]: without_thread(task["root"], main) for task in live["tasks"]}
    assert [differences(without_clock(task["root"]), without_clock(live_trees[task["id"]])) for task in report["tasks"]] == [[]] * 7
    [thread] = report["threads"]
    assert thread["role"] == "worker" and thread["state"] == "parked" and thread["tid"] in workers
    [lost_worker] = [tid for tid in workers if tid != thread["tid"]]
    assert report["errors"][0] == {"kind": "memory", "message": note}
    assert len(report["errors"]) == 3
    for error, tid in zip(report["errors"][1:], [main, lost_worker]):
        assert re.fullmatch(UNREADABLE_CONTEXT % tid, error["message"]), error
        assert (error["kind"], error["thread"]) == ("memory", tid), error
    assert text.startswith("tokio %s: 1 runtime (MultiThread), 7 tasks\n\nThread %d: worker %d, parked\n"
                           % (locked_version("tokio"), thread["tid"], thread["worker"])), text
    assert text.rstrip().endswith("\n".join("error: " + error["message"] for error in report["errors"])), text


# --- A task freed while still listed --------------------------------------------------

# Runs inside the debugger at the checkpoint: frees listed tasks the way allocators leave
# them and asks for the report after each. A freed chunk's first 16 bytes, the task's state
# word and queue link, get the allocator's free-list words:
# - `cleared`: zeros, as an allocator that clears freed memory, or glibc before 2.32 with an
#   empty tcache bin (a NULL link), leaves them;
# - `tcache`: glibc 2.32 and later: the link mangled with the chunk's address (`address >>
#   12` for an empty bin) and a random key; whether that sets the state's COMPLETE bit
#   (bit 1) depends on the address;
# - `reused`: the chunk handed out again, every byte someone else's.
FREED_SCRIPT = r"""
import json
manifest = json.load(open(MANIFEST))
before = json.loads(run_command("async bt all --json"))
address = {task["id"]: int(task["address"], 16) for task in before["tasks"]}
victims = {"cleared": manifest["tasks"]["level1"], "tcache": manifest["tasks"]["sleeper"], "reused": manifest["tasks"]["service"]}
reports = {}
write_memory(address[victims["cleared"]], bytes(16))
reports["cleared"] = run_command("async bt all --json")
at = address[victims["tcache"]]
write_memory(at, (at >> 12).to_bytes(8, "little") + (0x5DD6B6D1C4B2E7F9).to_bytes(8, "little"))
reports["tcache"] = run_command("async bt all --json")
# malloc's size field just before the chunk; the task's bytes fill it but for 16.
at = address[victims["reused"]]
chunk = int.from_bytes(read_memory(at - 8, 8), "little") & ~7
write_memory(at, bytes([0xA5]) * (chunk - 16))
reports["reused"] = run_command("async bt all --json")
print("@@freed " + json.dumps({"victims": victims, "chunk": chunk, "before": before, "reports": reports,
                               "text": run_command("async bt all")}))
"""


def same_tree(left, right):
    """Equal but for a sleep's time left (the clock runs between the commands)."""
    return differences(without_clock(left), without_clock(right)) == []


def test_task_freed_while_listed(debugger, tmp_path):
    binary = build.fixture("tokio-app", "dev")
    manifest = tmp_path / "manifest.json"
    load = script_step(debugger, tmp_path / "freed.py", "MANIFEST = %r\n" % str(manifest) + FREED_SCRIPT)
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run", load, debugger.echo(ALIVE)],
        program=binary, args=["breakpoint"], env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert_debugger_fine(run)
    [line] = tagged_lines(run, "freed")
    result = json.loads(line)
    victims, before = result["victims"], result["before"]
    reports = {how: json.loads(text) for how, text in result["reports"].items()}
    by_id = {how: {task["id"]: task for task in report["tasks"]} for how, report in reports.items()}
    every = {task["id"]: task for task in before["tasks"]}
    assert before["errors"] == [] and len(every) == 7
    address = {task_id: every[task_id]["address"] for task_id in every}

    # Cleared: no reference left, though the list holds one on every task it lists.
    victim = victims["cleared"]
    freed = by_id["cleared"][victim]
    assert sorted(by_id["cleared"]) == sorted(every)
    assert freed["state"] == "idle" and same_tree(freed["root"], every[victim]["root"])
    assert freed["error"] == "its reference count is 0, yet its runtime lists it (freed or corrupt memory?)"
    # Each about its task, as its memory says.
    errors = [{"kind": "memory", "message": "task %d at %s: %s" % (victim, address[victim], freed["error"]), "task": victim}]
    assert reports["cleared"]["errors"] == errors

    # glibc's tcache words: its state word is `address >> 12`, a large reference count.
    # With bit 1 set it says complete while its future is still in place, which tokio never
    # lets be; with bit 1 clear nothing in its bytes contradicts tokio, and it reads as a
    # task whose state is the allocator's, its tree as it was (what no reader can tell).
    victim = victims["tcache"]
    freed = by_id["tcache"][victim]
    assert sorted(by_id["tcache"]) == sorted(every) and same_tree(freed["root"], every[victim]["root"])
    if (int(address[victim], 16) >> 12) & 2:
        assert freed["state"] == "complete"
        assert freed["error"] == "its state says complete, but its future is still in place (freed or corrupt memory?)"
        errors.append({"kind": "memory", "message": "task %d at %s: %s" % (victim, address[victim], freed["error"]),
                       "task": victim})
    else:
        assert freed["state"] != "complete" and "error" not in freed
    assert reports["tcache"]["errors"] == errors

    # Reused, its vtable pointer is 0xa5a5...: an error naming it, and every other task of
    # its list still found (from the list's tail).
    victim = victims["reused"]
    reused = reports["reused"]
    assert sorted(by_id["reused"]) == sorted(task_id for task_id in every if task_id != victim)
    # tokio counts 7 tasks; one could not be read, and the report says which and why.
    [runtime] = reused["runtimes"]
    assert (runtime["task_count"], runtime["tasks_read"]) == (7, 6)
    [list_error, *task_errors] = reused["errors"]
    assert runtime["missing"] == list_error["message"].split(": ", 1)[1]
    assert task_errors == errors
    assert (list_error["kind"], list_error["runtime"]) == ("layout", runtime["address"]), list_error
    assert re.fullmatch(
        r"runtime 0x[0-9a-f]+: task list shard \d+: cannot follow the task at %s: vtable of task %s: "
        r"cannot read 8 bytes at 0xa5a5a5a5a5a5a5a5" % (address[victim], address[victim]), list_error["message"]), reused["errors"]
    for task_id, task in by_id["reused"].items():
        if task_id not in victims.values():
            assert same_tree(task, every[task_id])
    text = result["text"]
    assert text.startswith("tokio %s: 1 runtime (MultiThread), 6 of 7 tasks\nruntime %s: tokio counts 7 tasks; 6 read (%s)\n"
                           % (locked_version("tokio"), runtime["address"], runtime["missing"])), text
    assert text.rstrip().endswith("\n".join("error: " + error["message"] for error in reused["errors"])), text


# --- Stopped while tokio changes a task list ------------------------------------------

# The tasks `churn` spawns and lets finish.
CHURNED = "tokio_app::churn::{closure#0}::{async_block#0}"

# Runs inside the debugger once tokio-app's `churn` mode has started spawning tasks that
# finish at once: for each breakpoint line inside tokio's linked list, resumes until the
# list being changed is a runtime's task list (the caller is tokio's sharded list) and
# reports there, `HITS` times; at the last line, more (up to 20) until a worker's run
# queue holds tasks, which is often but not always so.
MUTATION_SCRIPT = r"""
import json
stops = []
for where, file, line in LINES:
    break_at_line(file, line)
    hits = resumes = 0
    queued = where != LINES[-1][0]
    while (hits < HITS or not queued) and hits < 20 and resumes < 500 and resume():
        resumes += 1
        frames = frame_names(3)
        if not any("sharded_list" in name for name in frames[1:]):
            continue
        hits += 1
        report = run_command("async bt all --json")
        try:
            queued = queued or any(thread["queue"] and thread["queue"]["local"] for thread in json.loads(report)["threads"])
        except ValueError:
            pass
        stops.append({"where": where, "frames": frames, "json": report, "text": run_command("async bt all")})
    delete_breakpoints()
print("@@stops " + json.dumps(stops))
"""


def test_stopped_while_a_task_list_changes(debugger, tmp_path):
    """tokio's intrusive list adds at the front (it has no push_back) and removes anywhere;
    a task joins a runtime's list on the thread that spawns it and leaves it on the worker
    that completes it. Stopped halfway through either, the list reads as before or after."""
    binary = build.fixture("tokio-app", "dev")
    manifest = tmp_path / "manifest.json"
    source = "linked_list.rs"
    lines = [
        # The new task links to the old head, which links back to it; the head is not it yet.
        ("push_front", source, line_of("util/linked_list.rs", "push_front", "self.head = Some(ptr);")),
        # The task's predecessor (or the head) skips it; its successor still points back at it.
        ("remove", source, line_of("util/linked_list.rs", "remove", "if let Some(next) = L::pointers(node).as_ref().get_next() {")),
    ]
    load = script_step(debugger, tmp_path / "mutation.py", "LINES = %r\nHITS = 3\n" % lines + MUTATION_SCRIPT)
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run", load, debugger.echo(ALIVE)],
        program=binary, args=["churn"], env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert_debugger_fine(run)
    [line] = tagged_lines(run, "stops")
    stops = json.loads(line)
    wheres = [stop["where"] for stop in stops]
    assert wheres[:6] == ["push_front"] * 3 + ["remove"] * 3 and set(wheres[6:]) <= {"remove"}, wheres
    roots = expected_roots(json.loads(manifest.read_text())["tasks"])
    queued = []
    for stop in stops:
        report = json.loads(stop["json"])
        # Every walk finds a whole list: the one being changed reads as before or after.
        assert report["errors"] == [], stop
        [runtime] = report["runtimes"]
        tasks = {task["id"]: root_function(task) for task in report["tasks"]}
        assert runtime["tasks_read"] == len(tasks) and runtime["shutting_down"] is False
        # tokio counts a task once it has linked it, and stops once it has unlinked it, the
        # shard locked meanwhile: a stop in between reads as many more or fewer as threads
        # hold shards, and says which.
        if runtime["task_count"] != len(tasks):
            locked = re.fullmatch(r"shards? ([\d, ]+) (is|are) locked: (a thread is|threads are) adding or removing "
                                  r"(a task|tasks)", runtime["missing"])
            assert locked, runtime
            assert abs(runtime["task_count"] - len(tasks)) <= len(locked.group(1).split(", ")), runtime
        assert {task_id: tasks.get(task_id) for task_id in roots} == roots
        assert set(tasks[task_id] for task_id in tasks if task_id not in roots) <= {CHURNED}
        counted = max(runtime["task_count"], len(tasks))
        shown = "%d tasks" % counted if counted == len(tasks) else "%d of %d tasks" % (len(tasks), counted)
        assert stop["text"].startswith("tokio %s: 1 runtime (MultiThread), %s\n" % (locked_version("tokio"), shown))
        # What the workers have queued are tasks of the list.
        queues = [thread["queue"] for thread in report["threads"] if thread["queue"]]
        in_queues = runtime["inject"] + [task for queue in queues for task in queue["local"] + [queue["lifo_slot"]] if task]
        assert set(in_queues) <= set(tasks), stop
        queued += [task for queue in queues for task in queue["local"]]
    # Workers take tasks from the inject queue in batches: their run queues were read.
    assert queued, stops


# --- A runtime stopped in its shutdown ------------------------------------------------

# Runs inside the debugger on tokio-app in `shutdown` mode, whose runtime is dropped while
# it owns every parked task: stops where each worker starts closing the task list, and
# where it is about to shut down each task it took off the list, until the program exits.
SHUTDOWN_SCRIPT = r"""
import json
delete_breakpoints()
for where, file, line in LINES:
    break_at_line(file, line)
stops = []
while len(stops) < 30 and resume():
    where = [where for where, file, line in LINES if line == stop_line()]
    stops.append({"where": where, "frames": frame_names(2), "json": run_command("async bt all --json"),
                  "text": run_command("async bt all")})
print("@@stops " + json.dumps(stops))
"""


def test_stopped_in_runtime_shutdown(debugger, tmp_path):
    """Both workers close the list and take tasks off it, in parallel: how many stops there
    are, and how many tasks each sees, depends on which thread the debugger reports first.
    Every stop gives a whole report: the tasks not yet taken off, the runtime shutting down."""
    binary = build.fixture("tokio-app", "dev")
    manifest = tmp_path / "manifest.json"
    lines = [
        ("closing", "list.rs", line_of("runtime/task/list.rs", "close_and_shutdown_all", "self.closed.store(true, Ordering::Release);")),
        ("shutting_down_task", "list.rs", line_of("runtime/task/list.rs", "close_and_shutdown_all", "task.shutdown();")),
    ]
    load = script_step(debugger, tmp_path / "shutdown.py", "LINES = %r\n" % lines + SHUTDOWN_SCRIPT)
    run = debugger.run_steps([debugger.break_at("main"), "run", load, debugger.echo(ALIVE)], program=binary, args=["shutdown"],
                             env={"FIXTURE_MANIFEST": str(manifest)})
    assert_debugger_fine(run)
    [line] = tagged_lines(run, "stops")
    stops = json.loads(line)
    roots = expected_roots(json.loads(manifest.read_text())["tasks"])
    # Two workers close the list (each stops there once) and shut down 7 tasks.
    assert 3 <= len(stops) <= 9, [stop["text"] for stop in stops]
    assert all("close_and_shutdown_all" in stop["frames"][0] for stop in stops)
    wheres = [where for stop in stops for where in stop["where"]]
    assert len(wheres) == len(stops) and wheres[0] == "closing" and "shutting_down_task" in wheres, wheres
    listed = []
    for stop in stops:
        report = json.loads(stop["json"])
        assert report["errors"] == [], stop
        [runtime] = report["runtimes"]
        tasks = {task["id"]: root_function(task) for task in report["tasks"]}
        assert runtime["tasks_read"] == len(tasks) and tasks == {task_id: roots[task_id] for task_id in tasks}
        assert report["threads"]
        # A worker taking a task off the list holds its shard: tokio's count may lag by one.
        counted = max(runtime["task_count"], len(tasks))
        assert counted - len(tasks) <= 1 and (counted == len(tasks) or "locked" in runtime["missing"]), runtime
        shown = {1: "1 task"}.get(counted, "%d tasks" % counted) if counted == len(tasks) else "%d of %d tasks" % (len(tasks), counted)
        header = "tokio %s: 1 runtime (MultiThread), %s\n" % (locked_version("tokio"), shown)
        assert stop["text"].startswith(header), stop["text"]
        closed = "runtime %s: shutting down (its task list is closed)\n" % runtime["address"]
        assert runtime["shutting_down"] == (closed in stop["text"])
        # A worker takes tasks off the list once it has closed it.
        if stop["where"] == ["shutting_down_task"]:
            assert runtime["shutting_down"] is True
        listed.append((runtime["shutting_down"], set(tasks)))
    # The first stop: every task, the list about to close; then tasks leave, none come back.
    assert listed[0] == (False, set(roots))
    assert all(later <= earlier for (_, earlier), (_, later) in zip(listed, listed[1:]))
    assert listed[-1] == (True, set())
