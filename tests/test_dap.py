"""`tokio-async dap -- lldb-dap-19`: a DAP client drives the proxy as an editor would
(initialize, launch or attach, breakpoints, configurationDone, stopped, threads,
stackTrace full and paged, scopes, variables, evaluate, the custom tokioAsync/tasks,
next, continue, disconnect) and finds each task as a thread of its own."""

import json
import os
import re
import signal
import subprocess

import pytest
from support import build
from support.dap import DapClient, DapError
from support.markers import Markers
from support.paths import FIXTURE_SOURCE, REPO
from support.process import RunningFixture

PROXY = os.path.join(REPO, "target", "release", "tokio-async")
ADAPTER = "lldb-dap-19"
TASK_THREAD_BASE = 1 << 40
MARKERS = Markers()
SOURCE = os.path.realpath(FIXTURE_SOURCE)


def start(launch_or_attach, arguments, argv=(PROXY, "dap", "--", ADAPTER), breakpoints=None):
    """A proxied session stopped at tokio_async_checkpoint (launch; or at the source line
    `breakpoints` says), or attached."""
    client = DapClient(list(argv))
    client.request("initialize", {"adapterID": "lldb-dap", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
    seq = client.send(launch_or_attach, arguments)
    client.wait_event("initialized")
    if breakpoints:
        client.request("setBreakpoints", {"source": {"path": breakpoints["path"]}, "breakpoints": [{"line": breakpoints["line"]}]})
    elif launch_or_attach == "launch":
        client.request("setFunctionBreakpoints", {"breakpoints": [{"name": "tokio_async_checkpoint"}]})
    client.request("configurationDone")
    reply = client.response(seq)
    assert reply["success"], reply
    return client


def launch(tmp_path, program, args, settings=None, profile="dev", argv=(PROXY, "dap", "--", ADAPTER)):
    manifest = tmp_path / "manifest.json"
    arguments = {"program": build.fixture(program, profile), "args": args, "env": ["FIXTURE_MANIFEST=%s" % manifest]}
    if settings is not None:
        arguments["tokioAsync"] = settings
    client = start("launch", arguments, argv)
    stopped = client.wait_event("stopped", timeout=120)
    return client, stopped, json.loads(manifest.read_text())


def task_threads(threads):
    return {thread["id"] - TASK_THREAD_BASE: thread["name"] for thread in threads if thread["id"] >= TASK_THREAD_BASE}


def test_tasks_are_threads_with_their_await_chains_and_held_locals(tmp_path):
    client, stopped, manifest = launch(tmp_path, "tokio-app", ["breakpoint", "multi_thread"])
    try:
        threads = client.request("threads")["threads"]
        real = [thread for thread in threads if thread["id"] < TASK_THREAD_BASE - 1]
        # The adapter's own threads are kept: the main thread and the two workers.
        assert sorted(thread["name"] for thread in real) == ["tokio-app", "tokio-rt-worker", "tokio-rt-worker"]
        assert stopped["body"]["threadId"] in [thread["id"] for thread in real]
        tasks = task_threads(threads)
        ids = manifest["tasks"]
        live = sorted(task_id for name, task_id in ids.items() if name != "finished")
        assert sorted(tasks) == live
        level1 = ids["level1"]
        assert tasks[level1].startswith("task %d · tokio_app::level1 · recv on oneshot 0x" % level1), tasks[level1]
        assert tasks[ids["runner"]] == "task %d · tokio_app::runner · running" % ids["runner"]
        assert tasks[ids["sleeper"]].startswith("task %d · tokio_app::sleeper · Sleep until +" % ids["sleeper"])

        # Its await chain, innermost first: the leaf a label row, each async fn at its line.
        trace = client.request("stackTrace", {"threadId": TASK_THREAD_BASE + level1})
        frames = [(frame["name"], frame.get("source", {}).get("path"), frame["line"], frame.get("presentationHint")) for frame in trace["stackFrames"]]
        assert frames[0][0].startswith("recv on oneshot 0x") and frames[0][1:] == (None, 0, "label")
        assert frames[1:] == [
            ("async fn tokio_app::level%d (await #%d)" % (n, MARKERS.await_index("level%d" % n)), SOURCE, MARKERS.await_line("level%d" % n), None)
            for n in (3, 2, 1)
        ]
        assert trace["totalFrames"] == 4
        paged = client.request("stackTrace", {"threadId": TASK_THREAD_BASE + level1, "startFrame": 1, "levels": 2})
        assert paged["stackFrames"] == trace["stackFrames"][1:3] and paged["totalFrames"] == 4

        # The locals level1 keeps across its await; before the adapter has shown a stack
        # of this stop, as the report shows them.
        scopes = client.request("scopes", {"frameId": trace["stackFrames"][3]["id"]})["scopes"]
        assert [scope["name"] for scope in scopes] == ["Held across await"]
        variables = client.request("variables", {"variablesReference": scopes[0]["variablesReference"]})["variables"]
        assert [(v["name"], v["type"], v["variablesReference"]) for v in variables] == [("rx", "tokio::sync::oneshot::Receiver<u32>", 0)]
        rx = variables[0]["memoryReference"]
        assert variables[0]["value"] == "tokio::sync::oneshot::Receiver<u32> at %s" % rx

        # Once it has (an editor asks for the stopped thread's stack first), each value the
        # report does not spell is the adapter's own, expanded as its variables are.
        client.request("stackTrace", {"threadId": stopped["body"]["threadId"], "startFrame": 0, "levels": 1})
        variables = client.request("variables", {"variablesReference": scopes[0]["variablesReference"]})["variables"]
        assert [(v["name"], v["type"], v["memoryReference"]) for v in variables] == [("rx", "tokio::sync::oneshot::Receiver<u32>", rx)]
        assert 0 < variables[0]["variablesReference"] < TASK_THREAD_BASE - 1
        fields = client.request("variables", {"variablesReference": variables[0]["variablesReference"]})["variables"]
        option = "core::option::Option<alloc::sync::Arc<tokio::sync::oneshot::Inner<u32>, alloc::alloc::Global>>"
        assert [(field["name"], field["type"]) for field in fields] == [("inner", option)]
        assert fields[0]["value"] == "%s @ 0x%x" % (option, int(rx, 16)) and fields[0]["variablesReference"] > 0

        # The stack of the thread polling the runner task keeps the adapter's frames and
        # names the task below the frame that polls it; pages read alike.
        worker = stopped["body"]["threadId"]
        whole = client.request("stackTrace", {"threadId": worker})
        names = [frame["name"] for frame in whole["stackFrames"]]
        assert names[0] == "tokio_async_checkpoint" and whole["totalFrames"] == len(names)
        label = names.index("task %d · tokio_app::runner" % ids["runner"])
        assert "task::harness::Harness" in names[label - 1] and "::poll" in names[label - 1]
        assert whole["stackFrames"][label]["presentationHint"] == "label"
        page = client.request("stackTrace", {"threadId": worker, "startFrame": label - 2, "levels": 4})
        assert [frame["name"] for frame in page["stackFrames"]] == names[label - 2:label + 2]

        # The REPL takes the async commands as they are; the report as JSON on request.
        table = client.request("evaluate", {"expression": "async tasks", "context": "repl"})["result"]
        assert "ID  STATE" in table and "tokio_app::level1" in table
        report = client.request("tokioAsync/tasks")
        assert sorted(task["id"] for task in report["tasks"]) == live

        # Continue on a task thread runs the program until that task is next polled, and is
        # answered at once; level1 never is, so the editor's pause ends it (the adapter
        # answers nothing meanwhile: the proxy interrupts through the script).
        reply = client.request("continue", {"threadId": TASK_THREAD_BASE + level1})
        assert reply == {"allThreadsContinued": True}
        client.wait_event("continued")
        client.request("pause", {"threadId": stopped["body"]["threadId"]})
        paused = client.wait_event("stopped")
        assert paused["body"]["reason"] == "pause"
        said = "".join(event["body"].get("output", "") for event in client.seen_events if event["event"] == "output")
        assert "async until-polled interrupted" in said, said
        again = task_threads(client.request("threads")["threads"])
        assert level1 in again and ids["sleeper"] in again
    finally:
        client.request("disconnect", {"terminateDebuggee": True})
        client.close()
    assert client.process.returncode == 0


STEPPING_SOURCE = os.path.join(REPO, "tests", "fixtures", "stepping-app", "src", "main.rs")


def step_lines():
    lines = {}
    with open(STEPPING_SOURCE) as source:
        for number, text in enumerate(source, start=1):
            found = re.search(r"//\s*@step\s+(\w+)", text)
            if found and not text.lstrip().startswith("//!"):
                lines[found.group(1)] = number
    return lines


def step(client, command, thread):
    """Sends `command` for `thread`; the stop it ends in, and the top frame there."""
    client.request(command, {"threadId": thread}, timeout=60)
    stopped = client.wait_event("stopped", timeout=60)["body"]
    top = client.request("stackTrace", {"threadId": stopped["threadId"], "startFrame": 0, "levels": 1})["stackFrames"][0]
    return stopped, (function_path(top["name"]), top["line"])


def function_path(name):
    """stepping_app::level3 of lldb's `stepping_app::level3::_$u7b$$u7b$closure$u7d$$u7d$`."""
    return re.sub(r"::_\$u7b\$\$u7b\$closure\$u7d\$\$u7d\$.*", "", name)


def test_stepping_a_thread_follows_its_task_and_continuing_a_task_waits_for_its_poll(tmp_path):
    """50 tasks run level1 -> level2 -> level3 (stepping-app); stopped in task n == 7's
    level3, the editor's next/stepIn/stepOut follow that task across its awaits (async
    next/step/finish), as the adapter's own do outside its async fns; a task thread's
    continue stops where that task is polled next, and is refused in one line for a task
    being polled at the stop; the REPL's `async next` runs in the editor's frame."""
    lines = step_lines()
    program = build.fixture("stepping-app", "dev")
    client = start("launch", {"program": program, "args": ["multi"]}, breakpoints={"path": STEPPING_SOURCE, "line": lines["begin"]})
    try:
        first = client.wait_event("stopped", timeout=120)["body"]
        client.request("setBreakpoints", {"source": {"path": STEPPING_SOURCE}, "breakpoints": []})
        client.request("threads")
        thread = first["threadId"]
        stopped, top = step(client, "next", thread)
        assert (stopped["reason"], top) == ("step", ("stepping_app::level3", lines["lock"]))
        # Across the lock's await: the task may go on in another worker, which the stop names.
        stopped, top = step(client, "next", stopped["threadId"])
        assert top == ("stepping_app::level3", lines["bump"])
        thread = stopped["threadId"]
        client.request("threads")
        # `*guard += 1` awaits nothing: the adapter's own step in (into the guard's deref),
        # and its own step out of that.
        _, (function, _) = step(client, "stepIn", thread)
        assert "MutexGuard" in function, function
        stopped, top = step(client, "stepOut", thread)
        assert top == ("stepping_app::level3", lines["bump"])
        client.request("threads")
        # In level3's own frame, step out finishes it: back in level2, after its await.
        stopped, top = step(client, "stepOut", stopped["threadId"])
        assert top == ("stepping_app::level2", lines["after3"])
        said = "".join(event["body"].get("output", "") for event in client.seen_events if event["event"] == "output")
        assert "stepping_app::level3 returned" in said, said

        # The watched task is the one being polled at this stop: its thread's continue is
        # refused in one line, and the editor is told it stopped where it was, and why.
        [watched] = re.findall(r"^task (\d+), async fn stepping_app::level2 at ", said, re.M)
        before = len(client.seen_events)
        stopped, top = step(client, "continue", TASK_THREAD_BASE + int(watched))
        assert top == ("stepping_app::level2", lines["after3"])
        notes = "".join(event["body"].get("output", "") for event in client.seen_events[before:] if event["event"] == "output")
        refusal = "task %s is being polled now; `async next` or `async finish` follow it from its frame" % watched
        assert "error: tokio-async: %s\n" % refusal in notes, notes
        # Shown as why the program is paused: no step ended.
        assert (stopped["reason"], stopped.get("description")) == ("pause", refusal), stopped

        # A task thread's continue: stops in the worker that polls that task next, whose
        # stack names it below the poll frame.
        # Any level1 task is polled again soon (its sleep ends, the lock or the channel frees);
        # a sleeping one first, as the stop may find every task queued on the lock or channel.
        # Not one another worker is polling at this stop: its continue is refused, as above
        # (CI once picked task 7 mid-poll).
        threads = client.request("threads")["threads"]
        level1 = [thread for thread in threads if thread["id"] >= TASK_THREAD_BASE and " · stepping_app::level1 · " in thread["name"]]
        suspended = [thread for thread in level1 if not thread["name"].endswith(" · running")]
        idle = [thread["id"] for thread in sorted(suspended, key=lambda thread: "Sleep until" not in thread["name"])]
        assert idle, threads
        task = idle[0] - TASK_THREAD_BASE
        stopped, _ = step(client, "continue", idle[0])
        assert stopped["reason"] == "step"
        after = client.request("threads")["threads"]
        names = [frame["name"] for frame in client.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]]
        # Said whole when it fails (it did twice in CI; pytest cuts an assertion's message
        # short): the proxy's notes and its threads.
        notes = [event["body"].get("output", "") for event in client.seen_events if event["event"] == "output"][-5:]
        if not any(name.startswith("task %d · " % task) for name in names):
            pytest.fail("task %d not below the poll frame: %s" % (task, json.dumps([stopped, names, notes, after], indent=1)))

        # The REPL's `async next` runs in the frame the editor has selected (lldb-dap alone
        # would run it in its debugger's selected thread), and says where it stopped: the
        # task's innermost async fn of the program's own (the task may be polled in tokio's
        # `yield_now` or `Mutex::lock`, which it awaits), above the label that names it.
        frames = client.request("stackTrace", {"threadId": stopped["threadId"]})["stackFrames"]
        label = next(at for at, frame in enumerate(frames) if frame.get("presentationHint") == "label")
        own = next(frame for frame in frames[:label] if function_path(frame["name"]).startswith("stepping_app::"))
        said = client.request("evaluate", {"expression": "async next", "context": "repl", "frameId": own["id"]}, timeout=60)["result"]
        assert re.search(r"^task %d, async fn stepping_app::\w+ at stepping-app/src/main.rs:\d+$" % task, said, re.M), said
        assert client.wait_event("stopped", timeout=30)["body"]["reason"] == "step"
    finally:
        client.request("disconnect", {"terminateDebuggee": True})
        client.close()
    assert client.process.returncode == 0


@pytest.mark.parametrize("flavor,profile", [("current_thread", "dev"), ("local_set", "dev"), ("multi_thread", "release")])
def test_every_flavor_and_build_lists_its_tasks(tmp_path, flavor, profile):
    # As editors start it: `tokio-async dap`, which finds lldb-dap-19 on PATH.
    client, _, manifest = launch(tmp_path, "tokio-app", ["breakpoint", flavor], profile=profile, argv=(PROXY, "dap"))
    try:
        tasks = task_threads(client.request("threads")["threads"])
        ids = manifest["tasks"]
        assert sorted(tasks) == sorted(task_id for name, task_id in ids.items() if name != "finished")
        frames = client.request("stackTrace", {"threadId": TASK_THREAD_BASE + ids["level1"]})["stackFrames"]
        assert [(frame["name"].split(" (await")[0], frame["line"]) for frame in frames[1:]] == [
            ("async fn tokio_app::level%d" % n, MARKERS.await_line("level%d" % n)) for n in (3, 2, 1)
        ]
    finally:
        client.request("disconnect", {"terminateDebuggee": True})
        client.close()


def test_ten_thousand_tasks_are_capped_and_filtered(tmp_path):
    settings = {"taskLimit": 50, "taskFilter": {"waitingOn": "mutex_lock"}}
    client, _, manifest = launch(tmp_path, "many-tasks", ["10000", "2"], settings)
    try:
        threads = client.request("threads", timeout=120)["threads"]
        waiting = [int(task_id) for task_id in manifest["facts"]["shape.2"].split(",")]
        tasks = task_threads(threads)
        assert sorted(tasks) == sorted(waiting)[:50]
        more = [thread["name"] for thread in threads if thread["id"] == TASK_THREAD_BASE - 1]
        assert more == ["… %d more tasks (tokioAsync.taskLimit, tokioAsync.taskFilter)" % (len(waiting) - 50)]
        first = min(tasks)
        assert tasks[first].startswith("task %d · many_tasks::handle_request · waiting for Mutex 0x" % first), tasks[first]
        frames = client.request("stackTrace", {"threadId": TASK_THREAD_BASE + first})["stackFrames"]
        assert [frame["name"].split(" (await")[0] for frame in frames[1:]] == [
            "async fn many_tasks::query", "async fn many_tasks::authorize", "async fn many_tasks::handle_request"
        ]
    finally:
        client.request("disconnect", {"terminateDebuggee": True})
        client.close()


def pause_until_stopped(client, thread):
    """The adapter resumes an attached program after configurationDone; a pause sent
    before that is lost, so it is sent again until the program stops."""
    for _ in range(10):
        client.request("pause", {"threadId": thread})
        try:
            return client.wait_event("stopped", timeout=3)
        except DapError:
            continue
    raise DapError("the program never stopped")


class AdapterDeadlockedInDetach(Exception):
    """lldb-dap 19's own deadlock: under load its `disconnect` can hang for good in
    `SBProcess::Detach`, against another of its threads waiting in `SBProcess` (a missing
    answer 5 times in about 70 runs of test_dap.py at `-n 2`; the one read by GDB was this,
    with the adapter alone)."""


def adapter_stuck_in_detach(client):
    """Whether lldb-dap (the client's process, or the proxy's child) is in that deadlock:
    its main thread's stack, read by GDB; its pid, to kill, if so."""
    pids = [client.process.pid] + subprocess.run(["pgrep", "-P", str(client.process.pid), "lldb-dap"],
                                                 capture_output=True, text=True).stdout.split()
    for pid in map(int, pids):
        try:
            with open("/proc/%d/comm" % pid) as comm:
                if not comm.read().startswith("lldb-dap"):
                    continue
        except OSError:
            continue  # gone
        stack = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid), "-ex", "bt"], capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=60).stdout
        return pid if "SBProcess::Detach" in stack else None
    return None


def attach_look_and_detach(argv, fixture):
    """Attaches with `argv` as the adapter, stops, reads threads, detaches; the task threads
    and what is left of the process (whether traced, its threads' states). Once more if
    lldb-dap deadlocked in its detach (killed, it leaves the program untraced and running)."""
    try:
        return attach_look_and_detach_once(argv, fixture)
    except AdapterDeadlockedInDetach:
        return attach_look_and_detach_once(argv, fixture)


def attach_look_and_detach_once(argv, fixture):
    client = DapClient(argv)
    client.request("initialize", {"adapterID": "lldb-dap", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
    seq = client.send("attach", {"pid": fixture.pid, "program": build.fixture("many-tasks", "dev")})
    client.wait_event("initialized")
    client.request("configurationDone")
    assert client.response(seq)["success"]
    try:
        pause_until_stopped(client, fixture.pid)
        tasks = task_threads(client.request("threads")["threads"])
    finally:
        try:
            client.request("disconnect", {"terminateDebuggee": False}, timeout=20)
        except DapError:
            stuck = adapter_stuck_in_detach(client)
            if stuck is None:
                raise
            os.kill(stuck, signal.SIGKILL)
            client.close()
            raise AdapterDeadlockedInDetach() from None
        client.close()
    status = open("/proc/%d/status" % fixture.pid).read()
    tracer = [line.split()[1] for line in status.splitlines() if line.startswith("TracerPid:")]
    return tasks, tracer


def test_attach_and_detach_leave_the_program_as_the_adapter_alone_does(tmp_path):
    with RunningFixture(build.fixture("many-tasks", "dev"), "120", str(tmp_path), extra_args=["2"]) as fixture:
        tasks, proxied = attach_look_and_detach([PROXY, "dap", "--", ADAPTER], fixture)
        assert len(tasks) == 100  # the default limit, of the 121 tasks
        none, alone = attach_look_and_detach([ADAPTER], fixture)
        assert none == {} and proxied == alone == ["0"]
        assert fixture.process.poll() is None


def test_a_missing_adapter_is_one_line():
    result = subprocess.run([PROXY, "dap", "--", "no-such-adapter"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert result.returncode == 2 and result.stderr.startswith("tokio-async: cannot start no-such-adapter:"), result.stderr
