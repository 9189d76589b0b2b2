"""The speed benchmark (`make bench`): builds the service-shaped fixture (tests/fixtures/
many-tasks) in debug and release, and times `async backtrace all --json` on it in GDB and
LLDB 19, attached to the live process and on a core of it. At 100,000 tasks the report
(120 MB of JSON) goes to a file with `--output`, as it should in use. Prints one table row
per case:

  tasks, profile, debugger, target, cold s, warm s, RSS delta, bt s, cold/bt, warm/bt

- cold: the first call in a fresh debugger session (DWARF loading included). The script is
  loaded before the program, as from ~/.gdbinit / ~/.lldbinit (GDB `-iex`, LLDB `-O`),
  and starts loading the program's DWARF when the debugger loads it (GDB's new_objfile
  event; in LLDB a listener of module loads): the unit directory and a tokio unit, then,
  behind the commands, every other unit. A command indexes the units it needs itself and
  waits for nothing else. The call comes at once, or in the rows "first call after 2 s"
  two seconds later, as a user's would (the `bt` beside them too);
- warm: the best of five further calls in that session (this VM's speed drifts);
- RSS delta: the debugger's peak RSS over those calls minus its RSS before them;
- bt: the debugger's own `thread apply all bt` (GDB) or `bt all` (LLDB), first call, in a
  session of its own on the same stop; warm/bt compares with that command's second call.

A second table shows what one command reads of the DWARF when nothing was loaded ahead
(TOKIO_ASYNC_PRELOAD=0): the compilation units it indexed and their size, of the binary's.

A third times loading alone, per binary: ours until a command can start (the core's
`start_loading(...).wait()` in a fresh process) and until every unit is indexed, against
GDB's (`file` with `maint set dwarf synchronous on`) and LLDB's (`target create`, then the
first type lookup, which builds its index), each the best of three. GDB and LLDB read
every unit: rustc's DWARF 4 has no name index (.debug_names) to start from.

Usage: python3 bench/run.py [--quick] [--load-only] [--write bench/RESULTS.md]
  --quick: only the 10,000-task rows (and the reads and load tables).
  --load-only: only the load table.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The fixtures are built and run as the tests do, in their shared target directory.
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build  # noqa: E402
from support.process import RunningFixture  # noqa: E402

LLDB = "lldb-19"
COMMAND = "async backtrace all --json"
TO_FILE = "async backtrace all --json --output %s"
DEBUGGER_BT = {"gdb": "thread apply all bt", "lldb": "bt all"}
# Seconds between loading the program and the first command, in the rows that model a user.
PAUSE = 2.0


def in_debugger(debugger, binary, pid, core, command, with_script=True, pause=0.0, env=None, repeats=5):
    """Runs bench/in_debugger.py's `measure(command)` in a fresh session; its result dict.
    Without `with_script`, the session is the debugger alone (for its own backtrace);
    `env` adds to the debugger's environment."""
    bench = os.path.join(REPO, "bench")
    if debugger == "gdb":
        measure = ("python import sys; sys.path.insert(0, %r); import in_debugger as m; "
                   "m.measure(m.gdb_run, %r, pause=%r, repeats=%d)" % (bench, command, pause, repeats))
        args = ["gdb", "-nx", "-batch", "-q", "-iex", "set auto-load python-scripts off", "-iex", "set pagination off"]
        if with_script:
            args += ["-iex", "source " + os.path.join(REPO, "gdb-scripts", "tokio_async.py")]
        args += ["-p", str(pid)] if pid else [binary, core]
        args += ["-ex", measure]
        if pid:
            args += ["-ex", "detach"]
    else:
        measure = ("script import sys; sys.path.insert(0, %r); import in_debugger as m; "
                   "m.measure(m.lldb_run, %r, pause=%r, repeats=%d)" % (bench, command, pause, repeats))
        args = [LLDB, "--no-lldbinit", "-b"]
        if with_script:
            args += ["-O", "command script import " + os.path.join(REPO, "lldb-scripts", "tokio_async.py")]
        args += ["-p", str(pid)] if pid else ["-c", core, binary]
        args += ["-o", measure]
        if pid:
            args += ["-o", "process detach"]
    completed = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=900,
                               env=dict(os.environ, **(env or {})))
    for line in completed.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise RuntimeError("%s printed no result:\n%s\n%s" % (debugger, completed.stdout[-2000:], completed.stderr[-2000:]))


LOAD_BINARIES = [("tokio-app", "dev"), ("waits-app", "dev"), ("services-app", "release"), ("services-app", "dev")]
LOAD_REPEATS = 3
LOAD_HEADER = "| binary | profile | size MB | .debug_info MB | units | our load s | ours, every unit s | GDB load s | LLDB load s |"
LOAD_RULE = "|---|---|---:|---:|---:|---:|---:|---:|---:|"
# Each prints the seconds its load took, measured inside the process (no start-up cost).
# Ours: what a command waits for (the unit directory and a tokio unit), then every unit.
OUR_LOAD = ("import sys, time; sys.path.insert(0, %r); from tokio_async_glue import _core; start = time.perf_counter(); "
            "binary = _core.start_loading(sys.argv[1], index_ahead=False).wait(); "
            "print('LOAD', time.perf_counter() - start); binary.index_all(); print('ALL', time.perf_counter() - start)")
GDB_LOAD = "python import time, gdb; start = time.perf_counter(); gdb.execute('file %s'); print('LOAD', time.perf_counter() - start)"
LLDB_LOAD = ("script import time; start = time.perf_counter(); lldb.debugger.HandleCommand('target create %s'); "
             "lldb.debugger.GetSelectedTarget().FindFirstType('tokio::runtime::task::core::Header'); "
             "print('LOAD', time.perf_counter() - start)")


def load_seconds(argv, labels=("LOAD",)):
    """The best of LOAD_REPEATS runs of a command that prints `<label> <seconds>` for each of
    `labels`: one number per label, in their order."""
    best = {}
    for _ in range(LOAD_REPEATS):
        completed = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
        for label in labels:
            lines = [line for line in completed.stdout.splitlines() if line.startswith(label + " ")]
            if not lines:
                raise RuntimeError("%s printed no %s time:\n%s\n%s" % (argv[0], label, completed.stdout[-2000:], completed.stderr[-2000:]))
            seconds = float(lines[-1].split()[1])
            best[label] = min(best.get(label, seconds), seconds)
    return [best[label] for label in labels]


def debug_info_facts(binary):
    """(MB of .debug_info, number of compilation units), from readelf."""
    sections = subprocess.run(["readelf", "-S", "-W", binary], stdout=subprocess.PIPE, text=True, check=True).stdout
    size = next(int(line.split()[line.split().index(".debug_info") + 4], 16) for line in sections.splitlines() if " .debug_info " in line)
    units = subprocess.run(["readelf", "--debug-dump=info", "--dwarf-depth=1", binary], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True).stdout.count("Compilation Unit @")
    return size / 2**20, units


def load_rows():
    rows = []
    for program, profile in LOAD_BINARIES:
        binary = build.fixture(program, profile)
        info_mb, units = debug_info_facts(binary)
        ours, ours_all = load_seconds([sys.executable, "-c", OUR_LOAD % os.path.join(REPO, "python"), binary], ("LOAD", "ALL"))
        [gdb] = load_seconds(["gdb", "-nx", "-batch", "-q", "-iex", "maint set dwarf synchronous on", "-ex", GDB_LOAD % binary])
        [lldb] = load_seconds([LLDB, "--no-lldbinit", "-b", "-o", LLDB_LOAD % binary])
        row = {
            "binary": program, "profile": profile, "size_mb": os.path.getsize(binary) / 2**20, "info_mb": info_mb, "units": units,
            "ours": ours, "ours_all": ours_all, "gdb": gdb, "lldb": lldb,
        }
        rows.append(row)
        print(format_load_row(row), flush=True)
    return rows


def format_load_row(row):
    return "| %s | %s | %.0f | %.1f | %d | %.3f | %.3f | %.3f | %.3f |" % (
        row["binary"], row["profile"], row["size_mb"], row["info_mb"], row["units"], row["ours"], row["ours_all"], row["gdb"],
        row["lldb"])


READS_HEADER = "| case | profile | binary MB | units read | of | DWARF read MB | of MB | cold s (nothing ahead) |"
READS_RULE = "|---|---|---:|---:|---:|---:|---:|---:|"
READ_CASES = [("many-tasks", "dev", ["10000"], "10,000 tasks"), ("many-tasks", "release", ["10000"], "10,000 tasks"),
              ("services-app", "dev", [], "services-app"), ("services-app", "release", [], "services-app")]


def read_rows(work):
    """What one command reads of the DWARF when nothing was loaded ahead of it
    (TOKIO_ASYNC_PRELOAD=0: no preload, no indexing behind the commands), in GDB, live."""
    rows = []
    for program, profile, args, label in READ_CASES:
        binary = build.fixture(program, profile)
        fixture = RunningFixture(binary, args[0] if args else "", work, extra_args=args[1:])
        try:
            ours = in_debugger("gdb", binary, fixture.pid, None, COMMAND, env={"TOKIO_ASYNC_PRELOAD": "0"})
        finally:
            fixture.stop()
        units, all_units, read, all_bytes = ours["units"]
        row = {"case": label, "profile": profile, "binary_mb": os.path.getsize(binary) / 2**20, "units": units,
               "all_units": all_units, "read_mb": read / 2**20, "all_mb": all_bytes / 2**20, "cold": ours["cold"]}
        rows.append(row)
        print(format_read_row(row), flush=True)
    return rows


def format_read_row(row):
    return "| %s | %s | %.0f | %d | %d | %.1f | %.1f | %.3f |" % (
        row["case"], row["profile"], row["binary_mb"], row["units"], row["all_units"], row["read_mb"], row["all_mb"], row["cold"])


def make_core(pid, path):
    subprocess.run(["gdb", "-nx", "-batch", "-q", "-p", str(pid), "-ex", "gcore " + path], check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def rows_for(program, profile, args, targets, work, label, command=COMMAND, pause=0.0):
    binary = build.fixture(program, profile)
    # The first argument is what RunningFixture calls the mode; services-app reads none.
    fixture = RunningFixture(binary, args[0] if args else "", work, extra_args=args[1:])
    core = os.path.join(work, "bench.core")
    rows = []
    try:
        if "core" in targets:
            make_core(fixture.pid, core)
        for debugger in ("gdb", "lldb"):
            for target in targets:
                pid, core_path = (fixture.pid, None) if target == "live" else (None, core)
                ours = in_debugger(debugger, binary, pid, core_path, command, pause=pause)
                if not ours["head"].startswith(("{", "wrote ")):
                    raise RuntimeError("%s %s: %s" % (debugger, target, ours["head"]))
                theirs = in_debugger(debugger, binary, pid, core_path, DEBUGGER_BT[debugger], with_script=False, pause=pause)
                row = {
                    "case": label,
                    "profile": profile,
                    "debugger": debugger if debugger == "gdb" else LLDB,
                    "target": target,
                    "cold": ours["cold"],
                    "warm": ours["warm"],
                    "rss_mb": ours["rss_delta"] / 2**20,
                    "bt": theirs["cold"],
                    "bt_warm": theirs["warm"],
                    "mb_out": output_size(ours["head"], ours["bytes"]),
                    "binary_mb": os.path.getsize(binary) / 2**20,
                    "pause": pause,
                }
                rows.append(row)
                print(format_row(row), flush=True)
    finally:
        fixture.stop()
        if os.path.exists(core):
            os.unlink(core)
    return rows


def output_size(head, printed):
    """MB of the report: printed, or as the `wrote … (JSON, N MB) to FILE` line says."""
    if head.startswith("wrote "):
        return float(head.split("(JSON, ")[1].split(" MB")[0]) * 1e6 / 2**20
    return printed / 2**20


HEADER = "| case | profile | debugger | target | cold s | warm s | RSS delta MB | output MB | bt s (first/again) | cold/bt | warm/bt |"
RULE = "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"


def format_row(row):
    return "| %s | %s | %s | %s | %.3f | %.3f | %.0f | %.1f | %.3f / %.3f | %.1f | %.1f |" % (
        row["case"], row["profile"], row["debugger"], row["target"], row["cold"], row["warm"], row["rss_mb"],
        row["mb_out"], row["bt"], row["bt_warm"], row["cold"] / max(row["bt"], 1e-9), row["warm"] / max(row["bt_warm"], 1e-9))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="only the 10,000-task rows")
    parser.add_argument("--load-only", action="store_true", help="only the load table")
    parser.add_argument("--write", metavar="FILE", help="also write the tables, dated, to FILE")
    options = parser.parse_args()
    subprocess.run(["make", "-s", "build"], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="tokio-async-bench-")
    rows, reads = [], []
    try:
        if not options.load_only:
            print(HEADER)
            print(RULE, flush=True)
            rows = command_rows(options, work)
            print()
            print(READS_HEADER)
            print(READS_RULE, flush=True)
            reads = read_rows(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(LOAD_HEADER)
    print(LOAD_RULE, flush=True)
    loads = load_rows()
    if options.write:
        write_results(options.write, rows, reads, loads)


def command_rows(options, work):
    """The command's rows: every case unless `--quick`."""
    rows = []
    for profile in ("dev", "release"):
        rows += rows_for("many-tasks", profile, ["10000"], ("live", "core"), work, "10,000 tasks")
    if options.quick:
        return rows
    report = os.path.join(work, "report.json")
    rows += rows_for("many-tasks", "release", ["100000"], ("live", "core"), work, "100,000 tasks, --output", TO_FILE % report)
    rows += rows_for("many-tasks", "release", ["20", "64"], ("live",), work, "64 workers, 20 tasks")
    services = rows_for("services-app", "dev", [], ("live", "core"), work, "services-app")
    # As a user would: the first command a moment after the debugger loaded the
    # program, by when the DWARF loaded ahead of it (both debuggers) is ready.
    services += rows_for("services-app", "dev", [], ("live", "core"), work, "services-app", pause=PAUSE)
    for row in services:
        row["case"] = "services-app (%.0f MB)%s" % (row["binary_mb"], ", first call after %g s" % PAUSE if row["pause"] else "")
    return rows + services


def write_results(path, rows, reads, loads):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, stdout=subprocess.PIPE, text=True).stdout.strip()
    kept = marked_sections(path)
    with open(path, "w") as out:
        out.write("# Benchmark results\n\n")
        out.write("`make bench` on %s, commit %s, %d cores (%s), %s.\n\n" % (
            datetime.date.today().isoformat(), commit, os.cpu_count() or 0, cpu, platform.release()))
        out.write("Columns: see bench/run.py. Times in seconds; `bt` is the debugger's own all-threads backtrace "
                  "(GDB `thread apply all bt`, LLDB `bt all`) on the same stop.\n\n")
        if rows:
            out.write(HEADER + "\n" + RULE + "\n")
            for row in rows:
                out.write(format_row(row) + "\n")
        if reads:
            out.write("\nWhat one command reads of the DWARF with nothing loaded ahead (TOKIO_ASYNC_PRELOAD=0), "
                      "GDB, live (see bench/run.py).\n\n")
            out.write(READS_HEADER + "\n" + READS_RULE + "\n")
            for row in reads:
                out.write(format_read_row(row) + "\n")
        out.write("\nLoading alone (see bench/run.py): seconds until a command can start (the unit directory and "
                  "a tokio unit), then until every unit is indexed, best of %d.\n\n" % LOAD_REPEATS)
        out.write(LOAD_HEADER + "\n" + LOAD_RULE + "\n")
        for row in loads:
            out.write(format_load_row(row) + "\n")
        for section in kept:
            out.write("\n" + section + "\n")


def marked_sections(path):
    """The sections other benchmarks wrote into `path` between their markers
    (`<!-- scale -->` ... `<!-- /scale -->`, `<!-- top -->` ...), kept when this one
    writes the file again."""
    try:
        with open(path) as results:
            text = results.read()
    except OSError:
        return []
    return [match.group(0) for match in re.finditer(r"(?s)<!-- (\w+) -->.*?<!-- /\1 -->", text)]


if __name__ == "__main__":
    sys.exit(main())
