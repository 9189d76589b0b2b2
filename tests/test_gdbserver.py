"""GDB on a remote target (`target remote` to gdbserver): GDB reads the program from the
target (`target:PATH`) and its memory through the protocol. The command reads the same
path here, and only when it holds the same build: otherwise one line says to copy it."""

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time

from support import build
from support.debuggers import Gdb, capture
from test_backtrace import assert_breakpoint_report
from test_bad_input import ALIVE, assert_still_working


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def gdbserver(program, manifest, launcher=()):
    """gdbserver running `program breakpoint` (in `launcher`'s mount namespace, if any),
    waiting for GDB on a local port."""
    port = free_port()
    server = subprocess.Popen(
        [*launcher, "gdbserver", "--once", "127.0.0.1:%d" % port, program, "breakpoint"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, FIXTURE_MANIFEST=str(manifest)),
    )
    try:
        deadline = time.monotonic() + 30
        for line in server.stdout:
            if "Listening on port" in line or time.monotonic() > deadline:
                break
        yield port
    finally:
        server.kill()
        server.wait(timeout=30)


def at_checkpoint(port, commands):
    gdb = Gdb()
    steps = ["target remote 127.0.0.1:%d" % port, gdb.break_at("tokio_async_checkpoint"), "continue"]
    return gdb.run_steps(steps + commands + [gdb.echo(ALIVE), "kill"])


def test_gdbserver_on_this_machine(tmp_path):
    manifest = tmp_path / "manifest.json"
    with gdbserver(build.fixture("tokio-app", "dev"), manifest) as port:
        run = at_checkpoint(port, capture(Gdb(), "async bt all --json"))
    [report] = run.json_sections()
    assert (report.pop("memory_source"), report.pop("stack_source")) == ("debugger", "debugger")
    assert_breakpoint_report(report, json.loads(manifest.read_text()), "dev")


def in_a_namespace_where(directory, holds):
    """A launcher whose mount namespace has `holds` (a directory) mounted at `directory`."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "%s" "%s" && exec "$@"' % (holds, directory), "sh"]


def test_a_target_whose_file_is_not_the_one_here(tmp_path):
    """Another build at the same path on the target (its own mount namespace here), and a
    target path that is nothing here: neither is read."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    program = here / "tokio-app"
    shutil.copy(build.fixture("tokio-app", "dev"), program)
    shutil.copy(build.fixture("tokio-app", "release"), there / "tokio-app")
    copy_it = "copy the target's file here and load it (file COPY), or set sysroot to a directory that mirrors the target"

    with gdbserver(str(program), tmp_path / "m1.json", in_a_namespace_where(here, there)) as port:
        other_build = at_checkpoint(port, ["async backtrace all"])
    [line] = other_build.error_lines()
    assert line.startswith("tokio-async: %s here is not the program the debugger read from the remote target (build id "
                           % program), line
    assert line.endswith(
        "%s here, %s there); %s" % (build.build_id(str(program)), build.build_id(str(there / "tokio-app")), copy_it)
    ), line
    assert_still_working(other_build)

    elsewhere = tmp_path / "elsewhere"  # empty here
    elsewhere.mkdir()
    with gdbserver(str(elsewhere / "tokio-app"), tmp_path / "m2.json", in_a_namespace_where(elsewhere, there)) as port:
        not_here = at_checkpoint(port, ["async backtrace all"])
    assert not_here.error_lines() == [
        "tokio-async: the debugger reads the program from the remote target (target:%s/tokio-app), which is not "
        "here; %s" % (elsewhere, copy_it)
    ]
    assert_still_working(not_here)
