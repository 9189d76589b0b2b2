"""The DAP benchmark (`make bench-dap`): what an editor waits for at a stop of 10,000 tasks
(tests/fixtures/many-tasks, dev build) through `tokio-async dap -- lldb-dap-19`: the
`threads` request (the adapter's threads and the tasks, which reads the stop's report),
a task thread's `stackTrace`, and the adapter's own `threads` alone for comparison.
Prints one row per request: runs, median s, slowest s; the first `threads` of a stop is
timed on its own (it reads the report), the others at the same stop."""

import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build  # noqa: E402
from support.dap import DapClient  # noqa: E402

PROXY = os.path.join(REPO, "target", "release", "tokio-async")
ADAPTER = "lldb-dap-19"
TASKS = 10000
STOPS = 3
TASK_THREAD_BASE = 1 << 40


def session(argv, workdir):
    client = DapClient(argv)
    client.request("initialize", {"adapterID": "lldb-dap", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
    program = build.fixture("many-tasks", "dev")
    seq = client.send("launch", {"program": program, "args": [str(TASKS), "2"],
                                 "env": ["FIXTURE_MANIFEST=%s" % os.path.join(workdir, "manifest.json")]})
    client.wait_event("initialized")
    client.request("setFunctionBreakpoints", {"breakpoints": [{"name": "tokio_async_checkpoint"}]})
    client.request("configurationDone")
    client.response(seq)
    client.wait_event("stopped", timeout=300)
    return client


def timed(action):
    start = time.monotonic()
    result = action()
    return time.monotonic() - start, result


def measure(argv, workdir):
    """{request: [seconds...]} over STOPS stops (each stop: `pause` after a `continue`)."""
    client = session(argv, workdir)
    times = {"threads (first at a stop)": [], "threads (again)": [], "stackTrace of a task": []}
    thread = None
    try:
        for stop in range(STOPS):
            if stop:
                client.request("continue", {"threadId": thread})
                client.wait_event("continued")
                time.sleep(0.2)
                client.request("pause", {"threadId": thread})
                client.wait_event("stopped", timeout=120)
            seconds, body = timed(lambda: client.request("threads", timeout=300))
            times["threads (first at a stop)"].append(seconds)
            thread = body["threads"][0]["id"]
            seconds, body = timed(lambda: client.request("threads", timeout=300))
            times["threads (again)"].append(seconds)
            tasks = [t["id"] for t in body["threads"] if t["id"] >= TASK_THREAD_BASE]
            if tasks:
                arguments = {"threadId": tasks[0]}
                seconds, _ = timed(lambda: client.request("stackTrace", arguments))  # noqa: B023
                times["stackTrace of a task"].append(seconds)
    finally:
        client.request("disconnect", {"terminateDebuggee": True})
        client.close()
    return times


def main():
    build.fixture("many-tasks", "dev")
    with tempfile.TemporaryDirectory() as workdir:
        rows = [("tokio-async dap", measure([PROXY, "dap", "--", ADAPTER], workdir)),
                (ADAPTER + " alone", measure([ADAPTER], workdir))]
    print("%d tasks, %d stops" % (TASKS, STOPS))
    print("%-22s %-28s %5s %9s %9s" % ("adapter", "request", "runs", "median s", "slowest s"))
    for adapter, times in rows:
        for request, seconds in times.items():
            if seconds:
                print("%-22s %-28s %5d %9.3f %9.3f" % (adapter, request, len(seconds), statistics.median(seconds), max(seconds)))


if __name__ == "__main__":
    main()
