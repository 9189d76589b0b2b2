"""Who waits for whom (deadlock-app), in GDB, LLDB 19 and LLDB 14, debug and release: the
holders of Mutexes, RwLocks and Semaphores found in other tasks' saved locals, as many as
the lock's own permits say (a guard let go with `drop` holds nothing; two guards of a Mutex
locked once are one holder, memory cannot tell which), the edges of the wait-for graph, the
deadlocks among tasks (two Mutexes in opposite order; a cycle through a JoinHandle, an mpsc
channel and a Mutex; a futurelock's cycle), the futurelock itself and the stranded tasks
(behind a deadlock, on a Mutex whose guard was forgotten); and no cycle where there is none
(many-tasks, waits-app)."""

import json

import pytest
from support import build
from support.checkpoint import markers_of
from support.debuggers import capture
from support.process import RunningFixture

SOURCE = "deadlock-app/src/main.rs"
COMMANDS = ["async waits --json", "async waits", "async backtrace all --json", "async backtrace all"]


@pytest.fixture(scope="module")
def markers():
    return markers_of("deadlock-app")


def at_checkpoint(debugger, tmp_path, program, profile, commands):
    manifest = tmp_path / "manifest.json"
    steps = [debugger.break_at("tokio_async_checkpoint"), "run"]
    steps += [step for command in commands for step in capture(debugger, command)]
    run = debugger.run_steps(steps, program=build.fixture(program, profile), env={"FIXTURE_MANIFEST": str(manifest)})
    assert manifest.exists(), run.stdout + run.stderr
    sections = run.sections()
    assert len(sections) == len(commands), run.stdout + run.stderr
    assert run.traceback_free()
    return dict(zip(commands, sections)), json.loads(manifest.read_text())


def leaf(node):
    while node["children"]:
        [node] = node["children"]
    return node


def where(markers, name):
    line = markers.await_line(name)
    return {"file": SOURCE, "line": line, "path": SOURCE}


@pytest.mark.parametrize("profile", ["dev", "release"])
def test_holders_deadlocks_and_futurelocks(debugger, tmp_path, profile, markers):
    outputs, manifest = at_checkpoint(debugger, tmp_path, "deadlock-app", profile, COMMANDS)
    facts = manifest["facts"]
    task = {name[len("task."):]: int(value) for name, value in facts.items() if name.startswith("task.")}
    address = {name[len("address."):]: value for name, value in facts.items() if name.startswith("address.")}
    waits = json.loads(outputs["async waits --json"])
    report = json.loads(outputs["async backtrace all --json"])
    leaves = {entry["id"]: leaf(entry["root"]) for entry in report["tasks"]}

    def holders(waiter):
        return leaves[task[waiter]]["detail"]["holders"]

    def hop(source, target, kind, resource):
        return (task[source], task[target], kind, resource)

    # Deadlocks: each cycle from its lowest id, edge by edge, with the resource in between.
    cycles = [
        [(edge["from"], edge["to"], edge["resource"]["kind"], edge["resource"]["address"]) for edge in deadlock["edges"]]
        for deadlock in waits["deadlocks"]
    ]
    channel = leaves[task["cycle_y"]]["detail"]["address"]
    helper_header = leaves[task["futurelock"]]["detail"]["task_address"]
    cycle_y_header = leaves[task["cycle_x"]]["detail"]["task_address"]
    assert cycles == [
        [hop("opposite_a", "opposite_b", "mutex", address["opposite_2"]), hop("opposite_b", "opposite_a", "mutex", address["opposite_1"])],
        [
            hop("cycle_x", "cycle_y", "task", cycle_y_header),
            hop("cycle_y", "cycle_z", "mpsc", channel),
            hop("cycle_z", "cycle_x", "mutex", address["cycle_lock"]),
        ],
        [hop("futurelock", "futurelock_helper", "task", helper_header), hop("futurelock_helper", "futurelock", "mutex", address["futurelock_lock"])],
    ]
    assert [deadlock["tasks"] for deadlock in waits["deadlocks"]] == [
        [task["opposite_a"], task["opposite_b"]],
        [task["cycle_x"], task["cycle_y"], task["cycle_z"]],
        [task["futurelock"], task["futurelock_helper"]],
    ]
    assert waits["deadlocks"][1]["edges"][1]["location"] == where(markers, "cycle_y")
    assert waits["deadlocks"][1]["edges"][1]["held_at"] == where(markers, "cycle_z")
    # The same deadlocks in `async backtrace all --json`.
    assert report["deadlocks"] == waits["deadlocks"]

    # Holders where there is no deadlock: a sleeping lock holder, permits, readers, a thread.
    for waiter in ("queued_1", "queued_2"):
        assert holders(waiter) == [{"task": task["sleeper"], "location": where(markers, "sleeper"), "local": "_held", "permits": 1}]
        assert leaves[task[waiter]]["detail"]["holders_certainty"] == "certain"
        assert leaves[task[waiter]]["summary"].endswith(
            "(0 permits, 2 waiters; held by task %d at %s:%d)" % (task["sleeper"], SOURCE, markers.await_line("sleeper"))
        )
    # A guard owned through a Vec and a Box: the path says which element.
    assert holders("vec_queued") == [{"task": task["vec_sleeper"], "location": where(markers, "vec_sleeper"), "local": "_held[0]", "permits": 1}]
    assert [(h["task"], h["location"], h["permits"]) for h in holders("permit_waiter")] == [
        (task["permit_1"], where(markers, "permit_1"), 1),
        (task["permit_2"], where(markers, "permit_2"), 1),
    ]
    # tokio keeps no Semaphore's total: its permits are not counted.
    assert leaves[task["permit_waiter"]]["detail"]["holders_certainty"] == "unchecked"
    assert leaves[task["permit_waiter"]]["summary"].endswith("held by tasks %d, %d)" % (task["permit_1"], task["permit_2"]))
    assert [(h["task"], h["location"]) for h in holders("writer")] == [
        (task["readers_1"], where(markers, "readers_1")),
        (task["readers_2"], where(markers, "readers_2")),
    ]
    # The writer took every permit the two readers do not hold, and waits for theirs.
    writer = leaves[task["writer"]]["detail"]
    assert writer["permits_total"] == writer["permits_needed"]
    assert (writer["permits_assigned"], writer["permits_available"], writer["holders_certainty"]) == (
        writer["permits_total"] - 2, 0, "certain")
    main_thread = manifest["pid"]
    # The main thread runs its block_on future at the checkpoint: that is where it holds it.
    running_at = {"file": SOURCE, "line": markers.running["main"], "path": SOURCE}
    assert holders("thread_waiter") == [{"thread": main_thread, "location": running_at, "local": "_main_guard", "permits": 1}]
    in_a_deadlock = {id for deadlock in waits["deadlocks"] for id in deadlock["tasks"]}
    assert in_a_deadlock.isdisjoint(
        task[name] for name in ("queued_1", "queued_2", "vec_queued", "permit_waiter", "writer", "thread_waiter")
    )

    # The futurelock: task `futurelock` keeps the lock future `queued`, to which tokio
    # assigned the Mutex, while it awaits the helper that needs the Mutex.
    [futurelock] = waits["futurelocks"]
    assert futurelock["task"] == task["futurelock"]
    assert futurelock["resource"] == {"kind": "mutex", "address": address["futurelock_lock"]}
    assert futurelock["local"].split(".")[0] == "queued"
    assert futurelock["location"] == where(markers, "futurelock")
    assert futurelock["blocked"] == [task["futurelock_helper"]]
    assert report["futurelocks"] == waits["futurelocks"]

    # Text: every deadlock as its chain, in `async waits` and at the end of `async backtrace all`.
    def step(name, resource):
        return "task %d (%s:%d) → %s" % (task[name], SOURCE, markers.await_line(MARKER_OF[name]), resource)

    expected = [
        "deadlock: %s → %s → task %d" % (
            step("opposite_a", "Mutex " + address["opposite_2"]), step("opposite_b", "Mutex " + address["opposite_1"]), task["opposite_a"]),
        "deadlock: %s → %s → %s → task %d" % (
            step("cycle_x", "JoinHandle of task %d" % task["cycle_y"]), step("cycle_y", "mpsc " + channel),
            step("cycle_z", "Mutex " + address["cycle_lock"]), task["cycle_x"]),
        "deadlock: %s → %s → task %d" % (
            step("futurelock", "JoinHandle of task %d" % task["futurelock_helper"]),
            step("futurelock_helper", "Mutex " + address["futurelock_lock"]), task["futurelock"]),
        "futurelock: task %d keeps `queued` at %s:%d, an idle future holding Mutex %s; waiting for it: task %d" % (
            task["futurelock"], SOURCE, markers.await_line("futurelock"), address["futurelock_lock"], task["futurelock_helper"]),
    ]
    expected += [
        "stranded: task %d waits on Mutex %s, which no task or thread holds (a guard forgotten, or kept outside every task)" % (
            task["forgotten_waiter"], address["forgotten_lock"]),
        "stranded: task %d waits for task %d to finish, which cannot go on" % (task["behind_forgotten"], task["forgotten_waiter"]),
        "stranded: task %d waits on Mutex %s for task %d, which cannot go on" % (
            task["behind_deadlock"], address["opposite_1"], task["opposite_a"]),
    ]
    assert outputs["async waits"].splitlines()[-7:] == expected
    assert outputs["async backtrace all"].rstrip("\n").splitlines()[-7:] == expected
    # The same in JSON: in no deadlock's cycle, and never to go on.
    assert waits["stranded"] == report["stranded"] == [
        {"task": task["forgotten_waiter"], "reason": "no_holder", "resource": {"kind": "mutex", "address": address["forgotten_lock"]}},
        {"task": task["behind_forgotten"], "reason": "waits_for_stuck",
         "resource": {"kind": "task", "address": leaves[task["behind_forgotten"]]["detail"]["task_address"]},
         "tasks": [task["forgotten_waiter"]]},
        {"task": task["behind_deadlock"], "reason": "waits_for_stuck", "resource": {"kind": "mutex", "address": address["opposite_1"]},
         "tasks": [task["opposite_a"]]},
    ]
    forgotten = leaves[task["forgotten_waiter"]]
    assert (forgotten["kind"], forgotten["detail"]["address"]) == ("mutex_lock", address["forgotten_lock"])
    assert "holders" not in forgotten["detail"]
    edge_lines = outputs["async waits"].splitlines()
    futurelock_mutex = edge_lines.index("Mutex %s:" % address["futurelock_lock"])
    assert edge_lines[futurelock_mutex + 1] == "  task %d at %s:%d waits for task %d (holding it at %s:%d, in an idle future: a futurelock)" % (
        task["futurelock_helper"], SOURCE, markers.await_line("futurelock_helper"), task["futurelock"], SOURCE, markers.await_line("futurelock"))
    mutex = edge_lines.index("Mutex %s:" % address["sleeper_lock"])
    assert edge_lines[mutex + 1:mutex + 3] == [
        "  task %d at %s:%d waits for task %d (holding it at %s:%d)" % (
            task[waiter], SOURCE, markers.await_line("queued"), task["sleeper"], SOURCE, markers.await_line("sleeper"))
        for waiter in ("queued_1", "queued_2")
    ]


# The marker of each task's await line.
MARKER_OF = {
    "opposite_a": "opposite", "opposite_b": "opposite", "cycle_x": "cycle_x", "cycle_y": "cycle_y", "cycle_z": "cycle_z",
    "futurelock": "futurelock", "futurelock_helper": "futurelock_helper",
}


@pytest.mark.parametrize("profile", ["dev", "release"])
def test_a_guard_let_go_holds_nothing_and_two_guards_of_one_lock_are_one_of_them(debugger, tmp_path, profile, markers):
    """`released` let its Mutex go with `drop(guard)` and sleeps: the guard's bytes are in
    its coroutine, the Mutex is free, nobody holds it. `stale_holder` did the same with
    `contended_lock`, which `real_holder` then locked: `contended_waiter` waits for it, held
    by one of the two, and `stale_holder` waits for the Mutex `contended_waiter` holds, which
    is no deadlock, as memory cannot tell that `stale_holder` holds it."""
    commands = ["async waits", "async backtrace all --json"]
    outputs, manifest = at_checkpoint(debugger, tmp_path, "deadlock-app", profile, commands)
    facts = manifest["facts"]
    task = {name[len("task."):]: int(value) for name, value in facts.items() if name.startswith("task.")}
    address = {name[len("address."):]: value for name, value in facts.items() if name.startswith("address.")}
    report = json.loads(outputs["async backtrace all --json"])
    roots = {entry["id"]: entry["root"] for entry in report["tasks"]}

    # The free Mutex: its guard is kept, marked released, and waited for by nobody.
    released = roots[task["released"]]
    assert released["location"] == where(markers, "released")
    [guard] = released["holds"]
    assert (guard["kind"], guard["local"], guard["permits"], guard.get("released")) == ("lock_guard", "guard", 1, True)
    assert leaf(released)["kind"] == "sleep"

    # The locked one: one of two tasks keeping a guard holds it.
    stale, real, waiter = task["stale_holder"], task["real_holder"], task["contended_waiter"]
    assert stale < real
    contended = leaf(roots[waiter])
    assert roots[waiter]["location"] == where(markers, "contended_waiter")
    assert contended["kind"] == "mutex_lock" and contended["detail"]["address"] == address["contended_lock"]
    detail = contended["detail"]
    assert detail["holders"] == [
        {"task": stale, "location": where(markers, "stale_holder"), "local": "guard", "permits": 1},
        {"task": real, "location": where(markers, "real_holder"), "local": "_held", "permits": 1},
    ]
    assert (detail["holders_certainty"], detail["permits_total"], detail["permits_available"], detail["permits_assigned"]) == (
        "ambiguous", 1, 0, 0)
    assert contended["summary"] == "waiting for Mutex %s (0 permits, 1 waiter; held by one of tasks %d, %d)" % (
        address["contended_lock"], stale, real)
    # Each keeps its guard, neither marked: which holds it memory cannot tell.
    for holder, local in ((stale, "guard"), (real, "_held")):
        [kept] = roots[holder]["holds"]
        assert (kept["local"], kept["resource"]["kind"], kept.get("released")) == (local, "mutex", None)
    # The stale holder waits for the Mutex the waiter holds, for certain.
    other = leaf(roots[stale])
    assert other["detail"]["address"] == address["other_lock"]
    assert other["detail"]["holders"] == [{"task": waiter, "location": where(markers, "contended_waiter"), "local": "_other", "permits": 1}]
    assert other["detail"]["holders_certainty"] == "certain"

    # No deadlock through the uncertain holders, none among these tasks at all.
    in_a_deadlock = {id for deadlock in report["deadlocks"] for id in deadlock["tasks"]}
    assert in_a_deadlock.isdisjoint({task["released"], stale, real, waiter}), report["deadlocks"]
    assert len(report["deadlocks"]) == 3
    assert all(futurelock["task"] not in (stale, real) for futurelock in report["futurelocks"])

    # `async waits`: the uncertain edges say so; the certain one as ever.
    lines = outputs["async waits"].splitlines()
    contended_at = lines.index("Mutex %s:" % address["contended_lock"])
    assert lines[contended_at + 1:contended_at + 3] == [
        "  task %d at %s:%d may wait for task %d (a guard at %s:%d, maybe moved out: more are kept than the lock has taken)" % (
            waiter, SOURCE, markers.await_line("contended_waiter"), holder, SOURCE, markers.await_line(name))
        for holder, name in ((stale, "stale_holder"), (real, "real_holder"))
    ]
    other_at = lines.index("Mutex %s:" % address["other_lock"])
    assert lines[other_at + 1] == "  task %d at %s:%d waits for task %d (holding it at %s:%d)" % (
        stale, SOURCE, markers.await_line("stale_holder"), waiter, SOURCE, markers.await_line("contended_waiter"))
    assert "Mutex %s:" % address["released_lock"] not in lines
    assert not any(line.startswith("deadlock:") and ("task %d " % stale) in line for line in lines)


def test_no_false_cycles_among_many_independent_waits(debugger, tmp_path):
    """600 tasks waiting on a Mutex whose holder sleeps, oneshots and mpsc channels whose
    senders the main thread keeps, and JoinHandles of sleeping tasks: edges, no cycle."""
    with RunningFixture(build.fixture("many-tasks", "dev"), "600", str(tmp_path)) as fixture:
        run = debugger.run_steps(capture(debugger, "async waits --json"), pid=fixture.pid)
    [waits] = run.json_sections()
    assert waits["deadlocks"] == [] and waits["futurelocks"] == []
    holder = int(fixture.manifest["facts"]["task.holder"])
    lock_waiters = [int(i) for i in fixture.manifest["facts"]["shape.2"].split(",")]
    assert sorted(edge["from"] for edge in waits["waits"] if edge["to"] == holder) == lock_waiters


def test_the_one_deadlock_of_waits_app(debugger, tmp_path):
    """One real deadlock (two Mutexes locked in opposite order) among forty other waits; and
    RwLock guards, read and write, kept by the main thread's block_on future."""
    outputs, manifest = at_checkpoint(debugger, tmp_path, "waits-app", "dev", ["async waits --json"])
    waits = json.loads(outputs["async waits --json"])
    facts = manifest["facts"]
    assert [deadlock["tasks"] for deadlock in waits["deadlocks"]] == [sorted([int(facts["task.deadlock_a"]), int(facts["task.deadlock_b"])])]
    assert waits["futurelocks"] == []
    leaves = {task["id"]: leaf_of_tree(task["root"]) for task in waits["tasks"]}
    for waiter, guard in (("leaf_rwlock_write", "_read_guard"), ("leaf_rwlock_read", "_write_guard")):
        [holder] = leaves[int(facts["task." + waiter])]["detail"]["holders"]
        assert (holder["thread"], holder["local"]) == (manifest["pid"], guard)


def leaf_of_tree(node):
    """The deepest node along first children."""
    while node["children"]:
        node = node["children"][0]
    return node
