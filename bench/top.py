"""What `tokio-async top` costs the program and the machine (`make bench-top`): many-tasks
(dev build, 2 workers, six shapes of service task, idle once settled) watched by `top`
in a pseudo-terminal for a number of refreshes at 10,000 and 100,000 tasks.

Per refresh: the pause the header reports (the program stopped while its memory is
copied), the whole read, and top's own CPU time (user + system, from /proc, over the
refreshes, divided by their count); then the interval the 1% rule stretched it to.

Prints the table and, with --write FILE, puts it in FILE's top section."""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
sys.path.insert(0, os.path.join(REPO, "bench"))
from scale import settle, write_section  # noqa: E402
from support import build  # noqa: E402
from support.process import RunningFixture  # noqa: E402
from test_top import Top  # noqa: E402

REFRESH = re.compile(r"^#(\d+) · stopped ([\d.]+) ms \(read (\d+) ms\) · every ([\d.]+) s, ([\d.]+)% stopped")
HEADER = "| tasks | refreshes | pause ms (median / max) | read ms (median) | top CPU ms per refresh | interval s | stopped % |"
RULE = "|---:|---:|---:|---:|---:|---:|---:|"
BEGIN, END = "<!-- top -->", "<!-- /top -->"


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def row(tasks, refreshes, work):
    with RunningFixture(build.fixture("many-tasks", "dev"), str(tasks), work, extra_args=["2"]) as fixture:
        settle(fixture.pid)
        top = Top(fixture.pid, "--interval", "0.5", rows=24, columns=100)
        seen = {}

        def refreshed(top):
            match = REFRESH.match(top.lines()[2])
            if match:
                seen[int(match.group(1))] = match
            return match is not None

        top.wait_for(refreshed, "a first refresh", timeout=300)
        first = min(seen)
        cpu_before = cpu_seconds(top.child.pid)
        top.wait_for(lambda top: refreshed(top) and max(seen) >= first + refreshes, "%d refreshes" % refreshes,
                     timeout=600)
        cpu = cpu_seconds(top.child.pid) - cpu_before
        counted = [seen[n] for n in sorted(seen) if n > first]
        top.quit_with("q")
        pauses = [float(match.group(2)) for match in counted]
        last = counted[-1]
        return "| %s |" % " | ".join([
            "{:,}".format(tasks), str(len(counted)), "%.1f / %.1f" % (median(pauses), max(pauses)),
            "%d" % median([int(match.group(3)) for match in counted]),
            "%.0f" % (cpu * 1e3 / (max(seen) - first)), last.group(4), last.group(5)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="10000,100000", help="comma-separated task counts")
    parser.add_argument("--refreshes", type=int, default=10)
    parser.add_argument("--write", help="the results file whose top section is replaced")
    options = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    lines = ["## top", "",
             "`bench/top.py` on commit %s: `tokio-async top PID --interval 0.5` over many-tasks (dev build, 2 workers), "
             "%d refreshes after the first. Pause and read: as top's header says them (the pause is what the program "
             "was stopped for). CPU: top's user + system time over those refreshes. Interval and stopped: the last "
             "refresh's, after the 1%% rule." % (commit, options.refreshes),
             "", HEADER, RULE]
    print("\n".join(lines[-2:]), flush=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as work:
        for tasks in map(int, options.tasks.split(",")):
            line = row(tasks, options.refreshes, work)
            print(line, flush=True)
            lines.append(line)
    print("(%.0f s)" % (time.monotonic() - started))
    if options.write:
        write_section(options.write, lines, BEGIN, END)


if __name__ == "__main__":
    main()
