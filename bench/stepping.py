"""The stepping benchmark (`make bench-stepping`): how long `async next`, `step` and
`finish` take while 50 tasks run the same async fns (tests/fixtures/stepping-app, dev
build), in GDB and LLDB 19, and in LLDB with its expression conditions in place of the
Python callback (TOKIO_ASYNC_LLDB_CONDITIONS=expression). Each command's wall time is
taken inside the debugger, from a breakpoint in task n == 7. Prints one table row per
debugger and command: runs, median s, slowest s.

Most of a step's time is the program's own: the awaits yield and the task waits for the
Mutex (held by a hog task half the time) and its 50 ms sleep. What the rows compare is the
debugger's cost of the conditional breakpoints every task's polls hit meanwhile."""

import json
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build, debuggers  # noqa: E402
from support.inferior import script_step, tagged_lines  # noqa: E402

# From task 7's `begin` line to level1's call of level2, then into level2 and level3, and back.
COMMANDS = ["async next"] * 13 + ["async step", "async step", "async finish"]

TIMING = r'''
import json, time
times = []
for command in COMMANDS:
    start = time.monotonic()
    output = run_command(command)
    times.append([command, time.monotonic() - start, "tokio-async:" in output])
print("@@times " + json.dumps(times))
'''


def begin_line():
    source = os.path.join(REPO, "tests", "fixtures", "stepping-app", "src", "main.rs")
    with open(source) as lines:
        for number, line in enumerate(lines, start=1):
            if re.search(r"//\s*@step\s+begin\b", line):
                return number
    raise RuntimeError("no @step begin marker")


def measure(debugger, binary, env=None):
    line = begin_line()
    setup = ["break stepping-app/src/main.rs:%d" % line if debugger.name == "gdb" else "breakpoint set -f main.rs -l %d" % line,
             "run", "delete 1" if debugger.name == "gdb" else "breakpoint delete 1"]
    with tempfile.TemporaryDirectory() as work:
        body = "COMMANDS = %r\n" % COMMANDS + TIMING
        step = script_step(debugger, Path(work) / "timing.py", body)
        run = debugger.run_steps(setup + [step], program=binary, args=["multi"], env=env, timeout=300)
    [line] = tagged_lines(run, "times")
    return json.loads(line)


def main():
    binary = build.fixture("stepping-app", "dev")
    cases = [
        ("gdb", debuggers.Gdb(), None),
        ("lldb-19 (callback)", debuggers.Lldb(), None),
        ("lldb-19 (expression)", debuggers.Lldb(), {"TOKIO_ASYNC_LLDB_CONDITIONS": "expression"}),
    ]
    print("| debugger | command | runs | median s | slowest s | errors |")
    print("|---|---|---:|---:|---:|---:|")
    for name, debugger, env in cases:
        times = measure(debugger, binary, env)
        for command in dict.fromkeys(command for command, _, _ in times):
            taken = [seconds for each, seconds, _ in times if each == command]
            errors = sum(1 for each, _, failed in times if each == command and failed)
            print("| %s | %s | %d | %.3f | %.3f | %d |" % (
                name, command, len(taken), statistics.median(taken), max(taken), errors))
        total = sum(seconds for _, seconds, _ in times)
        print("| %s | all %d commands | 1 | %.3f | %.3f | |" % (name, len(times), total, total))


if __name__ == "__main__":
    main()
