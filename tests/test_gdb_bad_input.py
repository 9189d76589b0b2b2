"""Bad input gets one clear line from `async backtrace`, and GDB keeps working."""

import json
import os

import pytest

from support import build
from support.gdb import captured, run_gdb
from support.process import RunningFixture

REBUILD_HINT = (
    '(stripped, or built with debug = "line-tables-only" or "limited"); rebuild with `debug = true` '
    "in its Cargo profile (for release: [profile.release] debug = true)"
)


def error_lines(run):
    return [line for line in run.stderr.splitlines() if line.startswith("tokio-async:")]


def assert_still_working(run):
    """GDB went on to the next command after ours and printed no traceback."""
    assert "still-alive" in run.stdout
    assert "Traceback" not in run.stderr and "Traceback" not in run.stdout


def at_checkpoint(program, args=(), extra=()):
    return run_gdb(
        ["break tokio_async_checkpoint", "run", "async backtrace all", *extra, "echo still-alive\\n"],
        program=program,
        args=args,
    )


def test_program_not_started():
    run = run_gdb(["async backtrace", "echo still-alive\\n"], program=build.fixture("tokio-app", "dev"))
    assert error_lines(run) == [
        "tokio-async: the program is not running; start it (run) or attach (gdb -p PID) or load a core first"
    ]
    assert_still_working(run)


def test_no_dwarf_types_line_tables_only():
    binary = build.fixture("tokio-app", "linetables")
    run = at_checkpoint(binary, ["breakpoint"])
    assert error_lines(run) == [
        "tokio-async: %s cannot be inspected: its DWARF has no type information %s" % (binary, REBUILD_HINT)
    ]
    assert_still_working(run)


def test_stripped_binary_attached(tmp_path):
    binary = build.stripped_fixture()
    with RunningFixture(binary, "hang", str(tmp_path)) as fixture:
        run = run_gdb(["async bt all", "echo still-alive\\n"], pid=fixture.pid)
    assert error_lines(run) == [
        "tokio-async: %s cannot be inspected: it has no DWARF debug information %s" % (binary, REBUILD_HINT)
    ]
    assert_still_working(run)


def test_not_a_tokio_program():
    binary = build.fixture("plain-app", "dev")
    run = at_checkpoint(binary)
    assert error_lines(run) == ["tokio-async: %s is not a tokio program: it has no tokio runtime in its DWARF" % binary]
    assert_still_working(run)


def test_tokio_without_a_live_runtime():
    run = at_checkpoint(build.fixture("tokio-app", "dev"), ["no-runtime"])
    assert error_lines(run) == [
        "tokio-async: tokio is linked in, but no thread is inside a tokio runtime "
        "(not started yet, or already shut down)"
    ]
    assert_still_working(run)


def test_unknown_argument():
    run = at_checkpoint(build.fixture("tokio-app", "dev"), ["breakpoint"], extra=["async bt everything"])
    assert "tokio-async: unknown argument 'everything'; usage: async backtrace [all] [--json]" in error_lines(run)
    assert_still_working(run)


CORRUPT_SCRIPT = r'''
import gdb, json
manifest = json.load(open(%(manifest)r))
before = json.loads(gdb.execute("async bt all --json", to_string=True))
by_id = {t["id"]: t for t in before["tasks"]}
level1 = int(by_id[manifest["tasks"]["level1"]]["address"], 16)
sleeper_env = int(by_id[manifest["tasks"]["sleeper"]]["root"]["address"], 16)
header = gdb.lookup_type("tokio::runtime::task::core::Header")
vtable_offset = [f.bitpos // 8 for f in header.fields() if f.name == "vtable"][0]
env = gdb.lookup_type("tokio_app::sleeper::{async_fn_env#0}")
state_offset = [f.bitpos // 8 for f in env.fields() if f.name == "__state"][0]
# The test (not the tool) damages the inferior: an unreadable vtable and a bad state byte.
inferior = gdb.selected_inferior()
inferior.write_memory(level1 + vtable_offset, (16).to_bytes(8, "little"))
inferior.write_memory(sleeper_env + state_offset, bytes([238]))
print("@@level1 %%#x" %% level1)
print("@@after " + json.dumps(json.loads(gdb.execute("async bt all --json", to_string=True))))
text = gdb.execute("async bt all", to_string=True)
print("@@text " + json.dumps(text))
'''


def test_corrupt_and_unreadable_task_memory(tmp_path):
    manifest = tmp_path / "manifest.json"
    script = tmp_path / "corrupt.py"
    script.write_text(CORRUPT_SCRIPT % {"manifest": str(manifest)})
    run = run_gdb(
        ["break tokio_async_checkpoint", "run", "source %s" % script, "echo still-alive\\n"],
        program=build.fixture("tokio-app", "dev"),
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
    assert error.endswith(
        "cannot follow the task at %s: vtable of task %s: cannot read 8 bytes at 0x10" % (level1_address, level1_address)
    )
    # The task with a corrupt state byte shows why, and nothing below it.
    sleeper = by_id[ids["sleeper"]]["root"]
    assert sleeper["function"] == "tokio_app::sleeper"
    assert sleeper["children"] == []
    assert sleeper["error"].endswith("has state 238, which no variant has (corrupt or freed memory?)")
    assert by_id[ids["service"]]["root"]["children"][0]["function"] == "tokio_app::Service::serve"
    text = json.loads(lines["@@text"])
    assert "has state 238, which no variant has" in text
    assert "error: runtime 0x" in text
