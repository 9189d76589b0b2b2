"""Draws docs/dap-call-stack.svg: what an editor's call-stack panel shows through
`tokio-async dap`, from a real session (tokio-app stopped at its checkpoint, through
lldb-dap-19): the threads the adapter lists, the task threads the proxy adds, and two of
them expanded as the editor would expand them (a task's await chain, the worker polling a
task). `python3 tools/dap_picture.py` after `make build`."""

import os
import re
import sys
from html import escape

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build  # noqa: E402
from support.dap import DapClient  # noqa: E402

TASK_THREAD_BASE = 1 << 40
OUTPUT = os.path.join(REPO, "docs", "dap-call-stack.svg")
LINE, CHAR, WIDTH = 20, 7.4, 1000


def session():
    client = DapClient([os.path.join(REPO, "target", "release", "tokio-async"), "dap"])
    client.request("initialize", {"adapterID": "lldb-dap", "linesStartAt1": True, "columnsStartAt1": True, "pathFormat": "path"})
    seq = client.send("launch", {"program": build.fixture("tokio-app", "dev"), "args": ["breakpoint", "multi_thread"]})
    client.wait_event("initialized")
    client.request("setFunctionBreakpoints", {"breakpoints": [{"name": "tokio_async_checkpoint"}]})
    client.request("configurationDone")
    client.response(seq)
    stopped = client.wait_event("stopped")
    return client, stopped["body"]["threadId"]


def rows():
    """(indent, text, style) per line of the panel."""
    client, stopped = session()
    try:
        threads = client.request("threads")["threads"]
        lines = [(0, "CALL STACK", "title")]
        for thread in threads:
            is_task = thread["id"] >= TASK_THREAD_BASE - 1
            expand = thread["id"] == stopped or thread["name"].startswith("task 3 ")
            lines.append((0, ("▾ " if expand else "▸ ") + thread["name"], "task" if is_task else "thread"))
            if not expand:
                continue
            frames = client.request("stackTrace", {"threadId": thread["id"]})["stackFrames"]
            labels = [at for at, frame in enumerate(frames) if frame.get("presentationHint") == "label"]
            # A worker's stack: its first frames, then (past tokio's glue) the frame that
            # polls the task and the proxy's row naming it; a task's: all of it.
            shown = frames if thread["id"] >= TASK_THREAD_BASE else frames[:3] + [None] + frames[labels[0] - 1:labels[0] + 1]
            for frame in shown:
                if frame is None:
                    lines.append((1, "⋮", "frame"))
                    continue
                where = ""
                if frame.get("source"):
                    where = "%s:%d" % (os.path.basename(frame["source"]["path"]), frame["line"])
                style = "label" if frame.get("presentationHint") == "label" else "frame"
                lines.append((1, "%s  %s" % (re.sub(r"::h[0-9a-f]{16}$", "", frame["name"]), where), style))
        return lines
    finally:
        client.request("disconnect", {"terminateDebuggee": True})
        client.close()


def svg(lines):
    colours = {"title": "#bbbbbb", "thread": "#e0e0e0", "task": "#9cdcfe", "frame": "#d4d4d4", "label": "#c586c0"}
    height = LINE * (len(lines) + 1)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="monospace" font-size="12">' % (WIDTH, height),
           '<rect width="100%" height="100%" fill="#1e1e1e"/>']
    for number, (indent, text, style) in enumerate(lines, start=1):
        limit = int((WIDTH - 20 - indent * 24) / CHAR)
        shown = text if len(text) <= limit else text[: limit - 1] + "…"
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (10 + indent * 24, number * LINE, colours[style], escape(shown)))
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(OUTPUT, "w") as picture:
        picture.write(svg(rows()))
    print("wrote", OUTPUT)
