"""What tasks wait on (the waits-app fixture), in GDB, LLDB 19 and LLDB 14, debug and
release: every resource kind as a leaf with its facts, boxed futures, wrappers seen
through, trees of futures with branch states, and locals kept across awaits."""

import re

import pytest
from support.checkpoint import locked_version, markers_of, run_to_checkpoint

WAITS_SOURCE = "waits-app/src/main.rs"
PROFILES = ["dev", "release"]
HOUR = 3600


@pytest.fixture(scope="module")
def markers():
    return markers_of("waits-app")


def run_waits(debugger, tmp_path, profile, command):
    return run_to_checkpoint(debugger, tmp_path, "waits-app", profile, command)


def name(node):
    return node["function"] if node["function"] is not None else node["type"]


def chain(node):
    """(kind, name) from the node down its single children."""
    result = [(node["kind"], name(node))]
    while len(node["children"]) == 1 and "branch" not in node["children"][0]:
        node = node["children"][0]
        result.append((node["kind"], name(node)))
    return result


def last(node):
    while len(node["children"]) == 1 and "branch" not in node["children"][0]:
        node = node["children"][0]
    return node


def branches(tree):
    return [(child["branch"]["index"], child["branch"]["status"], child["branch"].get("name"), chain(child)) for child in tree["children"]]


SLEEP = ("sleep", "tokio::time::sleep::Sleep")
MANY = ("async_fn", "waits_app::many_leaves")
WRAPPED = ("async_fn", "waits_app::wrapped")
SETS = ("async_fn", "waits_app::sets")


def assert_sleep(node, hours=1):
    assert node["kind"] == "sleep", node
    left = node["detail"]["remaining_secs"]
    assert hours * HOUR - 60 < left <= hours * HOUR, left
    assert set(node["detail"]["deadline"]) == {"secs", "nanos"}


@pytest.mark.parametrize("profile", PROFILES)
def test_every_kind_of_wait(debugger, tmp_path, profile, markers):
    run, facts = run_waits(debugger, tmp_path, profile, "async backtrace all full --json")
    [report] = run.json_sections()
    check_every_kind_of_wait(report, facts, markers, profile, locked_version("tokio"))


def check_every_kind_of_wait(report, facts, markers, profile, tokio_version):
    """The waits-app report, as every tokio version and build must give it."""
    tasks = {task["id"]: task for task in report["tasks"]}
    root = {key[len("task."):]: tasks[int(value)]["root"] for key, value in facts.items() if key.startswith("task.")}

    def await_at(node, marker):
        line, index = markers.awaits[marker]
        assert node["await_point"] == index, (marker, node)
        assert node["location"]["file"] == WAITS_SOURCE and node["location"]["line"] == line, (marker, node)

    # A lock-order deadlock: each task holds one Mutex and waits for the other, which the
    # other task's guard `_held` holds (test_wait_graph.py checks the deadlock itself).
    for task, other, holder in (("deadlock_a", "mutex.m2", "deadlock_b"), ("deadlock_b", "mutex.m1", "deadlock_a")):
        assert chain(root[task]) == [("async_fn", "waits_app::lock_both"), ("mutex_lock", "tokio::sync::mutex::Mutex<T>::lock")]
        await_at(root[task], "lock_both")
        detail = dict(last(root[task])["detail"])
        assert int(detail.pop("semaphore"), 16) >= int(facts[other], 16)
        holder_at = {"file": WAITS_SOURCE, "line": markers.await_line("lock_both"), "path": WAITS_SOURCE}
        assert detail.pop("holders") == [{"task": int(facts["task." + holder]), "location": holder_at, "local": "_held", "permits": 1}]
        assert detail == {
            "address": facts[other], "permits_available": 0, "permits_needed": 1, "permits_total": 1, "permits_assigned": 0,
            "waiters": 1, "closed": False, "holders_certainty": "certain",
        }

    # A JoinHandle chain of three tasks.
    for task, target in (("chain_top", "chain_middle"), ("chain_middle", "chain_bottom")):
        assert chain(root[task]) == [("async_fn", "waits_app::" + task), ("join_handle", "tokio::runtime::task::join::JoinHandle<()>")]
        await_at(root[task], task)
        detail = last(root[task])["detail"]
        assert (detail["task_id"], detail["task_state"]) == (int(facts["task." + target]), "idle")
    assert chain(root["chain_bottom"]) == [("async_fn", "waits_app::chain_bottom"), SLEEP]
    assert_sleep(last(root["chain_bottom"]))

    # Locals kept across the await, with simple values.
    locals_ = {local["name"]: local for local in root["chain_top"]["locals"]}
    assert locals_["label"]["value"] == "chain top" and locals_["label"]["type"] == "alloc::string::String"
    assert locals_["depth"]["value"] == 3 and locals_["offset"]["value"] == -7
    assert "middle" in locals_ and "__awaitee" not in locals_

    # A boxed async block.
    boxed_block = root["boxed"]["children"][0]
    assert chain(root["boxed"]) == [("async_fn", "waits_app::boxed_wait"), ("async_block", "waits_app::boxed_wait::{async_block#0}"), SLEEP]
    assert boxed_block["boxed"] is True
    await_at(boxed_block, "boxed_inner")

    # select! over an mpsc recv and a sleep: both branches pending.
    select = last(root["select"])
    assert chain(root["select"])[:3] == [
        ("async_block", "waits_app::app::{async_block#0}"), ("async_fn", "waits_app::select_recv_or_sleep"), ("select", select["type"]),
    ]
    assert [(i, status) for i, status, _, _ in branches(select)] == [(0, "pending"), (1, "pending")]
    recv, sleep = select["children"]
    assert recv["kind"] == "mpsc_recv"
    assert {k: recv["detail"][k] for k in ("queued", "capacity", "senders", "closed")} == {"queued": 0, "capacity": 4, "senders": 1, "closed": False}
    assert_sleep(sleep)

    # flume's receive on a bounded channel: nothing queued, both senders counted.
    flume = last(root["flume"])
    assert chain(root["flume"]) == [("async_fn", "waits_app::flume_recv"), ("flume_recv", "flume::async::RecvFut<u32>")]
    await_at(root["flume"], "flume_recv")
    assert int(flume["detail"]["address"], 16) > 0
    assert {k: v for k, v in flume["detail"].items() if k != "address"} == {"capacity": 4, "closed": False, "queued": 0, "senders": 2}

    # join! of two futures, one finished.
    join = last(root["join"])
    assert join["kind"] == "join"
    assert branches(join) == [
        (0, "done", None, [("async_block", "waits_app::join_one_done::{async_block#0}")]),
        (1, "pending", None, [SLEEP]),
    ]

    # FuturesUnordered with three sleeps; FuturesOrdered with two.
    unordered = last(root["unordered"])
    assert unordered["kind"] == "futures_unordered" and unordered["detail"]["len"] == 3
    assert sorted(round(c["detail"]["remaining_secs"] / HOUR) for c in unordered["children"]) == [1, 2, 3]
    ordered = last(root["ordered"])
    assert ordered["kind"] == "futures_ordered" and [c["kind"] for c in ordered["children"]] == ["sleep", "sleep"]

    # An instrumented future shows its span.
    assert chain(root["instrumented"])[1:] == [("instrumented", "tracing::instrument::Instrumented<tokio::time::sleep::Sleep>"), SLEEP]
    assert root["instrumented"]["children"][0]["detail"] == {"span": "fixture_span"}

    # Sockets: a listener's accept and an idle stream's read.
    accept = last(root["accept"])
    listening = {"fd": int(facts["fd.listener"]), "interest": ["read"], "operation": "accept", "fd_kind": "socket"}
    assert (accept["kind"], accept["detail"]) == ("io_readiness", listening)
    read = last(root["read"])
    reading = {"fd": int(facts["fd.stream"]), "interest": ["read"], "operation": "read", "fd_kind": "socket"}
    assert (read["kind"], read["detail"]) == ("io_readiness", reading)

    # One leaf each.
    leaves = {
        "leaf_notify": ("notified", {"state": "waiting", "waiters": 1, "permit_stored": False}),
        "leaf_oneshot": ("oneshot_recv", {"value_sent": False, "closed": False}),
        "leaf_watch": ("watch_changed", {"version_seen": 0, "version_current": 0, "closed": False, "receivers": 1}),
        "leaf_broadcast": ("broadcast_recv", {"queued": 0, "senders": 1, "closed": False}),
        "leaf_semaphore": ("semaphore_acquire", {"permits_available": 0, "permits_needed": 2, "waiters": 1}),
        "leaf_rwlock_write": ("rwlock_write", {"permits_available": 0, "permits_needed": 536870911, "waiters": 1}),
        "leaf_rwlock_read": ("rwlock_read", {"permits_available": 0, "permits_needed": 1, "waiters": 1}),
        "leaf_unbounded": ("mpsc_recv", {"queued": 0, "capacity": None, "senders": 1, "closed": False}),
        "leaf_pending": ("pending", {}),
    }
    for task, (kind, detail) in leaves.items():
        assert chain(root[task])[0] == MANY, task
        await_at(root[task], task)
        leaf = last(root[task])
        assert leaf["kind"] == kind, (task, leaf)
        assert {k: leaf["detail"][k] for k in detail} == detail, (task, leaf["detail"])
    timeout = root["leaf_timeout"]["children"][0]
    assert timeout["kind"] == "timeout" and HOUR - 60 < timeout["detail"]["remaining_secs"] <= HOUR
    assert [c["kind"] for c in timeout["children"]] == ["pending"]
    interval = last(root["leaf_interval"])
    assert_sleep(interval)
    assert interval["detail"]["period_secs"] == HOUR
    # Its first tick was when the fixture made it, moments before the stop.
    assert 0 <= interval["detail"]["since_last_tick_secs"] < 60, interval

    # Wrappers seen through: the chain goes straight to the future inside.
    for task in ("map", "then", "fuse", "maybe_done", "either", "mut_ref"):
        assert chain(root["wrapped_" + task]) == [WRAPPED, SLEEP], task
        assert "boxed" not in last(root["wrapped_" + task]), task
        await_at(root["wrapped_" + task], "wrapped_" + task)
    and_then = chain(root["wrapped_and_then"])
    assert and_then[0] == WRAPPED and and_then[1][0] == "async_block" and and_then[2] == SLEEP
    for task, leaf in (("pin_box", SLEEP), ("pin_mut_dyn", SLEEP), ("box_dyn", ("pending", "core::future::pending::Pending<()>"))):
        assert chain(root["wrapped_" + task]) == [WRAPPED, leaf], task
        assert last(root["wrapped_" + task])["boxed"] is True, task

    # A select! branch disabled by its precondition.
    disabled = last(root["wrapped_disabled_branch"])
    assert branches(disabled) == [(0, "disabled", None, [("ready", "core::future::ready::Ready<()>")]), (1, "pending", None, [SLEEP])]

    # Sets and the futures crate's combinators and macros.
    join_all = last(root["set_join_all"])
    assert join_all["kind"] == "join_all" and branches(join_all) == [(0, "pending", None, [SLEEP]), (1, "pending", None, [SLEEP])]
    select_all = last(root["set_select_all"])
    assert select_all["kind"] == "select_all" and [c["boxed"] for c in select_all["children"]] == [True, True]
    select2 = last(root["set_select"])
    assert select2["kind"] == "select" and [chain(c) for c in select2["children"]] == [[SLEEP], [("pending", "core::future::pending::Pending<()>")]]
    join_set = last(root["set_join_set"])
    assert join_set["kind"] == "join_set" and [c["kind"] for c in join_set["children"]] == ["join_handle", "join_handle"]
    for handle in join_set["children"]:
        assert chain(tasks[handle["detail"]["task_id"]]["root"]) == [SLEEP]
    try_join = last(root["set_try_join"])
    assert try_join["kind"] == "join"
    assert [(i, status) for i, status, _, _ in branches(try_join)] == [(0, "done"), (1, "pending")]
    assert chain(try_join["children"][1])[1:] == [SLEEP]
    futures_join = last(root["set_futures_join"])
    assert futures_join["kind"] == "join" and branches(futures_join)[1] == (1, "pending", None, [SLEEP])
    assert branches(futures_join)[0][:2] == (0, "done")
    futures_select = last(root["set_futures_select"])
    assert [(i, status, name_) for i, status, name_, _ in branches(futures_select)] == [(0, "pending", "first"), (1, "pending", "second")]
    assert all(c["kind"] == "sleep" and c["boxed"] for c in futures_select["children"])

    # An await written inside a macro is at the user's line of the macro call (the line of
    # the call that polls it); the macro's own line is kept as `macro_location`.
    macro_awaits = {
        "select": (root["select"]["children"][0], "tokio-%s/src/macros/select.rs" % tokio_version),
        "join": (root["join"], "tokio-%s/src/macros/join.rs" % tokio_version),
        "wrapped_disabled_branch": (root["wrapped_disabled_branch"], "tokio-%s/src/macros/select.rs" % tokio_version),
        "set_try_join": (root["set_try_join"], "tokio-%s/src/macros/try_join.rs" % tokio_version),
        "set_futures_join": (root["set_futures_join"], "futures-util-"),
        "set_futures_select": (root["set_futures_select"], "futures-util-"),
    }
    for marker, (node, macro_file) in macro_awaits.items():
        await_at(node, marker)
        assert node["macro_location"]["file"].startswith(macro_file), (marker, node["macro_location"])
    assert "macro_location" not in root["chain_top"] and "macro_location" not in root["boxed"]
    # Branches that are async blocks are labelled with their own line.
    def branch_line(tree, index):
        return tree["children"][index]["branch"].get("location", {}).get("line")
    assert branch_line(join, 0) == branch_line(join, 1) == markers.await_line("join")
    # Other futures where the code shows the call that makes them: a sleep always (a GOT
    # call unoptimized, an inlined or GOT call optimized); an async fn's env and a `ready()`
    # only unoptimized (optimized code inlines their construction away).
    assert branch_line(select, 1) == markers.branches["select_sleep"]
    assert branch_line(disabled, 1) == markers.branches["disabled_sleep"]
    if profile == "dev":
        assert branch_line(select, 0) == markers.branches["select_recv"]
        assert branch_line(disabled, 0) == markers.branches["disabled_ready"]
    assert branch_line(try_join, 0) == branch_line(try_join, 1) == markers.await_line("set_try_join")
    assert branch_line(futures_join, 0) == markers.await_line("set_futures_join")
    assert report["errors"] == []
    # The blocking pool: one thread inside a closure, one idle.
    blocking = sorted(
        (thread.get("blocking_function") or "") for thread in report["threads"] if thread["role"] == "blocking"
    )
    assert blocking == ["", "waits_app::blocking_wait"], [t["role"] for t in report["threads"]]
    # The tokio version, read from the DWARF's source paths.
    assert [runtime["tokio_version"] for runtime in report["runtimes"]] == [tokio_version]


def test_text_says_what_each_task_waits_for(debugger, tmp_path, markers):
    run, facts = run_waits(debugger, tmp_path, "dev", "async backtrace all full")
    [text] = run.sections()
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]
    assert re.fullmatch(r"tokio %s: 1 runtime \(MultiThread\), \d+ tasks" % re.escape(locked_version("tokio")), lines[0]), lines[0]
    assert any(re.fullmatch(r'Thread \d+ "tokio-rt-worker": blocking pool, running waits_app::blocking_wait', line) for line in lines)
    assert any(re.fullmatch(r'Thread \d+ "tokio-rt-worker": blocking pool, idle', line) for line in lines)
    assert "#1 waiting for Mutex %s (0 permits, 1 waiter; held by task %s at %s:%d)" % (
        facts["mutex.m2"], facts["task.deadlock_b"], WAITS_SOURCE, markers.await_line("lock_both")) in lines
    assert "#1 JoinHandle -> task %s (idle)" % facts["task.chain_middle"] in lines
    assert any(re.fullmatch(r"#1 Sleep until \+35\d\d\.\ds", line) for line in lines)
    # The select!'s channel: its one sender is kept by the main thread's block_on future.
    assert any(re.fullmatch(r"#3 recv on mpsc 0x[0-9a-f]+ \(0 queued, 1 sender; sender held by thread \d+ at %s:\d+\)" % WAITS_SOURCE, line) for line in lines)
    assert "#1 accept on fd %s (socket), waiting for read" % facts["fd.listener"] in lines
    assert "#1 in span `fixture_span`" in lines
    assert "branch 0 (disabled) at waits-app/src/main.rs:%d:" % markers.branches["disabled_ready"] in lines
    assert "branch 0 `first` (pending):" in lines
    assert "#1 async fn waits_app::select_recv_or_sleep at waits-app/src/main.rs:%d (await #0)" % markers.await_line("select") in lines
    assert 'label: alloc::string::String = "chain top"' in lines
    assert any(re.fullmatch(r"#1 Sleep until \+35\d\d\.\ds \[boxed\]", line) for line in lines)
