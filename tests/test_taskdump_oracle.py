"""An oracle no one here wrote: tokio's own task dump (`Handle::dump()`, built with
`--cfg tokio_taskdump`). For every task, the async frames we report from memory must be
the ones tokio's trace lists, in the same order, at the same lines."""

import json
import re

from support import build
from support.debuggers import capture

# tokio separates the tree glyphs from names with no-break spaces.
FRAME = re.compile(r"╼\s(?P<name>.+) at (?P<file>.+?):(?P<line>\d+):\d+$")
FIXTURE_FILE = "tokio-app/src/main.rs"


def parse_dump(text):
    """{task id: [(function, line)]} for the fixture's own frames, outermost first."""
    tasks = {}
    current = None
    for line in text.splitlines():
        header = re.match(r"TASK (\d+):$", line)
        if header:
            current = tasks.setdefault(int(header.group(1)), [])
            continue
        frame = FRAME.search(line)
        if frame and current is not None and frame.group("file").endswith(FIXTURE_FILE):
            current.append((frame.group("name"), int(frame.group("line"))))
    return tasks


def our_frames(node):
    frames = []
    while node is not None:
        if node["kind"] in ("async_fn", "async_block", "async_closure"):
            frames.append((node["kind"], node["function"], node["location"]["line"]))
        node = node["children"][0] if node["children"] else None
    return frames


def without_closures(name, pattern):
    return "::".join(part for part in name.split("::") if not re.fullmatch(pattern, part))


def comparable(kind, function):
    """Async fns compare by full name; blocks and closures by their enclosing path, since
    tokio prints them as `{{closure}}` where the DWARF numbers them."""
    if kind == "async_fn":
        return function
    return without_closures(function, r"\{(async_block|closure)#\d+\}")


def test_our_async_frames_match_tokios_own_task_dump(debugger, tmp_path):
    manifest = tmp_path / "manifest.json"
    dump = tmp_path / "dump.txt"
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run"] + capture(debugger, "async backtrace all --json"),
        program=build.taskdump_fixture(),
        args=["dump"],
        env={"FIXTURE_MANIFEST": str(manifest), "FIXTURE_DUMP": str(dump)},
    )
    [report] = run.json_sections()
    traces = parse_dump(dump.read_text())
    ours = {task["id"]: our_frames(task["root"]) for task in report["tasks"]}
    ids = json.loads(manifest.read_text())["tasks"]
    assert sorted(ours) == sorted(traces) == sorted(ids[name] for name in ids if name != "finished")
    for task_id, trace in traces.items():
        assert trace, "tokio's trace of task %d is empty" % task_id
        mine = [(comparable(kind, function), line) for kind, function, line in ours[task_id]]
        theirs = [(without_closures(name, r"\{\{closure\}\}"), line) for name, line in trace]
        assert mine == theirs, task_id
        # Where tokio names a function in full, the name is exactly ours.
        for (kind, function, _), (name, _) in zip(ours[task_id], trace):
            if kind == "async_fn":
                assert function == name
