"""A command stops when asked or when its budget is spent, and the debugger stays usable:
Ctrl-C (SIGINT to the debugger) in the middle of `async backtrace all` over 100,000 tasks
ends it within half a second in GDB and LLDB 19; `--max-nodes` and `--max-bytes` end it
with one line saying where, after listing the tasks decoded so far."""

import json
import os
import pty
import re
import select
import signal
import subprocess
import time

import pytest
from support import build
from support.debuggers import Lldb, capture
from support.paths import GDB_SCRIPT, LLDB_SCRIPT
from support.process import RunningFixture

TASKS = 100_000
class Terminal:
    """A debugger run as a user runs it: on a terminal, one command typed at a time."""

    def __init__(self, argv):
        self.leader, follower = pty.openpty()
        self.process = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
        os.close(follower)
        self.text = ""

    def read_until(self, pattern, timeout=120):
        """Output up to the first match of `pattern` after what was read before; its time."""
        deadline = time.monotonic() + timeout
        while True:
            match = re.search(pattern, self.text)
            if match:
                seen, self.text = self.text[: match.end()], self.text[match.end():]
                return seen, time.monotonic()
            ready, _, _ = select.select([self.leader], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise AssertionError("no %r within %ss; got %r" % (pattern, timeout, self.text[-2000:]))
            self.text += os.read(self.leader, 65536).decode(errors="replace")

    def type(self, line):
        os.write(self.leader, (line + "\n").encode())

    def until_it_listens(self, probe, answer, tries=10):
        """Types `probe` until `answer` comes back: a debugger may drop what is typed while
        it still sets up its terminal."""
        for _ in range(tries):
            self.type(probe)
            try:
                return self.read_until(answer, timeout=3)
            except AssertionError:
                continue
        raise AssertionError("the debugger never read what was typed: %r" % self.text[-2000:])

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        os.close(self.leader)


@pytest.fixture(scope="module")
def hundred_thousand_tasks(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("many-tasks")
    with RunningFixture(build.fixture("many-tasks", "release"), str(TASKS), str(workdir)) as fixture:
        yield fixture


@pytest.mark.parametrize("debugger_name", ["gdb", "lldb"])
def test_ctrl_c_stops_a_command_over_100000_tasks(debugger_name, hundred_thousand_tasks, tmp_path):
    output = tmp_path / "report.json"
    pid = str(hundred_thousand_tasks.pid)
    if debugger_name == "gdb":
        argv = ["gdb", "-nx", "-q", "-iex", "set pagination off", "-iex", "set confirm off", "-ex", "source " + GDB_SCRIPT, "-p", pid]
        prompt = r"\(gdb\) "
    else:
        # LLDB reads what is typed only once its startup commands are done: wait for the last.
        argv = [Lldb().executable, "--no-lldbinit", "-o", "command script import " + LLDB_SCRIPT, "-o", "script print('@@' + 'ready@@')", "-p", pid]
        prompt = r"\(lldb\) "
    terminal = Terminal(argv)
    try:
        if debugger_name == "lldb":
            terminal.read_until("@@ready@@")
            terminal.until_it_listens("script print('@@' + 'listening@@')", "@@listening@@")
        else:
            terminal.until_it_listens('echo @@listening@@\\n', "@@listening@@\r\n")
        terminal.read_until(prompt)
        # A first call loads the DWARF and walks the stacks: the second is all decoding.
        terminal.type("async tasks --output /dev/null")
        terminal.read_until(r"wrote 100,000 tasks")
        terminal.read_until(prompt)
        terminal.type("async backtrace all --json --output %s" % output)
        # Early in the decoding, which takes a few tenths of a second now (0.3 s came after it
        # once the command got faster).
        time.sleep(0.1)
        sent = time.monotonic()
        terminal.process.send_signal(signal.SIGINT)
        line, ended = terminal.read_until(r"tokio-async: interrupted \(Ctrl-C\) after decoding [0-9,]+ tasks")
        terminal.read_until(prompt)
        # The debugger goes on: the next command works.
        terminal.type("async tasks --limit 1")
        header, _ = terminal.read_until(r"tokio 1.54.1: 1 runtime \(MultiThread\), 1 of 100,000 tasks")
        terminal.read_until(prompt)
        terminal.type("process detach" if debugger_name == "lldb" else "detach")
        terminal.read_until(prompt)
        terminal.type("quit")
        terminal.process.wait(timeout=60)
    finally:
        terminal.close()
    assert ended - sent <= 0.5, ended - sent
    assert "Traceback" not in line + header
    # One line instead of the report, and nothing written.
    assert not output.exists()


def test_budgets_end_a_command_with_one_line(debugger, tmp_path):
    """600 tasks, a budget of 1,000 nodes: the tasks decoded before it ran out are listed,
    then one line says where it stopped; a budget of bytes the same."""
    with RunningFixture(build.fixture("many-tasks", "dev"), "600", str(tmp_path)) as fixture:
        commands = ["async tasks --json --max-nodes 1000", "async tasks --max-nodes 1000", "async tasks --json --max-bytes 50000"]
        run = debugger.run_steps([step for command in commands for step in capture(debugger, command)], pid=fixture.pid)
    by_nodes, text, by_bytes = run.sections()
    report = json.loads(by_nodes)
    assert len(report["errors"]) == 1, (report["errors"], len(report["tasks"]), run.stdout[-3000:])
    [error] = report["errors"]
    decoded = len(report["tasks"])
    assert 0 < decoded < 600
    runtime = report["runtimes"][0]["address"]
    assert error == {
        "kind": "budget",
        "message": "runtime %s: stopped after 1,000 nodes (the budget; --max-nodes N raises it) at task %d of 600 "
                   "(in memory order); the tasks before it are listed" % (runtime, decoded + 1),
        "runtime": runtime,
    }
    error = error["message"]
    assert text.splitlines()[0] == "tokio 1.54.1: 1 runtime (MultiThread), %d of 600 tasks" % decoded
    assert text.rstrip("\n").splitlines()[-1] == "error: " + error
    report = json.loads(by_bytes)
    [error] = report["errors"]
    assert "stopped after reading 50,000 bytes (the budget; --max-bytes N raises it)" in error["message"]
    assert len(report["tasks"]) < 600
    assert run.traceback_free()
