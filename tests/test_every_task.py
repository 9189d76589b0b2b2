"""Every task of every runtime and LocalSet, whatever drives it (tests/fixtures/local-app):
a LocalSet as the block_on future (by value and pinned), awaited in a task, run_until,
joined LocalSets and one never polled, a LocalRuntime, tokio-util's pinned pool, runtimes
in statics and in a struct no thread is inside, and the client side of HTTP (LocalSet
tasks waiting for responses, hyper connections on the runtime beside them). In GDB, LLDB 19
and LLDB 14 and the executable, attached and from a core, dev and release: every task is
listed with its exact tree under the list that owns it, found the way it can be found,
and each count tokio keeps equals the tasks read. Then each way of finding a list is
broken on purpose, and the report says what is missing."""

import json
import re

import pytest
from support import build, expect
from support.checkpoint import markers_of
from support.debuggers import Gdb, capture
from support.inferior import script_step, tagged_lines
from support.process import RunningFixture
from test_standalone import EXECUTABLE, tokio_async

PROFILES = ["dev", "release"]
PROGRAM = "local-app"
LOCAL_SLEEPERS = ["bl_sleeper", "pinned_sleeper", "inner_sleeper", "run_until_sleeper", "first_sleeper",
                  "second_sleeper", "local_runtime_sleeper"]
RUNTIME_SLEEPERS = ["run_until_runtime_task", "struct_sleeper", "static_sleeper", "lazy_sleeper"]
HTTP_CLIENTS = 2
REQUESTS_PER_CLIENT = 2


@pytest.fixture(scope="module")
def markers():
    return markers_of(PROGRAM)


@pytest.fixture(scope="module", params=PROFILES)
def stuck(request, tmp_path_factory):
    """local-app parked in every shape, attached to as it runs, and a core of it (gcore)."""
    directory = tmp_path_factory.mktemp("every-task-%s" % request.param)
    binary = build.fixture(PROGRAM, request.param)
    core = directory / "local-app.core"
    with RunningFixture(binary, "all", str(directory), extra_args=["hang"]) as fixture:
        gdb = Gdb()
        run = gdb.run_steps(["gcore %s" % core], pid=fixture.pid)
        assert core.exists(), run.stdout + run.stderr
        yield request.param, binary, fixture, str(core)


def facts_of(fixture):
    facts = fixture.manifest["facts"]
    tasks = {name[len("task."):]: int(value) for name, value in facts.items() if name.startswith("task.")}
    threads = {name[len("thread."):]: int(value) for name, value in facts.items() if name.startswith("thread.")}
    return tasks, threads


def owners(tasks, threads):
    """The list each named task is on: (flavor, the ways it may have been found)."""
    def block_on(shape):
        return {"via": "block_on_future", "thread": threads[shape]}

    def context(shape):
        return {"via": "thread_context", "thread": threads[shape]}

    def static(name):
        return {"via": "static", "name": "local_app::%s" % name}

    expected = {
        "bl_sleeper": ("LocalSet", [block_on("block_on_local_set")]),
        "bl_waiter": ("LocalSet", [block_on("block_on_local_set")]),
        "bl_holder": ("CurrentThread", [context("block_on_local_set")]),
        "pinned_sleeper": ("LocalSet", [block_on("block_on_pinned")]),
        "awaiting_inner": ("LocalSet", [block_on("awaited")]),
        # The block_on future keeps the bytes of the LocalSet it moved into the task.
        "inner_sleeper": ("LocalSet", [block_on("awaited"), {"via": "task_future", "task": tasks["awaiting_inner"]}]),
        "run_until_sleeper": ("LocalSet", [block_on("run_until")]),
        "run_until_runtime_task": ("MultiThread", [context("run_until")]),
        "first_sleeper": ("LocalSet", [block_on("joined")]),
        "second_sleeper": ("LocalSet", [block_on("joined")]),
        "never_polled": ("LocalSet", [block_on("joined")]),
        "local_runtime_sleeper": ("CurrentThread", [context("local_runtime")]),
        "pool_forwarder": ("CurrentThread", [context("pool_worker")]),
        "pool_pinned": ("CurrentThread", [context("pool_worker")]),
        "static_sleeper": ("CurrentThread", [static("STATIC_RUNTIME")]),
        "bridge": ("CurrentThread", [static("STATIC_RUNTIME")]),
        "lazy_sleeper": ("CurrentThread", [static("LAZY_RUNTIME")]),
        "struct_sleeper": ("CurrentThread", [{"via": "task_future", "task": tasks["bridge"]}]),
    }
    for client in range(HTTP_CLIENTS):
        for request in range(REQUESTS_PER_CLIENT):
            expected["fetch_%d_%d" % (client, request)] = ("LocalSet", [block_on("http_client_%d" % client)])
    return expected


def own_chains(markers):
    """The exact trees of the tasks whose whole tree is the fixture's own."""
    def suspended(function, marker):
        return expect.suspended(markers, "async_fn", "local_app::%s" % function, marker)

    chains = {name: [suspended("local_sleeper", "local_sleeper"), expect.SLEEP] for name in LOCAL_SLEEPERS}
    chains.update({name: [suspended("runtime_sleeper", "runtime_sleeper"), expect.SLEEP] for name in RUNTIME_SLEEPERS})
    chains["never_polled"] = [("async_fn", "local_app::local_sleeper", "unresumed", None, markers.fns["local_sleeper"])]
    chains["bl_waiter"] = [suspended("answer_waiter", "answer_waiter"), expect.RECEIVER]
    chains["bl_holder"] = [suspended("answer_holder", "answer_holder"), expect.SLEEP]
    chains["bridge"] = [suspended("bridge", "bridge"), expect.SLEEP]
    chains["awaiting_inner"] = [suspended("await_local_set", "await_local_set"),
                                ("local_set", "tokio::task::local::LocalSet", None, None, None)]
    return chains


def leaf(node):
    while node["children"]:
        node = node["children"][0]
    return node


def check_every_task(report, fixture, markers, live=True):
    """Every task listed, each under its list, found its way, with its exact tree; every
    count tokio keeps equal to the tasks read; nothing else."""
    tasks, threads = facts_of(fixture)
    assert report["errors"] == []
    by_id = {task["id"]: task for task in report["tasks"]}
    lists = {runtime["address"]: runtime for runtime in report["runtimes"]}
    for runtime in report["runtimes"]:
        assert runtime.get("missing") is None, runtime
        if runtime["flavor"] == "LocalSet":
            assert runtime["task_count"] is None, runtime
        else:
            assert runtime["task_count"] == runtime["tasks_read"], runtime
        assert runtime["tasks_read"] == sum(1 for task in report["tasks"] if task["runtime"] == runtime["address"])
    for name, (flavor, found_by) in owners(tasks, threads).items():
        task = by_id.get(tasks[name])
        assert task is not None, "%s (task %d) is not listed" % (name, tasks[name])
        owner = lists[task["runtime"]]
        assert owner["flavor"] == flavor, (name, owner)
        assert owner["found_by"] in found_by, (name, owner)
        assert "error" not in task, task
    for name, chain in own_chains(markers).items():
        assert expect.chain(by_id[tasks[name]]["root"]) == chain, name
    # Library frames above the program's own: what each ends in.
    pinned = expect.chain(by_id[tasks["pool_pinned"]]["root"])
    assert pinned[-2:] == [expect.suspended(markers, "async_fn", "local_app::pinned_task", "pinned_task"), expect.SLEEP]
    forwarder = leaf(by_id[tasks["pool_forwarder"]]["root"])
    assert (forwarder["kind"], forwarder["detail"]["task_id"]) == ("join_handle", tasks["pool_pinned"])
    # Each request waits for its response, whose sender a hyper connection task on the
    # same thread's runtime holds: the only tasks not named.
    named = set(tasks.values())
    connections = {task["id"]: task for task in report["tasks"] if task["id"] not in named}
    assert len(connections) == HTTP_CLIENTS * REQUESTS_PER_CLIENT
    for client in range(HTTP_CLIENTS):
        runtime = [r for r in report["runtimes"]
                   if r["flavor"] == "CurrentThread" and r["found_by"] == {"via": "thread_context", "thread": threads["http_client_%d" % client]}]
        assert len(runtime) == 1 and runtime[0]["tasks_read"] == REQUESTS_PER_CLIENT, runtime
        for request in range(REQUESTS_PER_CLIENT):
            task = by_id[tasks["fetch_%d_%d" % (client, request)]]
            assert expect.chain(task["root"])[0] == expect.suspended(markers, "async_fn", "local_app::fetch", "fetch")
            response = leaf(task["root"])
            assert response["kind"] == "oneshot_recv", response
            [holder] = response["detail"]["senders_held_by"]
            assert connections[holder["task"]]["runtime"] == runtime[0]["address"]
    for task in connections.values():
        assert leaf(task["root"])["kind"] == "http_client_connection", task
    # The threads blocking on a LocalSet show it, running its tasks.
    thread_of = {thread["tid"]: thread for thread in report["threads"]}
    for shape, names in [("block_on_local_set", ["bl_sleeper", "bl_waiter"]), ("block_on_pinned", ["pinned_sleeper"])]:
        future = thread_of[threads[shape]]["future"]
        assert (future["kind"], future["detail"]["tasks"]) == ("local_set", sorted(tasks[name] for name in names))
        assert lists[future["detail"]["address"]]["flavor"] == "LocalSet"
    if live:
        assert thread_of[threads["block_on_local_set"]]["name"] == "block-on-local-"


def test_every_task_attached(debugger, stuck, markers):
    _, _, fixture, _ = stuck
    run = debugger.run_steps(capture(debugger, "async bt all --json") + capture(debugger, "async bt all"), pid=fixture.pid)
    [report, text] = run.sections()
    check_every_task(json.loads(report), fixture, markers)
    # Counts that agree are not mentioned; each LocalSet the threads block on shows its tasks.
    assert "tokio counts" not in text
    tasks, threads = facts_of(fixture)
    assert re.search(r'Thread %d "block-on-local-": block_on\n#0 LocalSet 0x[0-9a-f]+ running tasks %d, %d\n'
                     % (threads["block_on_local_set"], tasks["bl_sleeper"], tasks["bl_waiter"]), text), text


def test_every_task_from_a_core(debugger, stuck, markers):
    _, binary, fixture, core = stuck
    run = debugger.run_steps(capture(debugger, "async bt all --json"), program=binary, core=core)
    [report] = run.json_sections()
    check_every_task(report, fixture, markers, live=False)


def test_every_task_without_a_debugger(stuck, markers):
    _, binary, fixture, core = stuck
    for arguments in ([str(fixture.pid)], [binary, core]):
        run = tokio_async(*arguments, "--json")
        assert run.returncode == 0, (EXECUTABLE, run.stderr)
        check_every_task(json.loads(run.stdout), fixture, markers, live=len(arguments) == 1)


@pytest.mark.parametrize("profile", PROFILES)
def test_a_local_set_being_dropped(debugger, tmp_path, markers, profile):
    """Stopped inside the drop of a LocalSet's second task, outside any runtime: the
    LocalSet is found through the thread that drops it, closed, holding the task it has
    not shut down yet."""
    manifest = tmp_path / "manifest.json"
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run"] + capture(debugger, "async bt all --json"),
        program=build.fixture(PROGRAM, profile),
        args=["dropping"],
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    [report] = run.json_sections()
    facts = json.loads(manifest.read_text())["facts"]
    main = int(facts["thread.main"])
    assert report["errors"] == []
    [local_set] = report["runtimes"]
    assert (local_set["flavor"], local_set["found_by"], local_set["shutting_down"]) == (
        "LocalSet", {"via": "local_set_context", "thread": main}, True)
    assert [(task["id"], expect.chain(task["root"])) for task in report["tasks"]] == [
        (int(facts["task.drop_last"]), [expect.suspended(markers, "async_fn", "local_app::local_sleeper", "local_sleeper"), expect.SLEEP])
    ]
    [thread] = [thread for thread in report["threads"] if thread["tid"] == main]
    assert (thread["role"], thread["local_set"], thread["runtime"]) == ("other", local_set["address"], None)


# ---------------------------------------------------------------------------------------
# Each way of finding a list, broken on purpose


BREAK = r'''
import json
report = json.loads(run_command("async bt all --json"))
threads = {name[len("thread."):]: int(value) for name, value in FACTS.items() if name.startswith("thread.")}
tasks = {name[len("task."):]: int(value) for name, value in FACTS.items() if name.startswith("task.")}

def offset_of(type_name, path):
    """Where a field path lies in a type, as the debugger's DWARF says."""
    ty, total = gdb.lookup_type(type_name), 0
    for name in path:
        [field] = [field for field in ty.fields() if field.name == name]
        total += field.bitpos // 8
        ty = field.type.strip_typedefs()
    return total

# 1. A task of the runtime in a static: its vtable is gone, so is the task.
[static] = [r for r in report["runtimes"] if r["found_by"].get("name") == "local_app::STATIC_RUNTIME"]
[victim] = [int(t["address"], 16) for t in report["tasks"] if t["id"] == tasks["static_sleeper"]]
vtable = offset_of("tokio::runtime::task::core::Header", ["vtable"])
write_memory(victim + vtable, (0xdead0000).to_bytes(8, "little"))
# 2. The LocalSet a thread blocks on: its list's id, which its tasks name, is gone.
[blocked] = [t for t in report["threads"] if t["tid"] == threads["block_on_local_set"]]
shared = int(blocked["future"]["detail"]["address"], 16)
owned_id = offset_of("tokio::task::local::Shared", ["local_state", "owned", "id"])
write_memory(shared + owned_id, bytes(8))
print("@@damaged " + json.dumps({"static": static["address"], "victim": victim, "local_set": hex(shared)}))
print("@@report " + run_command("async bt all --json").replace("\n", " "))
print("@@text " + json.dumps(run_command("async bt all")))
'''


def test_breaking_each_way_of_finding_a_list_is_reported(tmp_path):
    binary = build.fixture(PROGRAM, "dev")
    with RunningFixture(binary, "all", str(tmp_path), extra_args=["hang"]) as fixture:
        gdb = Gdb()
        script = tmp_path / "break.py"
        body = "FACTS = %s\n%s" % (json.dumps(fixture.manifest["facts"]), BREAK)
        run = gdb.run_steps([script_step(gdb, script, body)], pid=fixture.pid)
        [damaged] = [json.loads(line) for line in tagged_lines(run, "damaged")]
        [report] = [json.loads(line) for line in tagged_lines(run, "report")]
        [text] = [json.loads(line) for line in tagged_lines(run, "text")]
    tasks, threads = facts_of(fixture)
    # The runtime: tokio's count beside what was read, and why.
    [static] = [r for r in report["runtimes"] if r["address"] == damaged["static"]]
    assert (static["task_count"], static["tasks_read"]) == (2, 1), static
    assert re.fullmatch(r"task list shard \d+: cannot follow the task at %#x: .*" % damaged["victim"], static["missing"])
    assert "runtime %s: tokio counts 2 tasks; 1 read (task list shard" % damaged["static"] in text
    # The LocalSet: not taken for a live one, so its tasks are not listed, and its thread
    # says what it blocks on and how many tasks may hang from it.
    listed = {task["id"] for task in report["tasks"]}
    assert tasks["bl_sleeper"] not in listed and tasks["bl_waiter"] not in listed
    assert all(r["address"] != damaged["local_set"] for r in report["runtimes"])
    [blocked] = [t for t in report["threads"] if t["tid"] == threads["block_on_local_set"]]
    assert blocked["future"] is None
    assert blocked["error"].startswith(
        "cannot read the block_on future, a LocalSet, so the tasks spawned on it are not listed: ")
    assert "up to 2 tasks may hang from it" in blocked["error"], blocked["error"]
    # Everything else is still found.
    assert tasks["pinned_sleeper"] in listed and tasks["struct_sleeper"] in listed
