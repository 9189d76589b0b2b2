"""`async tasks`, `async task N`, the filters and `--group`, on many-tasks: 10,000 tasks in
six shapes plus the task holding the shared Mutex. The fixture's manifest names each
shape's task ids (`shape.0` … `shape.5`, `task.holder`), so every selection and every
group is checked id for id."""

import json
import os
import re

import pytest
from support import build
from support.debuggers import capture
from support.markers import Markers
from support.paths import FIXTURES
from support.process import RunningFixture
from test_kernel_cores import without_clock

TASKS = 10_000
SOURCE = "many-tasks/src/main.rs"
MARKERS = Markers(os.path.join(FIXTURES, SOURCE))

# Each shape's tree, outermost first: (kind, function or type) per frame; branches follow
# their tree node in order.
SHAPES = {
    "shape.0": [("async_fn", "many_tasks::handle_request"), ("async_fn", "many_tasks::authorize"), ("async_fn", "many_tasks::query"), ("sleep", None)],
    "shape.1": [("async_fn", "many_tasks::handle_request"), ("async_fn", "many_tasks::authorize"), ("async_fn", "many_tasks::query"), ("oneshot_recv", None)],
    "shape.2": [("async_fn", "many_tasks::handle_request"), ("async_fn", "many_tasks::authorize"), ("async_fn", "many_tasks::query"), ("mutex_lock", None)],
    "shape.3": [("async_fn", "many_tasks::recv_or_timeout"), ("select", None), ("mpsc_recv", None), ("sleep", None)],
    "shape.4": [("async_fn", "many_tasks::worker"), ("join", None), ("sleep", None), ("sleep", None)],
    "shape.5": [("async_fn", "many_tasks::supervise"), ("join_handle", None)],
    "task.holder": [("async_fn", "many_tasks::hold_lock"), ("sleep", None)],
}

# (arguments, the manifest names whose tasks they select, how many of those: None for all)
FILTERS = [
    ("--waiting-on mutex_lock", ["shape.2"], None),
    ("--waiting-on sleep", ["shape.0", "shape.3", "shape.4", "task.holder"], None),
    ("--waiting-on join_handle", ["shape.5"], None),
    ("--name supervise", ["shape.5"], None),
    ("--name 'many_tasks::query$'", ["shape.0", "shape.1", "shape.2"], None),
    ("--name oneshot::Receiver", ["shape.1"], None),
    ("--state idle", list(SHAPES), None),
    ("--state running", [], None),
    ("--runtime 0x1", [], None),
    ("--limit 5", list(SHAPES), 5),
    # Combined filters intersect.
    ("--name 'many_tasks::query$' --waiting-on sleep", ["shape.0"], None),
    ("--name 'many_tasks::query$' --waiting-on sleep --limit 3", ["shape.0"], 3),
    ("--waiting-on sleep --state running", [], None),
]


def ids_of(manifest, name):
    return [int(task_id) for task_id in manifest["facts"][name].split(",")]


def shape_of(node, frames=None):
    frames = [] if frames is None else frames
    frames.append((node["kind"], node["function"] if node["kind"].startswith("async") else None))
    for child in node["children"]:
        shape_of(child, frames)
    return frames


def thousands(number):
    return "{:,}".format(number)


def group_header(ids):
    shown = ids if len(ids) <= 7 else ids[:6]
    # Ids as tokio prints them (they can be typed back), counts with separators.
    listed = ", ".join(str(i) for i in shown) + ("" if len(ids) <= 7 else ", … " + str(ids[-1]))
    noun = "1 task (id" if len(ids) == 1 else "%s tasks (ids" % thousands(len(ids))
    return "%s %s): idle" % (noun, listed)


def without_time_left(text):
    """A sleep's time left is measured at each command."""
    return re.sub(r"(Sleep|Timeout) until \S+", r"\1 until", text)


@pytest.fixture(scope="module")
def many_tasks(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("many-tasks")
    with RunningFixture(build.fixture("many-tasks", "dev"), str(TASKS), str(workdir)) as fixture:
        yield fixture


def test_views_groups_and_filters_of_10000_tasks(debugger, many_tasks, tmp_path):
    manifest = many_tasks.manifest
    by_name = {name: ids_of(manifest, name) for name in SHAPES}
    every_id = sorted(i for ids in by_name.values() for i in ids)
    assert len(every_id) == TASKS
    # One task of each shape for `async task N`.
    samples = [ids[len(ids) // 2] for ids in by_name.values()]
    task_file = tmp_path / "task.json"
    table_file = tmp_path / "tasks.txt"
    commands = [
        "async backtrace all --group --json",
        "async backtrace all --group",
        "async tasks",
        "async tasks --group",
        "async backtrace all --json",
        "async backtrace all",
    ]
    commands += ["async tasks --json %s" % arguments for arguments, _, _ in FILTERS]
    commands += ["async task %d --json" % task_id for task_id in samples]
    commands += ["async task %d" % task_id for task_id in samples]
    # An id as a count shows it (10,001) or as Rust writes it (10_001) is the same task.
    typed = max(samples)
    assert typed >= 1000
    commands += ["async task {:,} --json".format(typed), "async task {:_} --json".format(typed)]
    commands += ["async task %d --json --output %s" % (samples[0], task_file), "async tasks --output %s" % table_file]
    steps = [step for command in commands for step in capture(debugger, command)]
    run = debugger.run_steps(steps, pid=many_tasks.pid, timeout=600)
    sections = run.sections()
    assert len(sections) == len(commands), run.stdout[-3000:] + run.stderr
    outputs = dict(zip(commands, sections))
    assert "\x1b" not in run.stdout, "no colour when the output is no terminal"

    # --group, JSON: seven groups (six shapes and the holder), each exactly its ids.
    grouped = json.loads(outputs["async backtrace all --group --json"])
    groups = grouped["groups"]
    assert sum(group["count"] for group in groups) == TASKS
    assert sorted(tuple(group["tasks"]) for group in groups) == sorted(tuple(ids) for ids in by_name.values())
    for group in groups:
        [name] = [name for name, ids in by_name.items() if ids == group["tasks"]]
        assert group["count"] == len(group["tasks"])
        assert group["states"] == [{"state": "idle", "count": group["count"]}]
        assert shape_of(group["root"]) == SHAPES[name], name
    # Largest first; equal counts by their first id.
    assert [group["tasks"] for group in groups] == sorted(by_name.values(), key=lambda ids: (-len(ids), ids[0]))
    assert [task["id"] for task in grouped["tasks"]] == every_id

    # --group, text: each group once under its header, and the whole fits a screen.
    text = outputs["async backtrace all --group"]
    headers = [line for line in text.splitlines() if re.match(r"^[\d,]+ tasks? \(ids? ", line)]
    assert headers == [group_header(group["tasks"]) for group in groups]
    assert len(text.splitlines()) < 80
    supervisors = text.split(group_header(by_name["shape.5"]))[1].split("\n\n")[0].splitlines()
    assert supervisors[1].split() == ["#0", "async", "fn", "many_tasks::supervise", "at", "%s:%d" % (SOURCE, MARKERS.await_line("supervise")), "(await", "#0)"]

    # async tasks: every task once, one line each, in id order.
    table = outputs["async tasks"].splitlines()
    assert table[0].startswith("tokio 1.54.1: 1 runtime (MultiThread), 10,000 tasks")
    header = table[2]
    assert header.split() == ["ID", "STATE", "RUNTIME", "ROOT", "WAITING", "AT", "WAITING", "ON"]
    rows = table[3:]
    # Ids as tokio prints them, so that they can be typed back.
    assert [row.split()[0] for row in rows] == [str(i) for i in every_id]
    runtime = grouped["runtimes"][0]["address"]
    row_of = {int(row.split()[0]): row for row in rows}
    lock_waiter = by_name["shape.2"][0]
    assert row_of[lock_waiter].split()[1:6] == ["idle", runtime, "many_tasks::handle_request", "many_tasks::query", "at"]
    assert row_of[lock_waiter].split()[6] == "%s:%d" % (SOURCE, MARKERS.await_line("query_lock"))
    holder = by_name["task.holder"][0]
    assert row_of[holder].split()[3:7] == ["many_tasks::hold_lock", "many_tasks::hold_lock", "at", "%s:%d" % (SOURCE, MARKERS.await_line("hold_lock"))]
    assert re.search(r"waiting for Mutex 0x[0-9a-f]+ \(0 permits, %d waiters; held by task %d at %s:%d\)$" % (
        len(by_name["shape.2"]), by_name["task.holder"][0], SOURCE, MARKERS.await_line("hold_lock")), row_of[lock_waiter])
    supervisor = by_name["shape.5"][0]
    assert row_of[supervisor].endswith("JoinHandle -> task %d (idle)" % (supervisor - 1))
    # Columns line up: each row's ROOT starts under the header's.
    column = header.index("ROOT")
    assert all(row[column - 2:column] == "  " and row[column] != " " for row in rows)

    # async tasks --group: one line per group, then the count.
    group_table = outputs["async tasks --group"].splitlines()
    assert group_table[2].split() == ["TASKS", "STATE", "ROOT", "WAITING", "AT", "WAITING", "ON", "IDS"]
    assert [int(line.split()[0].replace(",", "")) for line in group_table[3:3 + len(groups)]] == [g["count"] for g in groups]
    assert group_table[-1] == "10,000 tasks in 7 groups"

    # Each filter selects exactly its tasks; combined filters intersect.
    for arguments, names, limit in FILTERS:
        selected = json.loads(outputs["async tasks --json %s" % arguments])
        expected = sorted(i for name in names for i in by_name[name])[:limit]
        assert [task["id"] for task in selected["tasks"]] == expected, arguments
        assert selected["runtimes"][0]["task_count"] == selected["runtimes"][0]["tasks_read"] == TASKS
    # async task N: exactly that task's entry in `async backtrace all`, in JSON and text.
    everything = json.loads(outputs["async backtrace all --json"])
    entries = {task["id"]: task for task in everything["tasks"]}
    # Only tokio_unstable builds record where a task was spawned (test_taskdump_oracle.py).
    assert not any("spawned_at" in task for task in everything["tasks"])
    all_text = without_time_left(outputs["async backtrace all"])
    for task_id in samples:
        alone = json.loads(outputs["async task %d --json" % task_id])
        assert without_clock(alone) == without_clock(entries[task_id])
        block = without_time_left(outputs["async task %d" % task_id])
        assert block.startswith("Task %d (idle)\n#0 " % task_id)
        assert "\n" + block in all_text
    for separated in ("{:,}".format(typed), "{:_}".format(typed)):
        assert without_clock(json.loads(outputs["async task %s --json" % separated])) == without_clock(entries[typed])
    assert without_clock(json.loads(task_file.read_text())) == without_clock(entries[samples[0]])
    assert outputs["async task %d --json --output %s" % (samples[0], task_file)].strip() == "wrote 1 task (JSON, %.1f MB) to %s" % (
        task_file.stat().st_size / 1e6, task_file)
    assert [int(row.split()[0]) for row in table_file.read_text().splitlines()[3:]] == every_id
    assert outputs["async tasks --output %s" % table_file].strip().startswith("wrote 10,000 tasks and 3 threads (text, ")


def test_filters_and_groups_in_text(debugger, many_tasks):
    """What a user reads when nothing matches, and the one-line errors of bad filters."""
    commands = [
        "async tasks --state running",
        "async task 999999",
        "async tasks --name '('",
        "async tasks --waiting-on nothing",
        "async task",
    ]
    steps = [step for command in commands for step in capture(debugger, command)]
    run = debugger.run_steps(steps, pid=many_tasks.pid, timeout=300)
    assert run.sections()[0].splitlines()[-1] == "No task matches."
    unknown_kind = [
        "tokio-async: --waiting-on: unknown kind \"nothing\"; kinds are the `kind` values of docs/schema.md, "
        "such as mutex_lock, sleep, io_readiness, mpsc_recv, join_handle",
    ]
    if debugger.name == "lldb":
        # LLDB 19 checks an option's value against the kinds it was given, in its own words.
        assert "error: Error setting option: waiting-on to nothing" in run.stdout + run.stderr
        unknown_kind = []
    assert run.error_lines() == [
        "tokio-async: no task 999999 among the 10000 tasks of this program (`async tasks` lists them)",
        "tokio-async: --name: bad regex \"(\": error: unclosed group",
    ] + unknown_kind + [
        "tokio-async: which task? usage: async task ID [full] [--json] [--output FILE]",
    ]
    assert run.traceback_free()


def lldb_completions(line):
    """An LLDB step printing what LLDB completes `line` to (its matches after the common part)."""
    return (
        "script m = lldb.SBStringList(); n = lldb.debugger.GetCommandInterpreter().HandleCompletion(%r, %d, 0, -1, m); "
        "print(sorted(set(m.GetStringAtIndex(i).strip() for i in range(1, m.GetSize()))))" % (line, len(line))
    )


def test_completion(debugger, many_tasks):
    ids = sorted(int(i) for name in SHAPES for i in many_tasks.manifest["facts"][name].split(","))
    ids_999 = sorted(str(i) for i in ids if str(i).startswith("999"))
    assert len(ids_999) == 11
    if debugger.name == "gdb":
        lines = ["async tasks --gr", "async tasks --state ", "async tasks --waiting-on mutex", "async task 999", "async ta",
                 "async backtrace a", "async task 5 f"]
        steps = [step for line in lines for step in capture(debugger, "complete " + line)]
        run = debugger.run_steps(steps, pid=many_tasks.pid)
        got = [section.splitlines() for section in run.sections()]
        assert got == [
            ["async tasks --group"],
            ["async tasks --state " + state for state in ("cancelled", "complete", "idle", "running", "scheduled")],
            ["async tasks --waiting-on mutex_lock"],
            ["async task " + task_id for task_id in ids_999],
            ["async task", "async tasks"],
            ["async backtrace all"],
            ["async task 5 full"],
        ]
        return
    lines = ["async ta", "async tasks --gr", "async tasks --state ", "async tasks --waiting-on mu", "async bt --na"]
    steps = [step for line in lines for step in capture(debugger, lldb_completions(line))]
    run = debugger.run_steps(steps, pid=many_tasks.pid)
    got = [section.strip() for section in run.sections()]
    assert got[0] == str(["task", "tasks"])
    if debugger.name == "lldb":
        # LLDB 19 completes the options of parsed commands, and their values; it has no
        # hook for a script to complete its own arguments (task ids), which LLDB 20 adds.
        assert got[1:] == [str(["--group"]), str(list(("cancelled", "complete", "idle", "running", "scheduled"))), str(["mutex_lock"]), str(["--name"])]
    else:
        # LLDB 14 has no parsed script commands: only the subcommands complete.
        assert got[1:] == [str([])] * 4


def pty_run(argv, timeout=120):
    """Runs `argv` with a terminal for its stdin, stdout and stderr; returns what it printed."""
    import pty
    import subprocess
    import time

    leader, follower = pty.openpty()
    process = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    output = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break  # the terminal closed: the debugger exited
        if not chunk:
            break
        output += chunk
    process.wait(timeout=max(1, deadline - time.monotonic()))
    os.close(leader)
    return output.decode(errors="replace")


def test_colour_follows_the_debuggers_own_styles(debugger, many_tasks):
    supervisor = int(many_tasks.manifest["facts"]["shape.5"].split(",")[0])
    line = "%s:%d" % (SOURCE, MARKERS.await_line("supervise"))
    commands = ["async task %d" % supervisor, "async task %d --json" % supervisor]
    if debugger.name == "gdb":
        # GDB styles only on a terminal, and not in batch mode: run it as a user would.
        from support.paths import GDB_SCRIPT

        argv = ["gdb", "-nx", "-q", "-ex", "set pagination off", "-ex", "source " + GDB_SCRIPT]
        argv += [arg for command in commands + ["set style enabled off"] + commands[:1] + ["detach", "quit"] for arg in ("-ex", command)]
        output = pty_run(argv + ["-p", str(many_tasks.pid)])
        # GDB's defaults: function yellow, file names green, metadata dim.
        styled = "#0 async fn \x1b[33mmany_tasks::supervise\x1b[0m  at \x1b[32m%s\x1b[0m  \x1b[2m(await #0)\x1b[0m" % line
        plain = "#0 async fn many_tasks::supervise  at %s  (await #0)" % line
        assert "Task %d (\x1b[2midle\x1b[0m)" % supervisor in output
        assert styled in output
        # After `set style enabled off` (the styled line is not plain), and in JSON, nothing is styled.
        assert plain in output
        json_line = [text for text in output.splitlines() if text.startswith('{"id"')]
        assert len(json_line) == 1 and "\x1b" not in json_line[0]
        return
    steps = ["settings set use-color true"] + [step for command in commands for step in capture(debugger, command)]
    run = debugger.run_steps(steps, pid=many_tasks.pid)
    text, as_json = run.sections()
    # LLDB's frame colours: file names cyan; state yellow; names bold.
    assert text.splitlines()[1] == "#0 async fn \x1b[1mmany_tasks::supervise\x1b[0m  at \x1b[36m%s\x1b[0m  \x1b[33m(await #0)\x1b[0m" % line
    assert "\x1b" not in as_json
