"""The executable's benchmark (`make bench-standalone`): how long `tokio-async PID` keeps a
service of 10,000 tasks (tests/fixtures/many-tasks, dev and release builds) stopped, and how
long the whole command takes against GDB's `async backtrace all` on the same process,
GDB's start (and its loading of the program) included: what a user waits for either way.

Each figure is the median of RUNS runs on one process that stays parked (its tasks do not
change between runs). The pause is what `--verbose` measures: from the first thread
stopped to the last let go. Prints one table row per build."""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build  # noqa: E402
from support.paths import GDB_SCRIPT  # noqa: E402
from support.process import RunningFixture  # noqa: E402

EXECUTABLE = os.path.join(REPO, "target", "release", "tokio-async")
TASKS, RUNS = 10000, 5
PAUSE = re.compile(r"was stopped for ([\d.]+) ms: .* ([\d,]+) tasks read in ([\d.]+) ms")


def timed(argv):
    start = time.monotonic()
    completed = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, timeout=600)
    seconds = time.monotonic() - start
    if completed.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), completed.stderr[-2000:]))
    return seconds, completed


def measure(profile, work):
    binary = build.fixture("many-tasks", profile)
    output = os.path.join(work, "report.json")
    with RunningFixture(binary, str(TASKS), work, extra_args=["2"]) as fixture:
        pauses, walks, ours, theirs = [], [], [], []
        for _ in range(RUNS):
            seconds, completed = timed([EXECUTABLE, str(fixture.pid), "--json", "--output", output, "--verbose"])
            found = PAUSE.search(completed.stderr)
            if not found:
                raise RuntimeError(completed.stderr)
            tasks = int(found.group(2).replace(",", ""))
            pauses.append(float(found.group(1)))
            walks.append(float(found.group(3)))
            ours.append(seconds)
            seconds, _ = timed(["gdb", "-nx", "-batch", "-ex", "source %s" % GDB_SCRIPT,
                                "-ex", "async backtrace all --json --output %s" % output, "-p", str(fixture.pid)])
            theirs.append(seconds)
    return tasks, statistics.median(pauses), statistics.median(walks), statistics.median(ours), statistics.median(theirs)


def main():
    print("many-tasks with %d tasks, 2 workers; medians of %d runs" % (TASKS, RUNS))
    print("| build | tasks | pause ms | of which reading tasks ms | tokio-async PID --json s | gdb -p PID, async bt all --json s | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as work:
        for profile in ("dev", "release"):
            tasks, pause, walk, ours, theirs = measure(profile, work)
            print("| %s | %s | %.1f | %.1f | %.2f | %.2f | %.1fx |" % (profile, format(tasks, ","), pause, walk, ours, theirs, theirs / ours))


if __name__ == "__main__":
    main()
