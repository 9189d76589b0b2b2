"""An oracle no one here wrote: tokio's own task dump (`Handle::dump()`, built with
`--cfg tokio_taskdump`), for every fixture. For every task tokio traces, the fixture's own
async frames we report from memory must be the ones its trace lists, in the same order, at
the same lines (`select!`/`join!` awaits included).

These builds are also tokio's unstable build shape (support/shapes.py): `tokio_unstable`
with tokio's `tracing` instrumentation, where every task's future is an
`Instrumented<Root<F>>` and lock and acquire futures are wrapped in `InstrumentedAsyncOp`:
the reports must be as complete as in the plain build (waits-app's every kind of wait)."""

import json
import os
import re

import pytest
from support import build, expect
from support.checkpoint import locked_version, markers_of
from support.debuggers import capture
from support.markers import Markers
from support.paths import REPO

# tokio separates the tree glyphs from names with no-break spaces.
FRAME = re.compile(r"╼\s(?P<name>.+) at (?P<file>.+?):(?P<line>\d+):\d+$")
# Fixture -> (its arguments, its source file as the DWARF names it).
FIXTURES = {
    "tokio-app": (["dump"], "tokio-app/src/main.rs"),
    "waits-app": ([], "waits-app/src/main.rs"),
    "services-app": ([], "services-app/src/main.rs"),
}


def parse_dump(text, source):
    """{task id: [(function, line)]} for the fixture's own frames, outermost first."""
    tasks = {}
    current = None
    for line in text.splitlines():
        header = re.match(r"TASK (\d+):$", line)
        if header:
            current = tasks.setdefault(int(header.group(1)), [])
            continue
        frame = FRAME.search(line)
        if frame and current is not None and frame.group("file").endswith(source):
            current.append((frame.group("name"), int(frame.group("line"))))
    return tasks


def our_frames(node, source, frames=None):
    """The fixture's own coroutine frames of a tree, depth first (what awaits before what it awaits)."""
    frames = [] if frames is None else frames
    location = node.get("location")
    if node["kind"] in ("async_fn", "async_block", "async_closure") and location and location["path"].endswith(source):
        frames.append((node["kind"], node["function"], location["line"]))
    for child in node["children"]:
        our_frames(child, source, frames)
    return frames


def without_closures(name, pattern):
    return "::".join(part for part in name.split("::") if not re.fullmatch(pattern, part))


def comparable(kind, function):
    """Async fns compare by full name; blocks and closures by their enclosing path, since
    tokio prints them as `{{closure}}` where the DWARF numbers them."""
    if kind == "async_fn":
        return function
    return without_closures(function, r"\{(async_block|closure)#\d+\}")


def assert_spawn_locations(report, table, ids):
    """tokio_unstable builds record where each task was spawned: the report names that line
    for every task, and `async tasks` shows it in its own column."""
    by_id = {task["id"]: task for task in report["tasks"]}
    assert all(task["spawned_at"]["line"] > 0 for task in report["tasks"])
    rows = {int(row.split()[0]): row for row in table.splitlines()[3:]}
    assert "SPAWNED AT" in table.splitlines()[2]
    spawns = Markers().spawns
    assert sorted(spawns) == ["level1", "notify_block", "sleeper"]
    for name, line in spawns.items():
        assert by_id[ids[name]]["spawned_at"] == {"file": "tokio-app/src/main.rs", "line": line, "path": "tokio-app/src/main.rs"}
        assert " tokio-app/src/main.rs:%d " % line in rows[ids[name]]


@pytest.mark.parametrize("fixture", list(FIXTURES))
def test_our_async_frames_match_tokios_own_task_dump(debugger, tmp_path, fixture):
    args, source = FIXTURES[fixture]
    manifest = tmp_path / "manifest.json"
    dump = tmp_path / "dump.txt"
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run"]
        + capture(debugger, "async backtrace all full --json")
        + capture(debugger, "async tasks"),
        program=build.taskdump_fixture(fixture),
        args=args,
        env={"FIXTURE_MANIFEST": str(manifest), "FIXTURE_DUMP": str(dump)},
    )
    [report_json, table] = run.sections()
    report = json.loads(report_json)
    assert report["errors"] == []
    assert expect.opaque_leaves(report) == []
    if fixture == "waits-app":
        from test_waits import check_every_kind_of_wait

        facts = json.loads(manifest.read_text())["facts"]
        check_every_kind_of_wait(report, facts, markers_of("waits-app"), "dev", locked_version("tokio"))
    traces = parse_dump(dump.read_text(), source)
    ours = {task["id"]: our_frames(task["root"], source) for task in report["tasks"]}
    assert sorted(ours) == sorted(traces)
    if fixture == "tokio-app":
        ids = json.loads(manifest.read_text())["tasks"]
        assert sorted(ours) == sorted(ids[name] for name in ids if name != "finished")
        assert_spawn_locations(report, table, ids)
    untraced = []
    for task_id, trace in traces.items():
        mine = [(comparable(kind, function), line) for kind, function, line in ours[task_id]]
        theirs = [(without_closures(name, r"\{\{closure\}\}"), line) for name, line in trace]
        if not theirs and not mine:
            continue  # a task with no async fn of the fixture's (a bare `Sleep`, say)
        if not theirs:
            # tokio's trace ends at the first tokio leaf it meets; sockets, std's and the
            # futures crate's leaves and sets leave it empty.
            untraced.append(task_id)
            continue
        # tokio traces only the first pending branch of a tree; we show them all.
        assert mine[: len(theirs)] == theirs and set(mine) == set(theirs), task_id
        # Where tokio names a function in full, the name is exactly ours.
        for (kind, function, _), (name, _) in zip(ours[task_id], trace):
            if kind == "async_fn":
                assert function == name
    if fixture == "tokio-app":
        assert untraced == []
    # The tasks tokio cannot trace, for the record (see docs/testing.md).
    with open(os.path.join(REPO, "target", "oracle-untraced-%s-%s.txt" % (fixture, debugger.name)), "w") as out:
        out.write("".join("%d %s\n" % (task_id, ours[task_id]) for task_id in sorted(untraced)))
