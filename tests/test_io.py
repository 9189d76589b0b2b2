"""tokio's I/O utilities and the other leaves real programs park in (the io-app fixture),
in every debugger, debug and release: `io::copy`, `copy_buf` and `copy_bidirectional`
(each direction), split halves, `BufReader`/`BufWriter`, tokio-util's codecs,
`StreamReader`/`ReaderStream`, `CancellationToken`, `TaskTracker`, signals, a child
process, `tokio::fs` and `spawn_blocking` (with the blocking-pool thread running them),
`Barrier`, `OnceCell`, `SetOnce`, the futures crate's channels, hand-written futures (what
they keep, marked as held, in their fields and in std's collections: a listener for
shutdown signals shaped as actix-server's, a dispatcher with a HashMap, a BTreeMap, a Vec
and an Arc<Mutex<VecDeque>>) and a `poll_fn` of the program's own (not a `select!`). The
main thread is a `#[tokio::main]` parked in `select!(serve(), ctrl_c())`."""

import json
import re

import pytest
from support import build, expect
from support.checkpoint import markers_of, run_to_checkpoint
from support.debuggers import LLDB_14, Gdb, Lldb, capture

SOURCE = "io-app/src/main.rs"
# tokio's copy buffer (`io::util::DEFAULT_BUF_SIZE`): what a stalled copy holds at most.
COPY_BUFFER = 8 * 1024
# What io-app's stalled writers have to write (`BIG`).
BIG = 4 << 20


@pytest.fixture(scope="module")
def markers():
    return markers_of("io-app")


def last(node):
    while node["children"]:
        assert len(node["children"]) == 1, node
        node = node["children"][0]
    return node


def kinds(node):
    """The kinds down a single chain."""
    found = [node["kind"]]
    while node["children"]:
        assert len(node["children"]) == 1, node
        node = node["children"][0]
        found.append(node["kind"])
    return found


def at(markers, node, marker):
    """The node is the fixture's coroutine suspended at `marker`."""
    line, index = markers.awaits[marker]
    assert (node["state"], node["await_point"], node["location"]["file"], node["location"]["line"]) == (
        "suspended", index, SOURCE, line), (marker, node)


def detail_of(node, kind):
    assert node["kind"] == kind, node
    return node["detail"]


def read_wait(node):
    """A socket read's `io_readiness` facts. A socket that connected may show write interest
    besides: tokio's connect can leave its writability waker behind (when the socket turns
    ready between storing the waker and checking again), and a read of the stopped program
    shows it as it is. The tests assert the read."""
    detail = detail_of(node, "io_readiness")
    if detail["interest"] == ["read", "write"]:
        detail = dict(detail, interest=["read"])
    return detail


def socket_read(fd, operation="read", buffered=None):
    detail = {"fd": fd, "fd_kind": "socket", "interest": ["read"], "operation": operation}
    if buffered is not None:
        detail["buffered"] = buffered
    return detail


@pytest.mark.parametrize("profile", ["dev", "release"])
def test_every_io_utility_and_leaf(debugger, tmp_path, markers, profile):
    run, facts = run_to_checkpoint(debugger, tmp_path, "io-app", profile, "async backtrace all full --json")
    [report] = run.json_sections()
    check_io_report(report, facts, markers, profile)


def test_the_same_report_from_a_core_in_every_debugger(tmp_path, markers):
    """The release build stopped at its checkpoint, read live by GDB and then from GDB's
    core of that very stop by each debugger: every leaf and the main future are the same.
    A core has no /proc, so it cannot say what kind of file an fd is."""
    core = tmp_path / "io-app.core"
    gdb = Gdb()
    binary = build.fixture("io-app", "release")
    run = gdb.run_steps(
        [gdb.break_at("tokio_async_checkpoint"), "run"] + capture(gdb, "async backtrace all full --json")
        + ["gcore %s" % core],
        program=binary, env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")})
    [live] = run.json_sections()
    expected = as_from_a_core(live)
    check_io_report(live, json.loads((tmp_path / "manifest.json").read_text())["facts"], markers, "release")
    assert core.exists(), run.stdout + run.stderr
    for debugger in (gdb, Lldb(), LLDB_14):
        from_core = debugger.run_steps(capture(debugger, "async backtrace all full --json"), program=binary, core=str(core))
        [report] = from_core.json_sections()
        assert report["errors"] == [], (debugger.name, report["errors"])
        assert report["stack_source"] == ("debugger" if debugger is LLDB_14 else "core"), debugger.name
        assert as_from_a_core(report) == expected, debugger.name


def as_from_a_core(report):
    """The report without what only a live process can say: fd kinds (from /proc), thread
    names, how memory and stacks were read, and the time left on timers (a gcore holds no clock)."""
    text = json.dumps(report, sort_keys=True)
    text = re.sub(r'"fd_kind": "[a-z_]+"', '"fd_kind": null', text)
    text = re.sub(r"(fd [0-9]+) \([a-z_ ]+\)", r"\1", text)
    text = re.sub(r'"remaining_secs": -?[0-9.]+', '"remaining_secs": null', text)
    text = re.sub(r'"since_last_tick_secs": -?[0-9.]+', '"since_last_tick_secs": null', text)
    text = re.sub(r'"Sleep until [^"]*"', '"Sleep until"', text)
    report = json.loads(text)
    report.pop("memory_source")
    report.pop("stack_source")
    report.pop("taken_at", None)
    for thread in report["threads"]:
        thread["name"] = None
    return report


def check_io_report(report, facts, markers, profile):
    assert report["errors"] == []
    assert expect.opaque_leaves(report) == []
    assert '"field_search"' not in repr(report)
    tasks = {task["id"]: task["root"] for task in report["tasks"]}

    def task(name):
        return tasks[int(facts["task." + name])]

    def fd(name):
        return int(facts["fd." + name])

    def own(name):
        root = task(name)
        assert root["function"] == "io_app::" + name, root
        at(markers, root, name)
        return last(root)

    # io::copy, copy_buf: bytes moved, held, and the side waited for.
    assert detail_of(own("copy_idle"), "io_copy") == {
        "buffered": 0, "copied": 5, "reader_fd": fd("copy_idle.reader"), "waiting": "read",
        "writer_fd": fd("copy_idle.writer")}
    stalled = detail_of(own("copy_stalled"), "io_copy")
    assert (stalled["reader_fd"], stalled["waiting"], stalled["writer_fd"]) == (None, "write", fd("copy_stalled.writer"))
    assert stalled["copied"] > 0 and 0 < stalled["buffered"] <= COPY_BUFFER, stalled
    root = task("copy_buf")
    at(markers, root, "copy_buf_idle")
    assert detail_of(last(root), "io_copy") == {
        "buffered": 0, "copied": 3, "reader_fd": fd("copy_buf.reader"), "waiting": "read",
        "writer_fd": fd("copy_buf.writer")}

    # A copy into a file (its fd; files have no readiness) from a duplex stream (no fd).
    assert detail_of(own("copy_to_file"), "io_copy") == {
        "buffered": 0, "copied": 0, "reader_fd": None, "waiting": "read", "writer_fd": fd("copy_to_file.writer")}
    # An in-memory duplex stream: no fd, its bytes in the pipe.
    leaf = own("duplex_read")
    assert detail_of(leaf, "io_readiness") == {
        "buffered": 0, "fd": None, "fd_kind": None, "interest": ["read"], "operation": "read"}
    assert leaf["summary"] == "read on an in-memory duplex stream, 0 bytes buffered, waiting for read"

    # copy_bidirectional: each direction.
    for name in ("proxy_idle", "proxy_stalled"):
        root = task(name)
        at(markers, root, "proxy")
        leaf = last(root)
        assert leaf["function"] == "tokio::io::util::copy_bidirectional::copy_bidirectional_impl"
        detail = detail_of(leaf, "io_copy_bidirectional")
        assert (detail["a_fd"], detail["b_fd"]) == (fd(name + ".a"), fd(name + ".b"))
        if name == "proxy_idle":
            assert detail["a_to_b"] == {"buffered": 0, "copied": 10, "waiting": "read"}
            assert detail["b_to_a"] == {"buffered": 0, "copied": 20, "waiting": "read"}
        else:
            # a's peer floods; b's peer never reads.
            assert detail["a_to_b"]["waiting"] == "write" and detail["a_to_b"]["copied"] > 0, detail
            assert 0 < detail["a_to_b"]["buffered"] <= COPY_BUFFER, detail
            assert detail["b_to_a"] == {"buffered": 0, "copied": 0, "waiting": "read"}

    # Split halves (borrowed, owned, io::split), a half-read line, a stalled BufWriter.
    for name in ("split_read", "owned_split_read", "io_split_read"):
        assert read_wait(own(name)) == socket_read(fd(name))
    assert read_wait(own("read_line")) == socket_read(fd("read_line"), "read_line", buffered=7)
    # write_all of more than its buffer holds goes past a BufWriter's buffer.
    assert detail_of(own("buffered_write"), "io_readiness") == {
        "buffered": 0, "fd": fd("buffered_write"), "fd_kind": "socket", "interest": ["write"], "operation": "write"}

    # tokio-util's codecs: a line half read, a line too big to send, an idle Framed.
    assert read_wait(own("framed_read")) == socket_read(fd("framed_read"), "read frame", buffered=4)
    written = detail_of(own("framed_write"), "io_readiness")
    assert 0 < written.pop("buffered") <= BIG + 1, written
    assert written == {"fd": fd("framed_write"), "fd_kind": "socket", "interest": ["write"], "operation": "write frames"}
    assert read_wait(own("framed")) == socket_read(fd("framed"), "read frame", buffered=0)

    # StreamReader waits on the stream it adapts; ReaderStream on its reader.
    chunks = detail_of(own("stream_reader"), "mpsc_recv")
    assert (chunks["capacity"], chunks["queued"], chunks["senders"], chunks["closed"]) == (2, 0, 1, False)
    assert read_wait(own("reader_stream")) == socket_read(fd("reader_stream"))

    # tokio-util's token and tracker.
    token = detail_of(own("cancelled"), "cancellation_token")
    assert token["cancelled"] is False and token["address"].startswith("0x")
    tracker = detail_of(own("tracker_wait"), "task_tracker_wait")
    assert (tracker["closed"], tracker["tasks"]) == (True, 2)

    # A signal, a child process.
    assert detail_of(own("signal_recv"), "signal_recv") == {"name": "SIGUSR1", "signal": 10}
    child = detail_of(own("child_wait"), "child_wait")
    assert child["pid"] == int(facts["pid.child"]) and isinstance(child["pidfd"], int), child

    # tokio::fs and spawn_blocking: the JoinHandle names the blocking-pool thread running it.
    blocking = {thread["blocking_task"]: thread for thread in report["threads"] if thread.get("blocking_task")}
    fs_read = detail_of(own("fs_read"), "join_handle")
    thread = blocking[fs_read["task_id"]]
    assert thread["role"] == "blocking" and "tokio::fs::read::" in thread["blocking_function"]
    assert (fs_read["blocking_thread"], fs_read["task_state"]) == (thread["tid"], "running")
    joined = detail_of(own("blocking_join"), "join_handle")
    assert joined["task_id"] == int(facts["task.blocking_sleep"])
    thread = blocking[joined["task_id"]]
    assert thread["blocking_function"] == "io_app::blocking_join::{async_fn#0}::{closure#0}"
    assert joined["blocking_thread"] == thread["tid"]

    # Barrier, OnceCell (one task initializes it forever, one waits), SetOnce.
    barrier = detail_of(own("barrier_wait"), "barrier_wait")
    assert (barrier["arrived"], barrier["needed"], barrier["generation"]) == (1, 3, 1)
    root = task("once_cell_wait")
    at(markers, root, "once_cell_wait")
    [cell] = root["children"]
    assert detail_of(cell, "once_cell_init")["initialized"] is False
    permit = detail_of(last(cell), "semaphore_acquire")
    assert [holder["task"] for holder in permit["holders"]] == [int(facts["task.once_cell_init"])]
    assert detail_of(cell, "once_cell_init")["address"] == permit["address"]
    assert kinds(task("once_cell_init"))[-2:] == ["async_block", "pending"]
    assert detail_of(own("set_once_wait"), "set_once_wait")["set"] is False

    # The futures crate's channels.
    root = task("futures_mpsc")
    assert [node["function"] for node in (root, root["children"][0])] == ["io_app::setup::{async_block#0}", "io_app::futures_mpsc"]
    jobs = detail_of(last(root), "futures_mpsc_recv")
    assert (jobs["capacity"], jobs["queued"], jobs["senders"], jobs["closed"]) == (4, 0, 1, False)
    assert detail_of(own("futures_oneshot"), "futures_oneshot_recv") | {"address": None} == {
        "address": None, "closed": False, "value_sent": False}

    # A hand-written future: what it keeps in its fields, each marked as held there.
    root = task("worker")
    at(markers, root, "run_worker")
    [worker] = root["children"]
    assert (worker["kind"], worker["type"]) == ("future", "io_app::Worker")
    held = {child["via"]: child for child in worker["children"]}
    assert sorted(held) == ["helper", "jobs", "socket", "tick", "wakeup"]
    assert all(child["held"] for child in held.values())
    assert detail_of(held["jobs"], "mpsc_recv")["capacity"] == 4
    assert held["tick"]["kind"] == "sleep" and held["tick"]["boxed"]
    assert detail_of(held["wakeup"], "notified")["state"] == "held"
    assert read_wait(held["socket"]) == socket_read(fd("worker"), "poll")
    assert detail_of(held["helper"], "join_handle")["task_id"] == int(facts["task.worker_helper"])

    # A listener for the signals that stop a server, shaped as actix-server's and spawned
    # as it is: each signal it keeps in its Vec beside its kind, by name.
    root = task("os_signals")
    assert (root["kind"], root["type"]) == ("future", "io_app::OsSignals")
    assert [(child["via"], child["held"], child["kind"], child["detail"], child["children"])
            for child in root["children"]] == [
        ("signals[0].1", True, "signal_recv", {"name": "SIGINT", "signal": 2}, []),
        ("signals[1].1", True, "signal_recv", {"name": "SIGTERM", "signal": 15}, []),
        ("signals[2].1", True, "signal_recv", {"name": "SIGQUIT", "signal": 3}, []),
    ]
    assert root["children"][1]["summary"] == "waiting for signal SIGTERM"

    # A dispatcher keeping what it polls in std's collections: its queues in a HashMap by
    # name (in the table's order), its workers in a BTreeMap of two levels by number, boxed
    # jobs in a Vec, replies in an Arc<Mutex<VecDeque>>.
    root = task("dispatcher")
    assert (root["kind"], root["type"], root.get("error")) == ("future", "io_app::Dispatcher", None)
    children = root["children"]
    assert all(child["held"] and not child["children"] for child in children)
    queues = sorted((child["via"], child["kind"], child["detail"]["capacity"], child["detail"]["queued"])
                    for child in children[:2])
    assert queues == [('queues["audit"]', "mpsc_recv", 2, 0), ('queues["orders"]', "mpsc_recv", 8, 0)]
    workers = [(child["via"], child["kind"], child["detail"]["task_id"]) for child in children[2:14]]
    assert workers == [("workers[%d]" % number, "join_handle", int(facts["task.dispatch_worker.%d" % number]))
                       for number in range(12)]
    assert [(child["via"], child["kind"], child["boxed"]) for child in children[14:16]] == [
        ("jobs[0]", "sleep", True), ("jobs[1]", "sleep", True)]
    assert [(child["via"], child["kind"], child["detail"]["value_sent"]) for child in children[16:]] == [
        ("replies[0]", "oneshot_recv", False), ("replies[1]", "oneshot_recv", False)]

    # A poll_fn of the program's own: at its line, with the future it captures, not a select!.
    root = task("poll_fn_user")
    at(markers, root, "poll_fn_user")
    [poll_fn] = root["children"]
    assert poll_fn["kind"] == "poll_fn" and poll_fn["location"]["line"] == markers.await_line("poll_fn_user")
    assert poll_fn["detail"] == {"closure": "io_app::poll_fn_user::{closure#0}"}
    [timer] = poll_fn["children"]
    assert (timer["kind"], timer["via"]) == ("sleep", "timer") and "held" not in timer

    # main: a #[tokio::main] parked in select!(serve(), ctrl_c()).
    [main] = [thread for thread in report["threads"] if thread["role"] == "block_on"]
    assert main["future"] is not None, main
    check_main_future(main["future"], facts, markers, profile)


def check_main_future(future, facts, markers, profile):
    assert future["function"] == "io_app::main::{async_block#0}"
    at(markers, future, "main")
    [select] = future["children"]
    assert select["kind"] == "select" and select["detail"] == {"len": 2, "pending": 2}
    serve, ctrl_c = select["children"]
    # Branches that are async fn envs are labelled with the line that calls the fn only
    # unoptimized: optimized code inlines their construction away (as in test_waits).
    if profile == "dev":
        assert serve["branch"]["location"]["line"] == markers.branches["main_serve"]
        assert ctrl_c["branch"]["location"]["line"] == markers.branches["main_ctrl_c"]
    else:
        assert "location" not in serve["branch"] and "location" not in ctrl_c["branch"]
    assert serve["function"] == "io_app::serve"
    at(markers, serve, "serve")
    accept = serve["children"][0]
    at(markers, accept, "accept_forever")
    assert detail_of(last(accept), "io_readiness")["fd"] == int(facts["fd.listener"])
    assert ctrl_c["function"] == "tokio::signal::ctrl_c::ctrl_c"
    assert detail_of(last(ctrl_c), "signal_recv") == {"name": "SIGINT", "signal": 2}
