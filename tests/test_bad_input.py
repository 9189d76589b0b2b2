"""Bad input gets one clear line from `async backtrace`, in GDB and LLDB alike, and the
debugger keeps working (the next command still runs, no Python traceback)."""

import json
import os
import re
import shutil

import pytest
from support import build
from support.debuggers import Gdb, capture
from support.process import RunningFixture
from test_backtrace import assert_tasks

REBUILD_HINT = (
    '(stripped, or built with debug = "line-tables-only" or "limited"); rebuild with `debug = true` '
    "in its Cargo profile (for release: [profile.release] debug = true)"
)
ALIVE = "still-alive"


def assert_still_working(run):
    assert ALIVE + "\n" in run.stdout, run.stdout + run.stderr
    assert run.traceback_free(), run.stdout + run.stderr


def at_checkpoint(debugger, program, args=(), extra=()):
    steps = [debugger.break_at("tokio_async_checkpoint"), "run", "async backtrace all", *extra, debugger.echo(ALIVE)]
    return debugger.run_steps(steps, program=program, args=args)


def test_program_not_started(debugger):
    run = debugger.run_steps(["async backtrace", debugger.echo(ALIVE)], program=build.fixture("tokio-app", "dev"))
    attach = "gdb -p PID" if debugger.name == "gdb" else "lldb -p PID"
    assert run.error_lines() == [
        "tokio-async: the program is not running; start it (run) or attach (%s) or load a core first" % attach
    ]
    assert_still_working(run)


@pytest.mark.parametrize("profile", ["linetables", "limited"])
def test_no_dwarf_types(debugger, profile):
    """debug = "line-tables-only" and "limited": DWARF without types."""
    binary = build.fixture("tokio-app", profile)
    run = at_checkpoint(debugger, binary, ["breakpoint"])
    assert run.error_lines() == [
        "tokio-async: %s cannot be inspected: its DWARF has no type information %s" % (binary, REBUILD_HINT)
    ]
    assert_still_working(run)


def assert_no_debug_file_found(debugger, tmp_path, binary):
    """Attached to `binary`, which has no DWARF and no debug file where the debugger and
    the tool look: one line naming the system's build-id path."""
    with RunningFixture(binary, "hang", str(tmp_path)) as fixture:
        run = debugger.run_steps(["async bt all", debugger.echo(ALIVE)], pid=fixture.pid)
    looked = build.build_id_path("/usr/lib/debug", binary)
    assert run.error_lines() == [
        "tokio-async: %s cannot be inspected: it has no DWARF debug information %s; no separate debug file at %s"
        % (binary, REBUILD_HINT, looked)
    ]
    assert_still_working(run)


def test_stripped_binary_attached(debugger, tmp_path):
    assert_no_debug_file_found(debugger, tmp_path, build.stripped_fixture())


def test_not_a_tokio_program(debugger):
    binary = build.fixture("plain-app", "dev")
    run = at_checkpoint(debugger, binary)
    assert run.error_lines() == [
        "tokio-async: %s is not a tokio program: it has no tokio runtime in its DWARF" % binary
    ]
    assert_still_working(run)


def test_tokio_without_a_live_runtime(debugger):
    run = at_checkpoint(debugger, build.fixture("tokio-app", "dev"), ["no-runtime"])
    assert run.error_lines() == [
        "tokio-async: tokio is linked in, but no thread is inside a tokio runtime and no static keeps one "
        "(not started yet, or already shut down)"
    ]
    assert_still_working(run)


def test_unknown_argument(debugger):
    run = debugger.run_steps(["async bt everything", debugger.echo(ALIVE)], program=build.fixture("tokio-app", "dev"))
    assert run.error_lines() == [
        "tokio-async: unknown argument 'everything'; usage: async backtrace [all] [full] [--json] [--output FILE] [--group] [FILTERS]"
    ]
    assert_still_working(run)


def test_output_needs_a_file_name(debugger):
    run = debugger.run_steps(["async bt all --output", debugger.echo(ALIVE)], program=build.fixture("tokio-app", "dev"))
    if debugger.name == "lldb":
        # LLDB 19 parses the options of its parsed commands itself, and says so in its words.
        assert run.error_lines() == [] and "error: last option requires an argument" in run.stdout + run.stderr
    else:
        assert run.error_lines() == [
            "tokio-async: --output needs a file name; usage: async backtrace [all] [full] [--json] [--output FILE] [--group] [FILTERS]"
        ]
    assert_still_working(run)


# Runs inside the debugger: damages the stopped inferior (the test does, not the tool),
# then asks for the report again. `run_command` is each debugger's way to capture output.
CORRUPT_SCRIPT = r'''
import json
manifest = json.load(open(%(manifest)r))
before = json.loads(run_command("async bt all --json"))
by_id = {t["id"]: t for t in before["tasks"]}
level1 = int(by_id[manifest["tasks"]["level1"]]["address"], 16)
sleeper_env = int(by_id[manifest["tasks"]["sleeper"]]["root"]["address"], 16)
vtable_offset = field_offset("tokio::runtime::task::core::Header", "vtable")
state_offset = field_offset("tokio_app::sleeper::{async_fn_env#0}", "__state")
write_memory(level1 + vtable_offset, (16).to_bytes(8, "little"))
write_memory(sleeper_env + state_offset, bytes([238]))
print("@@level1 %%#x" %% level1)
print("@@after " + json.dumps(json.loads(run_command("async bt all --json"))))
print("@@text " + json.dumps(run_command("async bt all")))
'''

GDB_HELPERS = r'''
import gdb
def run_command(command):
    return gdb.execute(command, to_string=True)
def field_offset(type_name, field):
    return [f.bitpos // 8 for f in gdb.lookup_type(type_name).fields() if f.name == field][0]
def write_memory(address, data):
    gdb.selected_inferior().write_memory(address, data)
'''

# LLDB cannot lay out Rust enums (tech brief), so the LLDB variant gets its two field
# offsets from a GDB run over the same executable.
LLDB_HELPERS = r'''
import lldb
def run_command(command):
    result = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(command, result)
    return result.GetOutput()
OFFSETS = %(offsets)r
def field_offset(type_name, field):
    return OFFSETS[(type_name, field)]
def write_memory(address, data):
    error = lldb.SBError()
    lldb.debugger.GetSelectedTarget().GetProcess().WriteMemory(address, data, error)
    assert error.Success(), error
'''


# The (type, field) pairs the corruption script needs the offsets of.
CORRUPTED_FIELDS = [("tokio::runtime::task::core::Header", "vtable"), ("tokio_app::sleeper::{async_fn_env#0}", "__state")]


def gdb_field_offsets(binary, tmp_path, fields=CORRUPTED_FIELDS):
    """Field offsets GDB reads from the binary's DWARF (for the LLDB variant of the test),
    through the same helper the GDB variant uses, in one GDB run."""
    from support.debuggers import Gdb

    script = tmp_path / "offsets.py"
    script.write_text(GDB_HELPERS + "print('@@offsets', [field_offset(t, f) for t, f in %r])\n" % (fields,))
    run = Gdb().run_steps(["source %s" % script], program=binary)
    [line] = [line for line in run.stdout.splitlines() if line.startswith("@@offsets")]
    values = json.loads(line.split(" ", 1)[1])
    return dict(zip(fields, values))


def corruption_script(debugger, binary, tmp_path, body, fields=CORRUPTED_FIELDS):
    """A script file that runs `body` inside `debugger` with the helpers above, and the
    command that loads it."""
    script = tmp_path / "corrupt.py"
    if debugger.name == "gdb":
        script.write_text(GDB_HELPERS + body)
        return "source %s" % script
    script.write_text(LLDB_HELPERS % {"offsets": gdb_field_offsets(binary, tmp_path, fields)} + body)
    return "command script import %s" % script


def test_corrupt_and_unreadable_task_memory(debugger, tmp_path):
    binary = build.fixture("tokio-app", "dev")
    manifest = tmp_path / "manifest.json"
    load = corruption_script(debugger, binary, tmp_path, CORRUPT_SCRIPT % {"manifest": str(manifest)})
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run", load, debugger.echo(ALIVE)],
        program=binary,
        args=["breakpoint"],
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert_still_working(run)
    lines = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in run.stdout.splitlines() if line.startswith("@@")}
    level1_address = lines["@@level1"]
    report = json.loads(lines["@@after"])
    ids = json.loads(manifest.read_text())["tasks"]
    by_id = {task["id"]: task for task in report["tasks"]}
    # The task with the unreadable vtable is reported as an error; every other task prints.
    assert ids["level1"] not in by_id
    assert sorted(by_id) == sorted(ids[n] for n in ["sleeper", "notify_block", "closure_caller", "service", "runner", "child"])
    [error] = report["errors"]
    assert error["message"].endswith(
        "cannot follow the task at %s: vtable of task %s: cannot read 8 bytes at 0x10" % (level1_address, level1_address)
    )
    assert error["kind"] == "layout" and error["runtime"] == report["runtimes"][0]["address"], error
    # The line's parts: what was being read, outermost first, and what went wrong there.
    assert error["path"][0] == "runtime " + error["runtime"], error
    assert re.fullmatch(r"task list shard \d+", error["path"][1]), error
    assert error["path"][2:] == ["cannot follow the task at " + level1_address, "vtable of task " + level1_address], error
    assert error["cause"] == "cannot read 8 bytes at 0x10", error
    assert ": ".join(error["path"] + [error["cause"]]) == error["message"], error
    # The task with a corrupt state byte shows why, and nothing below it.
    sleeper = by_id[ids["sleeper"]]["root"]
    assert sleeper["function"] == "tokio_app::sleeper"
    assert sleeper["children"] == []
    assert sleeper["error"].endswith("has state 238, which no variant has (corrupt or freed memory?)")
    # The error names its path: the task, then the frame it could not decode.
    sleeper_address = by_id[ids["sleeper"]]["address"]
    assert sleeper["error"].startswith("task %d (%s) → tokio_app::sleeper: " % (ids["sleeper"], sleeper_address)), sleeper["error"]
    assert by_id[ids["service"]]["root"]["children"][0]["function"] == "tokio_app::Service::serve"
    text = json.loads(lines["@@text"])
    assert "has state 238, which no variant has" in text
    assert "error: runtime 0x" in text


# The newest task is the head of its task-list shard; older tasks of that shard are only
# reachable past it. With its vtable unreadable, they must be found from the list's tail.
HEAD_OF_SHARD_SCRIPT = r'''
import json
before = json.loads(run_command("async bt all --json"))
victim = max(before["tasks"], key=lambda task: task["id"])
address = int(victim["address"], 16)
write_memory(address + field_offset("tokio::runtime::task::core::Header", "vtable"), (16).to_bytes(8, "little"))
after = json.loads(run_command("async bt all --json"))
print("@@ids " + json.dumps([[t["id"] for t in before["tasks"]], victim["id"], [t["id"] for t in after["tasks"]], after["errors"]]))
'''


def test_an_unreadable_task_hides_no_other_task_of_its_list(debugger, tmp_path):
    binary = build.fixture("waits-app", "dev")
    fields = [("tokio::runtime::task::core::Header", "vtable")]
    load = corruption_script(debugger, binary, tmp_path, HEAD_OF_SHARD_SCRIPT, fields)
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run", load, debugger.echo(ALIVE)],
        program=binary,
        env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")},
    )
    assert_still_working(run)
    [line] = [line for line in run.stdout.splitlines() if line.startswith("@@ids ")]
    before, victim, after, errors = json.loads(line[len("@@ids "):])
    assert len(before) > 16  # more tasks than shards: some share a list with the victim
    assert sorted(after) == sorted(id_ for id_ in before if id_ != victim)
    assert len(errors) == 1 and "cannot read 8 bytes at 0x10" in errors[0]["message"]


def test_an_executable_replaced_or_deleted_after_the_program_started(debugger, tmp_path):
    """A deploy replaces the file a service runs: the debugger then loads the new file at
    the old path (LLDB), whose DWARF would misread the process unless it is the same build,
    or none at all (GDB, and LLDB once the file is gone). Each is one line naming the
    commands that load the running copy from /proc/PID/exe, and those give the whole report."""
    program = tmp_path / "tokio-app"
    shutil.copy(build.fixture("tokio-app", "dev"), program)

    def replace_with(source):
        shutil.copy(source, str(program) + ".new")
        os.replace(str(program) + ".new", program)

    with RunningFixture(str(program), "hang", str(tmp_path)) as fixture:
        pid = fixture.pid
        running = "%s (deleted)" % program
        if debugger.name == "gdb":
            load = ["file /proc/%d/exe" % pid]
            hint = "`file /proc/%d/exe`" % pid
        else:
            load = ["process detach", "target create /proc/%d/exe" % pid, "process attach -p %d" % pid]
            hint = "`process detach`, `target create /proc/%d/exe`, `process attach -p %d`" % (pid, pid)
        loaded_none = (
            "tokio-async: the program's executable, %s, was deleted or replaced after it started, and the debugger "
            "loaded none; load the one it runs: %s" % (running, hint)
        )
        replace_with(build.fixture("tokio-app", "dev"))
        same_build = debugger.run_steps(capture(debugger, "async bt all --json") + [debugger.echo(ALIVE)], pid=pid)
        replace_with(build.fixture("tokio-app", "release"))
        other_build = debugger.run_steps(["async bt all", debugger.echo(ALIVE)], pid=pid)
        os.unlink(program)
        deleted = debugger.run_steps(["async bt all", debugger.echo(ALIVE)], pid=pid)
        reloaded = debugger.run_steps(load + capture(debugger, "async bt all --json"), pid=pid)
    for run in (same_build, other_build):
        assert_still_working(run)
    if debugger.name == "gdb":
        assert same_build.error_lines() == other_build.error_lines() == [loaded_none]
    else:
        [report] = same_build.json_sections()
        assert_tasks(report, fixture.manifest, "hang")
        assert other_build.error_lines() == [
            "tokio-async: %s is not the file process %d runs (%s): it was replaced after the program started; "
            "load the one it runs: %s" % (program, pid, running, hint)
        ]
    if debugger.name == "lldb14":
        # LLDB 14 cannot attach to a process whose executable is gone, nor load it then.
        for run in (deleted, reloaded):
            assert "error: attach failed" in run.stdout + run.stderr and run.error_lines() == []
        return
    assert deleted.error_lines() == [loaded_none]
    assert_still_working(deleted)
    [report] = reloaded.json_sections()
    assert_tasks(report, fixture.manifest, "hang")


def test_gdb_in_non_stop_mode_with_threads_running(tmp_path):
    """GDB's non-stop mode stops only the thread that hit the breakpoint: the others go on
    changing tokio's state, so the command asks for them all to be stopped. (LLDB has no
    non-stop mode on Linux.)"""
    gdb = Gdb()
    steps = ["set non-stop on", gdb.break_at("tokio_async_checkpoint"), "run", "async backtrace all", gdb.echo(ALIVE)]
    run = gdb.run_steps(steps, program=build.fixture("tokio-app", "dev"), args=["breakpoint"],
                        env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")})
    [line] = run.error_lines()
    # The main thread (1) and the other worker run on; which worker hit the breakpoint varies.
    assert line in ["tokio-async: threads 1, %d are running (non-stop mode); stop every thread first (interrupt -a)" % other
                    for other in (2, 3)], line
    assert_still_working(run)
