"""Other tokio versions: the fixtures rebuilt against each (`support/versions.py`). `make
test` runs the oldest supported tokio and one of each era of layouts after it, with tokio's
`full` features, in GDB and LLDB 19; `make test-versions` every minor (TOKIO_VERSIONS=all)
in every build shape (TOKIO_SHAPES=all, support/shapes.py), in LLDB 14 too. The newest is
the main fixtures'."""

import pytest
from support import debuggers, expect, versions
from support.checkpoint import markers_of, run_to_checkpoint
from support.debuggers import capture
from support.process import RunningFixture
from test_waits import check_every_kind_of_wait


@pytest.fixture(scope="module")
def markers():
    return markers_of("waits-app")


# The versions differ in what the core decodes, the same in every debugger: `make test`
# leaves LLDB 14, the rest of whose suite runs on the newest tokio, to `make test-versions`.
IN_EVERY_DEBUGGER = versions.selected() == versions.ALL
DEBUGGERS = debuggers.ALL if IN_EVERY_DEBUGGER else [d for d in debuggers.ALL if d is not debuggers.LLDB_14]


@pytest.fixture(params=DEBUGGERS, ids=[d.name for d in DEBUGGERS])
def debugger(request):
    return request.param


MULTI_THREAD_SHAPES = [shape for shape in versions.selected_shapes() if shape.multi_thread]
FLAVORS = ["multi_thread", "current_thread", "local_set", "two_runtimes", "local_set_current_thread"]
# A build without the multi-thread scheduler runs only these.
CURRENT_THREAD_FLAVORS = ["current_thread", "local_set_current_thread"]
SHAPED_FLAVORS = [
    pytest.param(shape, flavor, id="%s-%s" % (shape.name, flavor))
    for shape in versions.selected_shapes()
    for flavor in (FLAVORS if shape.multi_thread else CURRENT_THREAD_FLAVORS)
]


@pytest.mark.parametrize("tokio_version", versions.selected())
@pytest.mark.parametrize("shape", MULTI_THREAD_SHAPES, ids=lambda shape: shape.name)
def test_every_kind_of_wait(debugger, tmp_path, tokio_version, shape, markers):
    binary = versions.fixture("waits-app", tokio_version, shape)
    run, facts = run_to_checkpoint(debugger, tmp_path, "waits-app", "dev", "async backtrace all full --json", binary=binary)
    [report] = run.json_sections()
    check_every_kind_of_wait(report, facts, markers, "dev", tokio_version)


@pytest.mark.parametrize("tokio_version", versions.selected())
@pytest.mark.parametrize("shape,flavor", SHAPED_FLAVORS)
def test_runtime_flavors(debugger, tmp_path, tokio_version, shape, flavor):
    """Attached to a hanging tokio-app: every task, and the block_on thread's future."""
    binary = versions.fixture("tokio-app", tokio_version, shape)
    check_runtime_flavor(debugger, tmp_path, binary, flavor, tokio_version)


def check_runtime_flavor(debugger, tmp_path, binary, flavor, tokio_version):
    with RunningFixture(binary, "hang", str(tmp_path), extra_args=[flavor]) as fixture:
        run = debugger.run_steps(capture(debugger, "async backtrace all --json"), pid=fixture.pid)
        manifest = fixture.manifest
    [report] = run.json_sections()
    ids = manifest["tasks"]
    by_id = {task["id"]: task for task in report["tasks"]}
    # Every live task, in whichever list holds it (a LocalSet's own for local_*).
    assert sorted(by_id) == sorted(ids[name] for name in ids if name != "finished"), flavor
    chains = expect.task_chains("hang")
    for name, chain in chains.items():
        if name in ids:
            assert expect.chain(by_id[ids[name]]["root"]) == chain, (flavor, name)
    if flavor.startswith("local_set"):
        assert expect.chain(by_id[ids["local_level1"]]["root"]) == chains["level1"]
    # The block_on thread's own future, down to what it waits for.
    if flavor == "two_runtimes":
        assert sorted(r["flavor"] for r in report["runtimes"]) == ["CurrentThread", "MultiThread"]
        [second] = [thread for thread in report["threads"] if thread["role"] == "block_on" and thread["tid"] != manifest["pid"]]
        assert expect.chain(second["future"])[0][1] == "tokio_app::second_runtime_main"
    [main] = [thread for thread in report["threads"] if thread["tid"] == manifest["pid"]]
    future = main["block_on_future"] if flavor.endswith("current_thread") and main.get("current_task") else main["future"]
    tail = expect.main_future_chain()[1:]
    assert expect.chain(future)[-len(tail):] == tail, main
    # Nothing is queued in a hanging program; reading the queues must work all the same.
    if flavor.endswith("current_thread"):
        assert main["queue"] == {"lifo_slot": None, "local": []}
    assert all(r["inject"] == [] for r in report["runtimes"] if r["flavor"] != "LocalSet")
    assert report["errors"] == []
    assert {runtime["tokio_version"] for runtime in report["runtimes"]} == {tokio_version}
