"""The scale benchmark (`make bench`: 10,000 and 100,000 tasks; `make bench-scale`: also
1,000,000): a service-shaped program (tests/fixtures/many-tasks, dev build, 2 workers)
read whole, by the executable and in GDB and LLDB, each beside the debugger's own
all-threads backtrace on the same stop.

- The executable (`tokio-async PID --json --output FILE --verbose`, then `tasks`, the
  text table, to a file): wall seconds, the pause `--verbose` reports, peak RSS (wait4);
  and the peak RSS of one task (`task N`, a Mutex waiter) and of the groups (`--group`, as text), which
  keep whole only the trees they print.
- The executable on a core of the same stop (GDB's `gcore`; `tokio-async BINARY CORE --json`, and
  `task N`): wall seconds and peak RSS.
- GDB and LLDB, attached: `async bt all --json --output FILE`, cold (the session's first
  command) and warm (best of the next ones), and how much the debugger grew (peak RSS
  over the commands, less RSS before); `bt`: `thread apply all bt` / `bt all` in a
  session of its own, without the script.

Prints the table and, with --write FILE, puts it in FILE's scale section."""

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
from run import in_debugger  # noqa: E402
from support import build  # noqa: E402
from support.process import RunningFixture  # noqa: E402

EXECUTABLE = os.path.join(REPO, "target", "release", "tokio-async")
PAUSE = re.compile(r"was stopped for ([\d.]+) ms")
HEADER = ("| tasks | exe JSON s | exe table s | pause s | exe peak MB | `task N` peak MB | `--group` peak MB "
          "| core JSON s | core peak MB | core `task N` MB "
          "| GDB cold s | GDB warm s | GDB grows MB | GDB bt s | LLDB cold s | LLDB warm s | LLDB grows MB | LLDB bt s |")
RULE = "|" + "---:|" * HEADER.count(" |")
BEGIN, END = "<!-- scale -->", "<!-- /scale -->"


def executable(arguments):
    """Wall seconds, peak RSS in bytes and stderr of one run of the executable, which
    writes its `--output` as a new file (over a 1.3 GB one, this VM's kernel takes about a
    second more to give back the old file's pages)."""
    output = arguments[arguments.index("--output") + 1]
    if os.path.exists(output):
        os.unlink(output)
    start = time.monotonic()
    process = subprocess.Popen([EXECUTABLE, *arguments], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError("tokio-async %s: %s" % (" ".join(arguments), stderr[-2000:]))
    return seconds, usage.ru_maxrss * 1024, stderr


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def settle(pid, timeout=300):
    """Waits until the program is idle (no CPU time used over half a second): a million
    tasks are still being polled for the first time when the fixture says it is ready, and
    the figures are of the tool, not of the program starting beside it."""
    deadline = time.monotonic() + timeout
    before = cpu_ticks(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = cpu_ticks(pid)
        if now == before:
            return
        before = now


def row(tasks, work, debuggers, repeats):
    binary = build.fixture("many-tasks", "dev")
    output = os.path.join(work, "report")
    with RunningFixture(binary, str(tasks), work, extra_args=["2"]) as fixture:
        settle(fixture.pid)
        pid = str(fixture.pid)
        json_runs = [executable([pid, "--json", "--output", output + ".json", "--verbose"]) for _ in range(repeats)]
        table_runs = [executable([pid, "tasks", "--output", output + ".txt"]) for _ in range(repeats)]
        waiter = fixture.manifest["facts"]["shape.2"].split(",")[0]
        one_task = executable([pid, "task", waiter, "--output", output + ".task.txt"])
        groups = executable([pid, "--group", "--output", output + ".groups.txt"])
        best = min(json_runs, key=lambda run: run[0])
        found = PAUSE.search(best[2])
        if not found:
            raise RuntimeError(best[2])
        figures = {
            "tasks": tasks,
            "exe_json": best[0],
            "exe_table": min(run[0] for run in table_runs),
            "pause": float(found.group(1)) / 1e3,
            "exe_peak": max(run[1] for run in json_runs),
            "task_peak": one_task[1],
            "group_peak": groups[1],
        }
        core = os.path.join(work, "core")
        subprocess.run(["gdb", "-q", "-batch", "-p", pid, "-ex", "gcore " + core], check=True,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        core_runs = [executable([binary, core, "--json", "--output", output + ".core.json"]) for _ in range(repeats)]
        core_task = executable([binary, core, "task", waiter, "--output", output + ".core.task.txt"])
        os.unlink(core)
        figures["core"] = (min(run[0] for run in core_runs), max(run[1] for run in core_runs), core_task[1])
        command = "async bt all --json --output %s.%%s.json" % output
        for debugger in debuggers:
            ours = in_debugger(debugger, binary, fixture.pid, None, command % debugger, repeats=repeats)
            theirs = in_debugger(debugger, binary, fixture.pid, None,
                                 "thread apply all bt" if debugger == "gdb" else "bt all", with_script=False, repeats=1)
            figures[debugger] = (ours["cold"], ours["warm"], ours["rss_delta"], theirs["cold"])
    return figures


def format_row(figures):
    cells = ["{:,}".format(figures["tasks"]), "%.2f" % figures["exe_json"], "%.2f" % figures["exe_table"],
             "%.3f" % figures["pause"], "%.0f" % (figures["exe_peak"] / 1e6),
             "%.0f" % (figures["task_peak"] / 1e6), "%.0f" % (figures["group_peak"] / 1e6)]
    seconds, peak, task_peak = figures["core"]
    cells += ["%.2f" % seconds, "%.0f" % (peak / 1e6), "%.0f" % (task_peak / 1e6)]
    for debugger in ("gdb", "lldb"):
        if debugger in figures:
            cold, warm, grows, bt = figures[debugger]
            cells += ["%.2f" % cold, "%.2f" % warm, "%.0f" % (grows / 1e6), "%.2f" % bt]
        else:
            cells += ["–"] * 4
    return "| " + " | ".join(cells) + " |"


def write_section(path, lines, begin=BEGIN, end=END):
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    section = "\n".join([begin] + lines + [end])
    if begin in text and end in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(path, "w") as out:
        out.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="10000,100000", help="comma-separated task counts")
    parser.add_argument("--debuggers", default="gdb,lldb")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (best taken; 2 at a million)")
    parser.add_argument("--write", help="the results file whose scale section is replaced")
    options = parser.parse_args()
    debuggers = [name for name in options.debuggers.split(",") if name]
    lines = ["## Scale", "",
             "`bench/scale.py` on commit %s: many-tasks (dev build, 2 workers, six shapes of service task), "
             "attached live once it is idle; best of %d runs (2 at a million), each writing a new file. Pause: what `--verbose` says the process "
             "was stopped for. core: the executable on a core of the same stop (GDB's gcore). GDB/LLDB grow: the "
             "debugger's peak RSS over the commands less its RSS before. bt: the debugger's own all-threads "
             "backtrace of the same stop." % (
                 subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, stdout=subprocess.PIPE,
                                text=True).stdout.strip(), options.repeats),
             "", HEADER, RULE]
    print("\n".join(lines[-2:]), flush=True)
    with tempfile.TemporaryDirectory() as work:
        for tasks in (int(count) for count in options.tasks.split(",")):
            repeats = 2 if tasks >= 1_000_000 else options.repeats
            line = format_row(row(tasks, work, debuggers, repeats))
            print(line, flush=True)
            lines.append(line)
    if options.write:
        write_section(options.write, lines)


if __name__ == "__main__":
    main()
