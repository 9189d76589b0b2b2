"""A million tasks, read whole with the default settings (`make test-million`; not part of
`make test`, which it would lengthen by minutes): the budget grows with what tokio counts,
so a healthy program of any size is listed entirely, by the executable and in GDB."""

import json

from support import build
from support.debuggers import Gdb, capture
from support.process import RunningFixture
from test_standalone import tokio_async

TASKS = 1_000_000


def check_whole(report):
    assert report["errors"] == []
    [runtime] = report["runtimes"]
    assert runtime["task_count"] == runtime["tasks_read"] == len(report["tasks"]) >= TASKS, runtime
    assert "missing" not in runtime


def test_a_million_tasks_are_read_whole(tmp_path):
    with RunningFixture(build.fixture("many-tasks", "release"), str(TASKS), str(tmp_path), extra_args=["2"]) as fixture:
        output = tmp_path / "executable.json"
        run = tokio_async(str(fixture.pid), "--json", "--output", str(output), timeout=600)
        assert run.returncode == 0, run.stderr
        check_whole(json.loads(output.read_text()))
        gdb = Gdb()
        saved = tmp_path / "gdb.json"
        run = gdb.run_steps(capture(gdb, "async bt all --json --output %s" % saved), pid=fixture.pid, timeout=900)
        assert saved.exists(), run.stdout + run.stderr
        check_whole(json.loads(saved.read_text()))
