"""`tokio-async top`, driven in a real pseudo-terminal (pexpect) and read back as a
terminal shows it (pyte): the tasks view's header and rows on a fixture whose tasks are
parked, stuck times that grow for parked tasks and stay at zero for a task that moves, the
keys (sort, filter, group, the task view and its neighbours, resources, help, pause), a
resize, 10,000 tasks, a core as a still picture, `--since` a saved report, stranded tasks,
the runtime column where a worker runs a task; and every way out (q, Ctrl-C, SIGTERM) leaves
the program running and the terminal restored."""

import os
import re
import signal
import subprocess
import time

import pexpect
import pyte
import pytest
from support import build
from support.process import RunningFixture
from test_standalone import EXECUTABLE, assert_runs_on, stopped, ticking_fixture, wait_for

# Entering and leaving the alternate screen; hiding and showing the cursor.
ALTERNATE, MAIN = b"\x1b[?1049h", b"\x1b[?1049l"
HIDDEN, SHOWN = b"\x1b[?25l", b"\x1b[?25h"


def assert_restored(written):
    """The terminal left as it was found: back on the main screen, the cursor shown again
    if it was hidden."""
    assert written.rfind(MAIN) > written.rfind(ALTERNATE) >= 0, written[-300:]
    assert written.rfind(SHOWN) >= written.rfind(HIDDEN), written[-300:]


class Top:
    """`tokio-async top ARGS` in a pseudo-terminal of `rows` x `columns`."""

    def __init__(self, *arguments, rows=30, columns=150, colour=False, env=None):
        self.screen = pyte.Screen(columns, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.written = b""
        env = {name: value for name, value in dict(os.environ, **(env or {})).items() if name != "NO_COLOR"}
        if not colour:
            env["NO_COLOR"] = "1"
        self.child = pexpect.spawn(EXECUTABLE, ["top", *map(str, arguments)], dimensions=(rows, columns), env=env)

    def pump(self, seconds=0.2):
        """Reads what it draws for `seconds`, then until a frame is whole (no byte for
        30 ms), so that no check sees half a frame."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                data = self.child.read_nonblocking(1 << 16, timeout=0.03)
            except pexpect.TIMEOUT:
                if time.monotonic() >= deadline:
                    return
                continue
            except pexpect.EOF:
                return
            self.written += data
            self.stream.feed(data)

    def lines(self):
        return [line.rstrip() for line in self.screen.display]

    def text(self):
        return "\n".join(self.lines())

    def wait_for(self, condition, what, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.1)
            if condition(self):
                return
        raise AssertionError("timed out waiting for %s; the screen:\n%s" % (what, self.text()))

    def press(self, keys, until=None, what=None):
        self.child.send(keys)
        if until:
            self.wait_for(until, what or repr(keys))
        else:
            self.pump(0.5)

    def rows(self):
        """The table's rows, as {id: {title: cell}}, cut where the header's titles start
        (the runtime column comes and goes with what the refreshes saw)."""
        lines = self.lines()
        at = next((index for index, line in enumerate(lines) if line.startswith("ID")), None)
        if at is None:
            # Not drawn yet, or another view.
            return {}
        header = lines[at]
        # Titles are one or two words; columns are at least two blanks apart.
        starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", header)]
        bounds = list(zip(starts, starts[1:] + [len(header)]))
        titles = [header[start:end].strip().rstrip("▲▼") for start, end in bounds]
        table = {}
        for line in lines[at + 1:-1]:
            if not line.strip():
                break
            cells = [line[start:end].strip() for start, end in zip(starts, starts[1:] + [len(line)])]
            table[cells[0]] = dict(zip(titles[1:], cells[1:]))
        return table

    def quit_with(self, keys=None, sent=None):
        if keys:
            self.child.send(keys)
        if sent:
            self.child.kill(sent)
        self.pump(3.0)
        self.child.expect(pexpect.EOF, timeout=10)
        self.child.close()
        return self.child.exitstatus


# Where many-tasks' ticker task awaits its sleep.
TICK_LINE = 43


@pytest.fixture
def parked(tmp_path):
    """many-tasks with 12 tasks parked as the service shapes park, and a ticker task."""
    fixture, progress = ticking_fixture(tmp_path, 12)
    with fixture:
        yield fixture, progress


def refreshed_at_least(count):
    def condition(top):
        match = re.search(r"^#(\d+) ", top.lines()[2])
        return match is not None and int(match.group(1)) >= count
    return condition


def test_the_tasks_view_shows_each_parked_task_where_it_waits_and_on_what(parked):
    fixture, _ = parked
    top = Top(fixture.pid, "--interval", "0.3")
    top.wait_for(refreshed_at_least(2), "two refreshes")
    lines = top.lines()
    assert lines[0] == "tokio-async top · process %d · rt0 MultiThread: 13 tasks (%s)" % (
        fixture.pid, re.search(r"\((.*)\)$", lines[0]).group(1))
    assert re.fullmatch(r"rt0 MultiThread: 13 tasks \((13 idle|12 idle, 1 (scheduled|running))\)",
                        lines[0].split(" · ")[2]), lines[0]
    assert lines[1] == "deadlocks 0 · futurelocks 0 · stranded 0 · stuck ≥10s: 0"
    cost = re.fullmatch(r"#\d+ · stopped [\d.]+ ms \(read \d+ ms\) · every ([\d.]+) s, ([\d.]+)% stopped · sort ID▲",
                        lines[2])
    assert cost, lines[2]
    # Every 0.3 s as asked, or longer where a refresh's stop would take more than 1%.
    assert float(cost.group(1)) >= 0.3 and float(cost.group(2)) <= 1.0, lines[2]
    # The runtime column shows once a refresh found a worker running a task (the ticker).
    runtime = ["RT"] if "  RT  " in lines[3] else []
    assert re.split(r"\s{2,}", lines[3]) == ["ID▲", "STATE", *runtime, "ROOT", "WAITING AT", "WAITING ON", "STUCK",
                                            "BUSY"]
    rows = top.rows()
    assert sorted(rows, key=int) == [str(id) for id in range(3, 16)]
    if runtime:
        assert all(re.fullmatch(r"rt0( w\d+)?", cells["RT"]) for cells in rows.values()), rows
    shapes = {
        "3": ["idle", "hold_lock", "hold_lock main.rs:99", "Sleep until +"],
        "5": ["idle", "handle_request", "query main.rs:67", "Sleep until +"],
        "6": ["idle", "handle_request", "query main.rs:69", "recv on oneshot 0x"],
        "7": ["idle", "handle_request", "query main.rs:72", "waiting for Mutex 0x"],
        "8": ["idle", "recv_or_timeout", "recv_or_timeout main.rs:80", "select! of 2 (2 pending)"],
        "9": ["idle", "worker", "worker main.rs:91", "join! of 2 (2 pending)"],
        "10": ["idle", "supervise", "supervise main.rs:87", "JoinHandle -> task 9 (idle)"],
    }
    for id, (state, root, at, waits_on) in shapes.items():
        cells = rows[id]
        assert [cells["STATE"], cells["ROOT"], cells["WAITING AT"]] == [state, root, at], (id, cells)
        assert cells["WAITING ON"].startswith(waits_on), (id, cells)
        # Parked since before the first refresh: seen busy in none.
        assert cells["BUSY"] == "0%", (id, cells)
    assert top.quit_with("q") == 0


def test_stuck_grows_for_parked_tasks_and_stays_zero_for_a_task_that_moves(parked):
    fixture, _ = parked
    top = Top(fixture.pid, "--interval", "0.3")
    top.wait_for(refreshed_at_least(2), "two refreshes")
    first = top.rows()
    top.wait_for(lambda top: top.rows()["5"]["STUCK"] == "3s", "task 5 stuck for 3 s", timeout=20)
    later = top.rows()
    ticker = fixture.manifest["facts"]["task.ticker"]
    for id in ["3", "5", "7", "9"]:
        assert int(later[id]["STUCK"].rstrip("s")) > int(first[id]["STUCK"].rstrip("s")), (id, first[id], later[id])
    # The ticker sleeps 5 ms at a time: each refresh finds it changed.
    assert later[ticker]["STUCK"] == "0s", later[ticker]
    top.press("/tick\r", lambda top: list(top.rows()) == [ticker], "the ticker alone")
    top.press("\r", lambda top: "Last change, seen at refresh #" in top.text(), "the ticker's last change")
    # From one sleep to the next; or, where a refresh found the ticker running its body, from
    # or to the tree that ends at `tick` itself.
    side = r"(?:sleep \(deadline [\d.]+s\)|many_tasks::tick at many-tasks/src/main\.rs:%d|\(nothing\))" % TICK_LINE
    assert re.search(r"Last change, seen at refresh #\d+: %s -> %s" % (side, side), top.text()), top.text()
    assert re.fullmatch(r"\d+%", later[ticker]["BUSY"]), later[ticker]
    assert top.quit_with("q") == 0


def test_since_a_saved_report_parked_tasks_are_stuck_from_its_time(parked, tmp_path):
    """`--since REPORT.json`: the first refresh already counts a parked task stuck since
    the report was saved; the ticker, changed since, is not."""
    fixture, _ = parked
    saved = tmp_path / "before.json"
    written = subprocess.run([EXECUTABLE, str(fixture.pid), "--json", "--output", str(saved)], capture_output=True,
                             text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert written.returncode == 0, written.stderr
    time.sleep(4)
    top = Top(fixture.pid, "--interval", "0.3", "--since", saved)
    top.wait_for(refreshed_at_least(1), "a refresh")
    rows = top.rows()
    for id in ["3", "5", "7", "9"]:
        assert int(rows[id]["STUCK"].rstrip("s")) >= 4, (id, rows[id])
    assert rows[fixture.manifest["facts"]["task.ticker"]]["STUCK"] == "0s"
    assert top.quit_with("q") == 0


def test_keys_sort_filter_group_and_open_the_task_resources_and_help_views(parked):
    fixture, _ = parked
    top = Top(fixture.pid, "--interval", "0.3")
    top.wait_for(refreshed_at_least(1), "a refresh")
    ids = lambda top: list(top.rows())  # noqa: E731
    top.press("S", lambda top: ids(top)[0] == "15", "the ids reversed")
    assert "sort ID▼" in top.lines()[2]
    top.press("S", lambda top: ids(top)[0] == "3")
    # ID, STATE, the runtime where its column shows (a refresh found a worker running a
    # task), then ROOT.
    top.press("ss", lambda top: re.search(r"sort (RT|ROOT)▲", top.lines()[2]), "sorting on the next columns")
    if "sort RT▲" in top.lines()[2]:
        top.press("s", lambda top: "sort ROOT▲" in top.lines()[2], "sorting on the root")
    roots = [cells["ROOT"] for cells in top.rows().values()]
    assert roots == sorted(roots)
    top.press("/query\r", lambda top: "filter query" in top.lines()[2], "the filter")
    assert sorted(ids(top), key=int) == ["5", "6", "7", "11", "12", "13"]
    # `/` opens on the filter in use, to edit it.
    top.press("/" + "\x7f" * 20 + "--state sleepy\r", lambda top: "sleepy▏ " in top.lines()[-1], "the bad filter's one line")
    assert re.search(r"sleepy▏ .*sleepy", top.lines()[-1]), top.lines()[-1]
    top.press("\x7f" * 20 + "--waiting-on mutex_lock\r",
              lambda top: "filter --waiting-on mutex_lock" in top.lines()[2])
    assert sorted(ids(top), key=int) == ["7", "13"]
    top.press("/" + "\x7f" * 40 + "\r", lambda top: "filter" not in top.lines()[2], "the filter cleared")
    top.press("g", lambda top: "grouped" in top.lines()[2], "grouping")
    grouped = top.rows()
    assert [grouped["5×2"][title] for title in ["STATE", "ROOT", "WAITING AT"]] == [
        "2 idle", "handle_request", "query main.rs:67"], grouped
    assert grouped["8×2"]["ROOT"] == "recv_or_timeout", grouped
    top.press("g", lambda top: "grouped" not in top.lines()[2])
    # Task 7 waits on the Mutex task 3 holds: its tree with its locals, and both neighbours.
    top.press("/--waiting-on mutex_lock\r", lambda top: ids(top)[:1] == ["7"])
    # The tasks view's refreshes read no locals: the task view has them read at once.
    top.press("\r", lambda top: "Task 7 (idle)" in top.text() and "Locals:" not in top.text(), "the task view")
    text = top.text()
    assert "#2 async fn many_tasks::query" in text
    assert "wait: many_tasks::Wait" in text
    assert "Waits for: task 3" in text
    assert "Waited on by: nobody" in text
    # Its neighbours are chosen with Tab and opened with Enter; Esc goes back to it.
    top.press("\t", lambda top: "Waits for: [task 3]" in top.text(), "the holder chosen")
    top.press("\r", lambda top: "Task 3 (idle)" in top.text(), "the holder's view")
    assert re.search(r"Waited on by: task 7, task 13\s+│", top.text()), top.text()
    top.press("\x1b[Z", lambda top: "Waited on by: task 7, [task 13]" in top.text(), "the last neighbour chosen")
    top.press("\x1b", lambda top: "Task 7 (idle)" in top.text(), "back to task 7")
    assert re.search(r"Unchanged for \d+s", text)
    assert "Last change: none seen" in text
    top.press("\x1b", lambda top: "Task 7 (idle)" not in top.text())
    top.press("r", lambda top: top.lines()[3].startswith("KIND"), "the resources view")
    mutex = [line for line in top.lines() if line.startswith("mutex")]
    assert len(mutex) == 1 and re.fullmatch(r"mutex\s+0x[0-9a-f]+\s+0 of 1 free, 2 queued\s+task 3\s+2\s+task 7 \+1", mutex[0]), mutex
    # The most waited on first; each JoinHandle's task; the timers last: ten sleeps (the
    # holder's, the ticker's, two queries', two select!s' and two join!s' pairs).
    kinds = [line.split()[0] for line in top.lines()[4:] if line.strip() and not line.startswith("q quit")]
    assert kinds == ["mutex", "mpsc", "mpsc", "oneshot", "oneshot", "task", "timer"], kinds
    assert any(re.fullmatch(r"task\s+0x[0-9a-f]+\s+idle\s+task 9\s+1\s+task 10", line) for line in top.lines())
    assert any(re.fullmatch(r"mpsc\s+0x[0-9a-f]+\s+0 queued, 1 sender\s+.*", line) for line in top.lines()), top.text()
    assert any(re.fullmatch(r"timer\s+-\s+next in \d+s\s+-\s+10\s+-", line) for line in top.lines()), top.text()
    top.press("?", lambda top: "keys (Esc closes)" in top.text(), "the help")
    assert "pause refreshing" in top.text()
    # It closes onto the view it was opened on.
    top.press("\x1b", lambda top: "keys (Esc closes)" not in top.text())
    assert top.lines()[3].startswith("KIND"), top.text()
    top.press("t", lambda top: top.lines()[3].startswith("ID"), "the tasks again")
    top.press("p", lambda top: "paused (p)" in top.lines()[2], "pausing")
    paused_at = top.lines()[2].split(" · ")[0]
    top.pump(1.0)
    assert top.lines()[2].split(" · ")[0] == paused_at
    assert top.quit_with("q") == 0


def test_nonblocking_never_stops_the_program(parked):
    fixture, progress = parked
    top = Top(fixture.pid, "--interval", "0.3", "--nonblocking")
    top.wait_for(refreshed_at_least(2), "two refreshes")
    assert re.fullmatch(r"#\d+ · not stopped \(read \d+ ms\) · every 0\.3 s, 0\.00% stopped · sort ID▲",
                        top.lines()[2]), top.lines()[2]
    assert top.rows()["10"]["WAITING ON"] == "JoinHandle -> task 9 (idle)"
    assert top.quit_with("q") == 0
    assert_runs_on(fixture, progress)


def test_colours_follow_the_debuggers_and_no_color_turns_them_off(parked):
    fixture, _ = parked
    # Yellow functions and green files (pyte names ANSI yellow and green by their RGB).
    for colour, (function, file) in [(True, ("cdcd00", "00cd00")), (False, ("default", "default"))]:
        top = Top(fixture.pid, "--interval", "0.3", colour=colour)
        top.wait_for(lambda top: "10" in top.rows(), "task 10's row")
        row = next(y for y, line in enumerate(top.lines()) if line.startswith("10 "))
        header = top.lines()[3]
        cells = top.screen.buffer[row]
        assert cells[header.index("ROOT")].fg == function, colour
        assert cells[header.index("WAITING AT")].fg == file, colour
        assert top.quit_with("q") == 0


def test_a_resize_redraws_the_screen_to_its_new_size(parked):
    fixture, _ = parked
    top = Top(fixture.pid, "--interval", "0.3", rows=24, columns=80)
    top.wait_for(lambda top: refreshed_at_least(1)(top) and top.lines()[23].startswith("q quit"),
                 "a refresh, the footer on the last of 24 lines")
    top.child.setwinsize(40, 120)
    top.screen.resize(40, 120)
    top.wait_for(lambda top: top.lines()[39].startswith("q quit") and "WAITING ON" in top.lines()[3],
                 "the footer on the last of 40 lines")
    assert len(top.rows()) == 13
    assert top.quit_with("q") == 0


@pytest.mark.parametrize("how", ["q", "ctrl-c", "SIGTERM", "SIGHUP"])
def test_every_way_out_leaves_the_program_running_and_the_terminal_restored(parked, how):
    fixture, progress = parked
    top = Top(fixture.pid, "--interval", "0.2")
    top.wait_for(refreshed_at_least(2), "two refreshes")
    keys = {"q": "q", "ctrl-c": "\x03"}.get(how)
    sent = {"SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP}.get(how)
    status = top.quit_with(keys, sent)
    assert status == 0, (how, top.written[-400:])
    assert_restored(top.written)
    assert_runs_on(fixture, progress)


def test_a_panic_while_the_program_is_stopped_lets_it_go_and_restores_the_terminal(parked):
    """A panic of ours while a refresh has the program stopped ends top in one line (exit
    70): the stop is undone as it unwinds, and the terminal restored."""
    fixture, progress = parked
    top = Top(fixture.pid, "--interval", "0.3", env={"TOKIO_ASYNC_TEST_PANIC": "stopped"})
    top.child.expect(pexpect.EOF, timeout=30)
    top.written += top.child.before
    top.child.close()
    assert top.child.exitstatus == 70, top.written[-400:]
    assert b"tokio-async: " in top.written and b"a panic injected for a test" in top.written
    assert_restored(top.written)
    assert_runs_on(fixture, progress)


def test_10000_tasks_scroll_from_the_first_to_the_last(tmp_path):
    fixture, _ = ticking_fixture(tmp_path, 10_000)
    with fixture:
        top = Top(fixture.pid, rows=24, columns=100)
        top.wait_for(refreshed_at_least(1), "a refresh of 10,001 tasks", timeout=60)
        assert "rt0 MultiThread: 10,001 tasks" in top.lines()[0]
        assert list(top.rows())[0] == "3"
        top.press("\x1b[F", lambda top: int(list(top.rows())[-1]) > 10_000, "the last task")
        top.press("\x1b[H", lambda top: list(top.rows())[0] == "3", "the first again")
        top.press("\x1b[6~", lambda top: "23" in top.rows(), "a page down")
        assert top.quit_with("q") == 0


def test_a_core_opens_as_a_still_picture(tmp_path):
    fixture, _ = ticking_fixture(tmp_path, 12)
    with fixture:
        prefix = str(tmp_path / "core")
        subprocess.run(["gcore", "-o", prefix, str(fixture.pid)], check=True, capture_output=True, timeout=120)
    core = "%s.%d" % (prefix, fixture.pid)
    top = Top(build.fixture("many-tasks", "dev"), core, columns=240)
    top.wait_for(lambda top: refreshed_at_least(1)(top) and "10" in top.rows(), "the core's one refresh")
    lines = top.lines()
    assert lines[0].startswith("tokio-async top · core %s · rt0 MultiThread: 13 tasks" % core), lines[0]
    assert re.fullmatch(r"#1 · not stopped \(read \d+ ms\) · a still picture · sort ID▲", lines[2]), lines[2]
    assert top.rows()["10"]["WAITING ON"] == "JoinHandle -> task 9 (idle)"
    top.pump(1.5)
    assert top.lines()[2].startswith("#1 ")
    assert top.quit_with("q") == 0


def test_a_task_a_worker_runs_shows_the_runtime_column_and_the_worker(tmp_path):
    """tokio-app stopped at its checkpoint, where a worker runs the runner task: the RT
    column shows, the runner's cell names its worker, every other task's only the runtime."""
    with RunningFixture(build.fixture("tokio-app", "dev"), "breakpoint", str(tmp_path),
                        env={"FIXTURE_STOP_AT_CHECKPOINT": "1"}) as fixture:
        wait_for(lambda: stopped(fixture.pid), "the fixture to stop at its checkpoint")
        runner = str(fixture.manifest["tasks"]["runner"])
        top = Top(fixture.pid, "--interval", "0.3")
        top.wait_for(refreshed_at_least(2), "two refreshes")
        assert re.split(r"\s{2,}", top.lines()[3]) == ["ID▲", "STATE", "RT", "ROOT", "WAITING AT", "WAITING ON",
                                                     "STUCK", "BUSY"], top.text()
        rows = top.rows()
        assert re.fullmatch(r"rt0 w[01]", rows[runner]["RT"]) and rows[runner]["STATE"] == "running", rows[runner]
        assert {cells["RT"] for id, cells in rows.items() if id != runner} == {"rt0"}, rows
        assert top.quit_with("q") == 0


def test_stranded_tasks_are_warned_of_in_the_header_the_task_and_the_resources(tmp_path):
    """deadlock-app at its checkpoint: `forgotten_waiter` waits on a Mutex whose guard was
    forgotten, `behind_forgotten` awaits it, `behind_deadlock` waits for a deadlocked task."""
    with RunningFixture(build.fixture("deadlock-app", "dev"), "", str(tmp_path),
                        env={"FIXTURE_STOP_AT_CHECKPOINT": "1"}) as fixture:
        wait_for(lambda: stopped(fixture.pid), "the fixture to stop at its checkpoint")
        facts = fixture.manifest["facts"]
        task = {name[len("task."):]: int(value) for name, value in facts.items() if name.startswith("task.")}
        lock = facts["address.forgotten_lock"]
        top = Top(fixture.pid, "--interval", "0.3", columns=200)
        top.wait_for(refreshed_at_least(1), "a refresh")
        assert top.lines()[1] == "deadlocks 3 · futurelocks 1 · stranded 3 · stuck ≥10s: 0", top.text()
        waiter = task["forgotten_waiter"]
        top.press("/--waiting-on mutex_lock\r", lambda top: "filter" in top.lines()[2], "the filter")
        ids = list(top.rows())
        top.press("\x1b[B" * ids.index(str(waiter)) + "\r", lambda top: "Task %d (idle)" % waiter in top.text(), "the task view")
        assert ("Stranded: task %d waits on Mutex %s, which no task or thread holds (a guard forgotten, or kept "
                "outside every task)" % (waiter, lock)) in top.text()
        top.press("\x1b", lambda top: "Task %d (idle)" % waiter not in top.text())
        top.press("r", lambda top: top.lines()[3].startswith("KIND"), "the resources view")
        [row] = [line for line in top.lines() if line.startswith("mutex") and lock in line]
        assert re.fullmatch(r"mutex\s+%s\s+0 of 1 free, 1 queued\s+no task or thread\s+1\s+task %d" % (lock, waiter), row), row
        assert top.quit_with("q") == 0


def test_top_refuses_what_it_cannot_show_in_one_line(tmp_path):
    def top(*arguments):
        return subprocess.run([EXECUTABLE, "top", *arguments], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    for arguments, message in [
        (["1", "--interval", "0"], "tokio-async: --interval needs seconds, 0.1 or more (tokio-async --help)"),
        (["999999999"], "tokio-async: no process 999999999"),
        (["1", "--name", "x"], "tokio-async: top takes no command nor filter (--name): filter with / once it runs"
                               " (tokio-async --help)"),
        (["1", "--verbose"], "tokio-async: top says what each refresh stopped the program for in its header: no"
                             " --verbose (tokio-async --help)"),
    ]:
        run = top(*arguments)
        assert run.returncode != 0 and run.stderr.splitlines() == [message], (arguments, run.stderr)
    fixture, _ = ticking_fixture(tmp_path, 12)
    with fixture:
        run = top(str(fixture.pid))
        assert run.returncode == 2
        assert run.stderr.splitlines() == [
            "tokio-async: top draws on a terminal; for a report, leave out `top` (tokio-async --help)"]
