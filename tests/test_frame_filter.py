"""GDB's own `bt` once the script is loaded (a frame filter): async fns by name, tokio's
poll glue elided but not lost, the task a frame polls, the futures a block_on has
suspended as frames of their own with their locals; `bt -no-filters` and the disabled
filter give the raw stack; GDB/MI `-stack-list-frames` with `-enable-frame-filters`."""

import json
import os
import re

import pytest
from support import build, mi
from support.debuggers import Gdb, capture
from support.markers import Markers
from support.paths import FIXTURE_SOURCE

GDB = Gdb()
MARKERS = Markers()
SOURCE = os.path.realpath(FIXTURE_SOURCE)
FRAME = re.compile(r"^(?P<indent> +)?(?:#(?P<level>\d+)\s+)?(?:0x[0-9a-f]+ in )?(?P<rest>\S.*)$")
LOCATION = re.compile(r" at (\S+):(\d+)$")


def frames_of(section):
    """Each frame line of a `bt` section: level (None for a suspended future), function,
    file, line, whether it is elided (indented), and the locals printed under it."""
    frames = []
    for line in section.splitlines():
        match = FRAME.match(line)
        if not match or (match.group("indent") and match.group("level") is None):
            if frames and line.startswith("        "):
                frames[-1]["locals"].append(line.strip())
            continue
        rest = match.group("rest")
        location = LOCATION.search(rest)
        head = rest[: location.start()] if location else rest
        function = head[: -len(" ()")] if head.endswith(" ()") else head.split(" (")[0]
        frames.append({
            "level": int(match.group("level")) if match.group("level") else None,
            "function": function,
            "file": location.group(1) if location else None,
            "line": int(location.group(2)) if location else None,
            "elided": bool(match.group("indent")),
            "locals": [],
        })
    return frames


def shown(frames):
    return [frame for frame in frames if not frame["elided"]]


def suspended(frames):
    """The suspended futures: (function, absolute file, line)."""
    return [
        (frame["function"], frame["file"] and os.path.realpath(frame["file"]), frame["line"])
        for frame in frames
        if frame["level"] is None
    ]


def run_at_checkpoint(tmp_path, steps, profile="dev", flavor="multi_thread"):
    manifest = tmp_path / "manifest.json"
    run = GDB.run_steps(
        [GDB.break_at("tokio_async_checkpoint"), "run"] + steps,
        program=build.fixture("tokio-app", profile),
        args=["breakpoint", flavor],
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert manifest.exists(), run.stdout + run.stderr
    assert run.traceback_free(), run.stdout + run.stderr
    return run.sections(), json.loads(manifest.read_text())


FULL_BT_ABOVE_BLOCK_ON = (
    "python import gdb.frames; gdb.execute('bt -full -hide %d' % next(level for level, frame in enumerate("
    "gdb.frames.execute_frame_filters(gdb.newest_frame(), 0, -1)) if 'CachedParkThread::block_on' in str(frame.function())))"
)


def await_frame(name, function):
    line, index = MARKERS.awaits[name]
    return ("%s (await #%d)" % (function, index), SOURCE, line)


NOTIFY_LEAF = re.compile(r"waiting for Notify 0x[0-9a-f]+ \(1 waiter\)$")
# What main's block_on future has suspended (innermost first), as each flavor builds it.
MAIN_CHAIN = [
    await_frame("wait_for_shutdown", "async fn tokio_app::wait_for_shutdown"),
    await_frame("app_main", "async fn tokio_app::app_main"),
]


def assert_chain(chain, outer):
    """`chain` is the Notify leaf, then MAIN_CHAIN, then `outer`."""
    assert NOTIFY_LEAF.match(chain[0][0]) and chain[0][1:] == (None, None), chain
    assert chain[1:] == MAIN_CHAIN + outer


@pytest.mark.parametrize("profile", ["dev", "release"])
def test_bt_names_async_fns_folds_the_glue_and_shows_what_block_on_suspended(tmp_path, profile):
    steps = []
    for command in ("bt -hide", "bt", "bt -no-filters"):
        steps += capture(GDB, command)
    steps += ["thread 1"]
    # `bt full` only up to the block_on frame, whose locals GDB 13 itself cannot print in
    # release builds (an internal error on `maybe_guard`, with or without filters: GDB
    # aborts). How many frames come before it depends on how tokio was built, so GDB
    # counts them: `bt N` takes the first N frames the filters give.
    steps += capture(GDB, "bt -hide") + capture(GDB, FULL_BT_ABOVE_BLOCK_ON)
    steps += ["disable frame-filter global tokio-async"] + capture(GDB, "bt -hide")
    sections, manifest = run_at_checkpoint(tmp_path, steps, profile)
    worker, worker_elided, worker_raw, main, main_full, main_raw = (frames_of(section) for section in sections)

    # The worker running the runner task: the async fn by name, where it runs; the frame
    # polling it names the task, and tokio's glue is gone from the rest.
    functions = [frame["function"] for frame in shown(worker)]
    runner = functions.index("async fn tokio_app::runner")
    assert functions[runner + 1:] == [
        "tokio::runtime::task::harness::Harness::poll [task %d]" % manifest["tasks"]["runner"],
        "start_thread",
        "clone3",
    ]
    assert (worker[runner]["file"], worker[runner]["line"]) == ("tokio-app/src/main.rs", MARKERS.running["runner"])
    assert not any("{async_fn" in name or "{closure_env" in name for name in functions), functions
    # Elided, not lost: plain `bt` prints every level once, the glue indented.
    levels = sorted(frame["level"] for frame in worker_elided)
    assert levels == list(range(len(levels))) and len(levels) > 40
    elided = [frame["function"] for frame in worker_elided if frame["elided"]]
    assert any(name.startswith("tokio::runtime::task::raw::RawTask::poll") for name in elided), elided
    raw = [frame["function"] for frame in worker_raw]
    assert "tokio_app::runner::{async_fn#0}" in raw and not any("[task" in name for name in raw)

    # The main thread parked in block_on: what its future suspended, innermost first,
    # then the block_on frame.
    chain = suspended(main)
    assert_chain(chain, [await_frame("main_block", "async block tokio_app::main::{async_block#3}")])
    after = shown(main)[[frame["level"] for frame in shown(main)].index(None) + len(chain)]
    assert after["function"] == "tokio::runtime::park::CachedParkThread::block_on" and after["level"] is not None
    # bt full: the locals app_main keeps across its await.
    [app_main] = [frame for frame in main_full if frame["function"] == "async fn tokio_app::app_main (await #5)"]
    assert any(local.startswith("mode = ") and '"breakpoint"' in local for local in app_main["locals"]), app_main
    # Switched off, `bt` is GDB's own again.
    assert suspended(main_raw) == [] and any(frame["function"].startswith("tokio::runtime::park::CachedParkThread::block_on<")
                                             for frame in main_raw)


def test_a_current_thread_runtime_shows_the_task_it_runs_above_what_block_on_suspended(tmp_path):
    sections, manifest = run_at_checkpoint(tmp_path, capture(GDB, "bt -hide"), flavor="current_thread")
    frames = shown(frames_of(sections[0]))
    functions = [frame["function"] for frame in frames]
    runner = functions.index("async fn tokio_app::runner")
    assert functions[runner + 1] == "tokio::runtime::task::harness::Harness::poll [task %d]" % manifest["tasks"]["runner"]
    chain = suspended(frames)
    assert_chain(chain, [await_frame("main_block", "async block tokio_app::main::{async_block#3}")])
    assert functions[runner + 2 + len(chain)] == "tokio::runtime::scheduler::current_thread::CoreGuard::block_on"


@pytest.mark.parametrize("flavor", ["local_set", "local_set_polled"])
def test_a_local_set_shows_its_future_inside_run_until(tmp_path, flavor):
    sections, manifest = run_at_checkpoint(tmp_path, ["thread 1"] + capture(GDB, "bt -hide"), flavor=flavor)
    frames = shown(frames_of(sections[0]))
    functions = [frame["function"] for frame in frames]
    chain = suspended(frames)
    local_block = await_frame("local_main", "async block tokio_app::run_with_local_set::{async_block#0}")
    start = functions.index(chain[0][0])
    if flavor == "local_set":
        # Parked: run_until itself is suspended too, inside block_on.
        assert_chain(chain[:-1], [local_block])
        assert chain[-1][0] == "async fn tokio::task::local::LocalSet::run_until (await #0)"
        assert functions[start + len(chain)] == "tokio::runtime::park::CachedParkThread::block_on"
    else:
        # run_until polls the runner task now: it is on the stack, its future suspended.
        runner = functions.index("async fn tokio_app::runner")
        assert functions[runner + 1] == "tokio::runtime::task::harness::Harness::poll [task %d]" % manifest["tasks"]["runner"]
        assert_chain(chain, [local_block])
        assert functions[start + len(chain)] == "async fn tokio::task::local::LocalSet::run_until"
        assert frames[start + len(chain)]["level"] is not None


def test_mi_stack_list_frames_gives_the_same_frames(tmp_path):
    steps = ['interpreter-exec mi "-enable-frame-filters"', "thread 1", 'interpreter-exec mi "-stack-list-frames"']
    manifest = tmp_path / "manifest.json"
    run = GDB.run_steps(
        [GDB.break_at("tokio_async_checkpoint"), "run"] + steps,
        program=build.fixture("tokio-app", "dev"),
        args=["breakpoint", "multi_thread"],
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    [listing] = [record for record in mi.result_records(run.stdout) if "stack" in record]
    frames = [frame for _, frame in listing["stack"]]
    synthetic = [frame for frame in frames if "level" not in frame]
    assert [(frame["func"], os.path.realpath(frame["file"]), int(frame["line"])) for frame in synthetic[1:]] == MAIN_CHAIN + [
        await_frame("main_block", "async block tokio_app::main::{async_block#3}")
    ]
    assert NOTIFY_LEAF.match(synthetic[0]["func"]) and "file" not in synthetic[0]
    # Machine frames keep their levels; glue is listed as the children of the frame it folds into.
    real = [frame for frame in frames if "level" in frame]
    children = [child for frame in real for _, child in frame.get("children", [])]
    levels = sorted(int(frame["level"]) for frame in real + children)
    assert levels == list(range(len(levels)))
    assert "tokio::runtime::park::CachedParkThread::block_on" in [frame["func"] for frame in real]


def test_a_core_file_reads_alike(tmp_path):
    core = tmp_path / "tokio-app.core"
    _, manifest = run_at_checkpoint(tmp_path, ["gcore %s" % core])
    run = GDB.run_steps(capture(GDB, "thread apply all bt -hide"), program=build.fixture("tokio-app", "dev"), core=str(core))
    assert run.traceback_free(), run.stdout + run.stderr
    # A core numbers its threads its own way: each thread's frames, by LWP.
    parts = re.split(r"^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\).*$", run.sections()[0], flags=re.M)[1:]
    threads = {int(lwp): frames_of(text) for lwp, text in zip(parts[0::2], parts[1::2])}
    main = threads[manifest["pid"]]
    assert_chain(suspended(main), [await_frame("main_block", "async block tokio_app::main::{async_block#3}")])
    polling = [frame["function"] for frames in threads.values() for frame in frames if "[task" in frame["function"]]
    assert polling == ["tokio::runtime::task::harness::Harness::poll [task %d]" % manifest["tasks"]["runner"]]


def test_a_program_without_tokio_keeps_gdbs_own_bt(tmp_path):
    program = build.fixture("plain-app", "dev")
    steps = [GDB.break_at("tokio_async_checkpoint"), "run"] + capture(GDB, "bt") + capture(GDB, "bt -no-filters")
    run = GDB.run_steps(steps, program=program)
    filtered, raw = run.sections()
    assert filtered == raw and "plain_app::main" in filtered
    assert run.traceback_free() and run.error_lines() == []
