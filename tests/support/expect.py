"""What the tokio-app fixture must look like through the tool, derived from its markers.

A chain is the list of nodes from a future down its first children, each as
(kind, function-or-type, state, await_point, line)."""

import re

from .markers import Markers

RECEIVER = ("oneshot_recv", "tokio::sync::oneshot::Receiver<u32>", None, None, None)
SLEEP = ("sleep", "tokio::time::sleep::Sleep", None, None, None)
NOTIFIED = ("notified", "tokio::sync::notify::Notified", None, None, None)
JOIN_HANDLE = ("join_handle", "tokio::runtime::task::join::JoinHandle<()>", None, None, None)


def chain(node):
    result = []
    while node is not None:
        location = node.get("location")
        result.append(
            (
                node["kind"],
                node["function"] if node["function"] is not None else node["type"],
                node["state"],
                node["await_point"],
                location["line"] if location else None,
            )
        )
        assert len(node["children"]) <= 1, "a single await chain was expected"
        node = node["children"][0] if node["children"] else None
    return result


def suspended(markers, kind, function, marker):
    return (kind, function, "suspended", markers.await_index(marker), markers.await_line(marker))


def task_chains(mode):
    """Expected chain per named task; `mode` is breakpoint, hang or dump."""
    m = Markers()
    chains = {
        "level1": [
            suspended(m, "async_fn", "tokio_app::level1", "level1"),
            suspended(m, "async_fn", "tokio_app::level2", "level2"),
            suspended(m, "async_fn", "tokio_app::level3", "level3"),
            RECEIVER,
        ],
        "sleeper": [suspended(m, "async_fn", "tokio_app::sleeper", "sleeper"), SLEEP],
        "notify_block": [
            suspended(m, "async_block", "tokio_app::app_main::{async_block#0}", "notify_block"),
            NOTIFIED,
        ],
        "closure_caller": [
            suspended(m, "async_block", "tokio_app::app_main::{async_block#1}", "closure_caller"),
            suspended(m, "async_closure", "tokio_app::app_main::{async_block#1}::{closure#0}", "closure_sleep"),
            SLEEP,
        ],
        "service": [
            suspended(m, "async_block", "tokio_app::app_main::{async_block#2}", "service_block"),
            suspended(m, "async_fn", "tokio_app::Service::serve", "serve"),
            suspended(m, "async_fn", "<tokio_app::Service as tokio_app::Handler>::call", "call"),
            SLEEP,
        ],
    }
    if mode == "breakpoint":
        chains["runner"] = [("async_fn", "tokio_app::runner", None, None, m.running["runner"])]
        chains["child"] = [("async_fn", "tokio_app::child_task", "unresumed", None, m.fns["child_task"])]
    else:
        chains["runner"] = [suspended(m, "async_fn", "tokio_app::runner", "runner_join"), JOIN_HANDLE]
        chains["child"] = [suspended(m, "async_fn", "tokio_app::child_task", "child_task"), SLEEP]
    return chains


def task_states(mode):
    states = {name: "idle" for name in task_chains(mode)}
    if mode == "breakpoint":
        states["runner"] = "running"
        states["child"] = "scheduled"
    return states


def main_future_chain():
    m = Markers()
    return [
        suspended(m, "async_block", "tokio_app::main::{async_block#3}", "main_block"),
        suspended(m, "async_fn", "tokio_app::app_main", "app_main"),
        suspended(m, "async_fn", "tokio_app::wait_for_shutdown", "wait_for_shutdown"),
        NOTIFIED,
    ]


def roots(report):
    """Every tree of a report: each task's, and each thread's current and block_on future."""
    trees = [task["root"] for task in report["tasks"]]
    for thread in report["threads"]:
        trees += [thread[key] for key in ("future", "block_on_future") if thread.get(key)]
    return trees


def opaque_leaves(report):
    """(type, path) of every `future` node with no children and no facts: a future the tool
    could not see into, which says nothing of what it waits for. (A library future whose
    fields hold no future now says so in its facts: `{"state": "empty"}`.)"""
    found = []

    def visit(node, path):
        here = path + [node["function"] or node["type"]]
        if node["kind"] == "future" and not node["children"] and "detail" not in node:
            found.append((node["type"], " → ".join(here)))
        for child in node["children"]:
            visit(child, here)

    for root in roots(report):
        visit(root, [])
    return found


def frames_left_by_frame_records(output, prefix):
    """Thread id -> how many of its frames `--verbose` says were found by frame records."""
    line = re.compile(re.escape(prefix) + r"thread (\d+): (\d+) frames, the first at 0x[0-9a-f]+, were found by "
                      r"the frame pointer: no call frame information covers the frame inside$")
    found = (line.match(text) for text in output.splitlines())
    return {int(match.group(1)): int(match.group(2)) for match in found if match}
