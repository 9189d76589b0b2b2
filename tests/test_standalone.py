"""The `tokio-async` executable, without a debugger: `tokio-async PID` and `tokio-async
BINARY CORE` give GDB's JSON on every fixture stop, live and from a core, in debug and
release builds; the program it looked at runs on (after a look, after SIGINT in the middle
of a walk over 100,000 tasks, after a panic of ours); a process under GDB is refused in one
line; a batch of 20 cores gives 20 reports and a summary."""

import json
import os
import re
import signal
import subprocess
import time

import pytest
from support import build, expect, shapes
from support.debuggers import Gdb, capture
from support.paths import REPO
from support.process import RunningFixture
from test_backtrace import assert_tasks
from test_core_and_agreement import without_time_left

EXECUTABLE = os.path.join(REPO, "target", "release", "tokio-async")

# Every fixture stop the debugger tests use: (program, arguments).
STOPS = [
    ("tokio-app", ["breakpoint"]),
    ("tokio-app", ["breakpoint", "current_thread"]),
    ("tokio-app", ["breakpoint", "local_set_polled"]),
    ("waits-app", []),
    ("deadlock-app", []),
    ("services-app", []),
    ("io-app", []),
    ("many-tasks", ["120", "2"]),
]


def tokio_async(*arguments, env=None, timeout=120):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(
        [EXECUTABLE, *map(str, arguments)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=timeout, env=full_env, stdin=subprocess.DEVNULL,
    )


def status(pid, field):
    with open("/proc/%d/status" % pid) as lines:
        for line in lines:
            name, _, value = line.partition(":")
            if name == field:
                return value.strip()
    return None


def wait_for(condition, what, timeout=60.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(interval)
    raise AssertionError("timed out waiting for %s" % what)


def stopped(pid):
    """Stopped by a signal (SIGSTOP): `T`, not a tracer's `t`, in every thread."""
    threads = os.listdir("/proc/%d/task" % pid)
    return all(open("/proc/%d/task/%s/stat" % (pid, tid)).read().rsplit(")", 1)[1].split()[0] == "T" for tid in threads)


def one_json(run):
    assert run.returncode == 0, run.stderr
    assert run.stderr == "", run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module", params=["dev", "release"])
def profile(request):
    return request.param


@pytest.mark.parametrize("program, arguments", STOPS, ids=["-".join([program] + arguments) for program, arguments in STOPS])
def test_the_executable_gives_gdbs_json_live_and_from_a_core(tmp_path, profile, program, arguments):
    """The fixture stops itself at its checkpoint (SIGSTOP, where GDB's breakpoint would
    stop it); tokio-async reads it and leaves it stopped; GDB attaches to the same stop and
    writes a core of it; tokio-async and GDB each read the core."""
    binary = build.fixture(program, profile)
    core = tmp_path / "stop.core"
    with RunningFixture(binary, arguments[0] if arguments else "", str(tmp_path), extra_args=arguments[1:],
                        env={"FIXTURE_STOP_AT_CHECKPOINT": "1"}) as fixture:
        wait_for(lambda: stopped(fixture.pid), "the fixture to stop at its checkpoint")
        live = one_json(tokio_async(fixture.pid, "--json"))
        # A stopped program stays stopped, and is no longer traced. (A thread let go goes
        # back into the stop inside the kernel, running none of its own code: it may show
        # `R` for that instant.)
        wait_for(lambda: stopped(fixture.pid), "the fixture to be stopped again", timeout=5)
        assert status(fixture.pid, "TracerPid") == "0"
        gdb = Gdb()
        run = gdb.run_steps(capture(gdb, "async bt all --json") + ["gcore %s" % core], pid=fixture.pid)
        [gdb_live] = run.json_sections()
        # On a mismatch the same stop is read again with --verbose (where each thread's
        # stack ended unusually), for the failure to say whether the read repeats.
        again = None
        if without_time_left(live) != without_time_left(gdb_live):
            again = tokio_async(fixture.pid, "--json", "--verbose")
    why = "read again: %s\n%s" % (again.stderr, again.stdout[:3000]) if again else ""
    assert len(live["tasks"]) == len(gdb_live["tasks"]) > 0, why
    assert live["errors"] == [] and live["memory_source"] == "process", why
    assert without_time_left(live) == without_time_left(gdb_live), why
    # Byte for byte, memory_source included (both read the core file itself); the text
    # too, and what the other commands print. One GDB session reads the core for all.
    commands = [(["--json"], "async bt all --json"), (["tasks", "--group"], "async tasks --group"),
                (["waits"], "async waits"), (["backtrace", "all", "full"], "async backtrace all full")]
    steps = [step for _, command in commands for step in capture(gdb, command)]
    gdb_core = gdb.run_steps(steps, program=binary, core=str(core)).sections()
    assert len(gdb_core) == len(commands), gdb_core
    for (arguments, command), gdb_output in zip(commands, gdb_core):
        mine = tokio_async(binary, core, *arguments)
        assert mine.returncode == 0, mine.stderr
        assert mine.stdout == gdb_output, command
    assert json.loads(gdb_core[0])["memory_source"] == "core_file"


def blocked_opening(pid):
    """Whether process `pid` waits in `openat` (x86-64's system call 257)."""
    try:
        with open("/proc/%d/syscall" % pid) as syscall:
            return syscall.read().split()[0] == "257"
    except (OSError, IndexError):
        return False


def ticking_fixture(tmp_path, tasks):
    """many-tasks with its ticker task, which bumps a counter every 5 ms."""
    fixture = RunningFixture(build.fixture("many-tasks", "dev"), str(tasks), str(tmp_path), extra_args=["2"],
                             env={"FIXTURE_TICKER": "1"})
    address = int(fixture.manifest["facts"]["progress.address"], 16)

    def progress():
        with open("/proc/%d/mem" % fixture.pid, "rb") as memory:
            memory.seek(address)
            return int.from_bytes(memory.read(8), "little")

    return fixture, progress


def assert_runs_on(fixture, progress):
    """Not traced, not stopped, and its runtime makes progress."""
    assert status(fixture.pid, "TracerPid") == "0"
    assert status(fixture.pid, "State")[0] in "SR", status(fixture.pid, "State")
    before = progress()
    wait_for(lambda: progress() >= before + 10, "the ticker to tick 10 times", timeout=10)


def test_the_program_runs_on_after_a_look(tmp_path):
    fixture, progress = ticking_fixture(tmp_path, 10_000)
    with fixture:
        before = progress()
        run = tokio_async(fixture.pid, "tasks", "--json", "--verbose")
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        # 10,000 tasks and the ticker.
        assert len(report["tasks"]) == 10_001
        [verbose] = run.stderr.splitlines()
        assert verbose.startswith("tokio-async: process %d was stopped for " % fixture.pid), verbose
        # Stopped only while its memory was copied; read after it ran on.
        assert re.search(r"3 threads stopped in [\d.]+ ms, [\d.]+ MiB of memory copied \(packed into [\d.]+ MiB\) in [\d.]+ ms; "
                         r"then, while it ran on: unwound in [\d.]+ ms, 10,001 tasks read in ", verbose), verbose
        assert_runs_on(fixture, progress)
        assert progress() > before


def test_the_copy_of_the_memory_reads_as_the_stopped_process_does(tmp_path):
    """The default (stopped while its memory is copied, read after) and `--in-place` (read
    while stopped) give one report."""
    with RunningFixture(build.fixture("many-tasks", "dev"), "120", str(tmp_path), extra_args=["2"]) as fixture:
        reports = {}
        for how in ["", "--in-place"]:
            run = tokio_async(fixture.pid, "--json", "--verbose", *([how] if how else []))
            assert run.returncode == 0, run.stderr
            reports[how] = without_time_left(json.loads(run.stdout))
            assert ("MiB of memory copied" in run.stderr) == (how == ""), run.stderr
        assert len(reports[""]["tasks"]) == 120
        assert reports[""] == reports["--in-place"]
        refused = tokio_async(fixture.pid, "--in-place", "--nonblocking")
        assert refused.returncode == 2
        assert refused.stderr.splitlines()[0] == (
            "tokio-async: --nonblocking never stops the process; --in-place reads it stopped: one or the other"
            " (tokio-async --help)")


@pytest.mark.parametrize("how", ["copied", "in-place"])
@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_in_the_middle_of_a_walk_over_100000_tasks_lets_the_program_go(tmp_path, sent, how):
    fixture, progress = ticking_fixture(tmp_path, 100_000)
    with fixture:
        looking = subprocess.Popen([EXECUTABLE, str(fixture.pid), "--json", "--output", str(tmp_path / "all.json")]
                                   + (["--in-place"] if how == "in-place" else []),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Once it has stopped the program (it traces it), the walk comes next: while it is
        # stopped (in place), or once its memory is copied and the program let go. The walk of
        # 100,000 tasks takes a few tenths of a second: the signal comes early in it (sent at a
        # fixed time after the stop, it came after the walk once the walk got faster).
        wait_for(lambda: status(fixture.pid, "TracerPid") == str(looking.pid), "tokio-async to stop the program",
                 interval=0.001)
        if how == "copied":
            wait_for(lambda: status(fixture.pid, "TracerPid") == "0", "tokio-async to let the program go", interval=0.001)
        time.sleep(0.05)
        looking.send_signal(sent)
        out, err = looking.communicate(timeout=60)
        assert looking.returncode == 130, err
        [line] = err.splitlines()
        assert line.startswith("tokio-async: interrupted (Ctrl-C) after decoding "), line
        assert line.endswith("; process %d was let go and runs on" % fixture.pid), line
        decoded = int(line.split("after decoding ")[1].split(" tasks")[0].replace(",", ""))
        # Stopped when the signal came (it traced the program), and it never finished.
        assert 0 <= decoded < 100_001, "interrupted mid-walk"
        assert not (tmp_path / "all.json").exists()
        assert_runs_on(fixture, progress)


@pytest.mark.parametrize("where", ["stopped", "walk"])
def test_a_panic_of_ours_lets_the_program_go(tmp_path, where):
    """A panic while the program is stopped (outside the walk's guard: the stop is undone as
    the panic unwinds), or in the middle of the walk, ends in one line."""
    fixture, progress = ticking_fixture(tmp_path, 10_000)
    with fixture:
        run = tokio_async(fixture.pid, env={"TOKIO_ASYNC_TEST_PANIC": where})
        assert run.returncode == 70
        [line] = run.stderr.splitlines()
        assert line.startswith("tokio-async: internal error (a bug in tokio-async) at rust-core/src/cli.rs:"), line
        assert line.endswith("a panic injected for a test (TOKIO_ASYNC_TEST_PANIC=%s)" % where), line
        assert run.stdout == ""
        assert_runs_on(fixture, progress)


def test_a_command_that_fails_lets_the_program_go(tmp_path):
    fixture, progress = ticking_fixture(tmp_path, 1_000)
    with fixture:
        run = tokio_async(fixture.pid, "task", "99999999")
        # Known only once every task was read: the process was stopped, and let go.
        assert run.returncode == 2
        assert run.stderr.splitlines() == [
            "tokio-async: no task 99999999 among the 1001 tasks of this program (`tokio-async PID tasks` lists them)"]
        assert_runs_on(fixture, progress)


def test_a_process_in_a_container_and_one_whose_file_was_deleted(tmp_path):
    """A mount namespace of its own, where the file is not at its path here (read from
    /proc/PID/exe); a file deleted after the program started (a deploy)."""
    binary = build.fixture("tokio-app", "dev")
    inside = tmp_path / "container-root"
    inside.mkdir()
    script = 'mount --bind "${0%%/*}" %s && exec %s/"${0##*/}" "$@"' % (inside, inside)
    launcher = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
    with RunningFixture(binary, "hang", str(tmp_path), launcher=launcher) as fixture:
        assert not os.path.exists(inside / "tokio-app")
        report = one_json(tokio_async(fixture.pid, "--json"))
        assert_tasks(report, fixture.manifest, "hang")
    copy = tmp_path / "deployed" / "tokio-app"
    copy.parent.mkdir()
    copy.write_bytes(open(binary, "rb").read())
    os.chmod(copy, 0o755)
    with RunningFixture(str(copy), "hang", str(tmp_path)) as fixture:
        os.unlink(copy)
        report = one_json(tokio_async(fixture.pid, "--json"))
        assert_tasks(report, fixture.manifest, "hang")


def test_frames_without_call_frame_information_are_left_by_their_frame_records(tmp_path):
    """A build with frame pointers whose `.eh_frame` and `.eh_frame_hdr` are taken out: each
    thread is unwound through the program's own frames by their frame records (libc's
    frames by libc's CFI), `--verbose` says so thread by thread, live and of a core, and
    the report is whole."""
    built = build.dwarf5_fixture("tokio-app", "dev")
    binary = str(tmp_path / "tokio-app-without-cfi")
    subprocess.run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr", built, binary],
                   check=True)
    with RunningFixture(binary, "hang", str(tmp_path), core_dumps=True) as fixture:
        run = tokio_async(fixture.pid, "--json", "--verbose")
        assert run.returncode == 0, run.stderr
        report = json.loads(run.stdout)
        assert_tasks(report, fixture.manifest, "hang")
        [main] = [thread for thread in report["threads"] if thread["role"] == "block_on"]
        assert expect.chain(main["future"]) == expect.main_future_chain()
        noted = expect.frames_left_by_frame_records(run.stderr, "tokio-async: ")
        assert sorted(noted) == sorted(thread["tid"] for thread in report["threads"]), run.stderr
        assert all(count >= 10 for count in noted.values()), noted
        os.kill(fixture.pid, signal.SIGABRT)
        fixture.process.wait(timeout=60)
    core = tmp_path / "core"
    wait_for(lambda: core.exists() and core.stat().st_size > 0, "the kernel's core")
    run = tokio_async(binary, core, "--json", "--verbose")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert_tasks(report, fixture.manifest, "hang")
    noted = expect.frames_left_by_frame_records(run.stderr, "tokio-async: core %s: " % core)
    assert sorted(noted) == sorted(thread["tid"] for thread in report["threads"]), run.stderr
    # With its CFI, nothing is left by a frame record.
    (tmp_path / "with-cfi").mkdir()
    with RunningFixture(built, "hang", str(tmp_path / "with-cfi")) as fixture:
        run = tokio_async(fixture.pid, "--json", "--verbose")
        assert run.returncode == 0, run.stderr
        assert "frame pointer" not in run.stderr, run.stderr


def test_a_statically_linked_program(tmp_path):
    """glibc linked in (a static-pie): no ld.so, libc's CFI in the executable."""
    with RunningFixture(build.static_fixture(), "hang", str(tmp_path)) as fixture:
        report = one_json(tokio_async(fixture.pid, "--json"))
        assert_tasks(report, fixture.manifest, "hang")
        [main] = [thread for thread in report["threads"] if thread["role"] == "block_on"]
        assert expect.chain(main["future"]) == expect.main_future_chain()


def test_a_process_under_gdb_is_refused_in_one_line(tmp_path):
    fixture, progress = ticking_fixture(tmp_path, 100)
    with fixture:
        # GDB holds the program until the test says done, then detaches as it exits. (Killed,
        # it would leave the program in the SIGSTOP its attach sent.)
        done = tmp_path / "done"
        hold = "python import os, time\nwhile not os.path.exists(%r): time.sleep(0.05)\nend" % str(done)
        script = tmp_path / "hold.gdb"
        script.write_text(hold + "\n")
        gdb = subprocess.Popen(["gdb", "-nx", "-batch", "-x", str(script), "-p", str(fixture.pid)],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            # The tracer is set at the attach, the stop a moment later: GDB holds it stopped.
            wait_for(lambda: status(fixture.pid, "TracerPid") == str(gdb.pid)
                     and status(fixture.pid, "State").startswith("t"), "GDB to attach and stop the program")
            state = status(fixture.pid, "State")
            run = tokio_async(fixture.pid)
            assert run.returncode == 1
            assert run.stderr.splitlines() == [
                "tokio-async: process %d is already traced by process %d (gdb); a process has one tracer at a time: "
                "detach that one first, or, in that debugger, load tokio-async and run `async backtrace all`" % (fixture.pid, gdb.pid)
            ]
            # Untouched: still GDB's, still stopped by it.
            assert status(fixture.pid, "TracerPid") == str(gdb.pid)
            assert status(fixture.pid, "State") == state
        finally:
            done.write_text("")
            try:
                gdb.wait(timeout=60)
            except subprocess.TimeoutExpired:
                gdb.kill()
                gdb.wait()
        # GDB detached: the program goes on.
        wait_for(lambda: status(fixture.pid, "TracerPid") == "0", "GDB's tracing to end")
        assert_runs_on(fixture, progress)


def test_an_attach_the_kernel_refuses_names_the_cause(tmp_path):
    """Another user's process, without CAP_SYS_PTRACE (a copy of the executable anyone may
    run, as uid 65534)."""
    copy = tmp_path / "tokio-async"
    copy.write_bytes(open(EXECUTABLE, "rb").read())
    os.chmod(copy, 0o755)
    os.chmod(tmp_path, 0o755)
    with RunningFixture(build.fixture("tokio-app", "dev"), "hang", str(tmp_path)) as fixture:
        run = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(copy), str(fixture.pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        assert run.returncode == 1
        assert run.stderr.splitlines() == [
            "tokio-async: the kernel refuses to trace process %d: it runs as uid 0, tokio-async as uid 65534, without "
            "CAP_SYS_PTRACE; run tokio-async as that user or with sudo" % fixture.pid
        ]
        assert status(fixture.pid, "TracerPid") == "0"


# Also without parking_lot (in make test's own shape too): tokio then parks in std's
# Condvar, whose frames keep their CFA in rbp, which a thread read without stopping it does
# not give (only its pc and stack pointer), so the main thread's block_on is reached by
# searching its stack for the frame record.
@pytest.mark.parametrize("shape", sorted({shapes.selected().name, shapes.MINIMAL.name}))
def test_nonblocking_reads_without_stopping(tmp_path, shape):
    """Parked tasks read the same whether the program is stopped or not; it is never traced."""
    with RunningFixture(build.fixture("tokio-app", "dev", shape=shape), "hang", str(tmp_path)) as fixture:
        stopping = one_json(tokio_async(fixture.pid, "--json"))
        reading = tokio_async(fixture.pid, "--json", "--nonblocking", "--verbose")
        assert reading.returncode == 0, reading.stderr
        assert without_time_left(json.loads(reading.stdout)) == without_time_left(stopping)
        assert status(fixture.pid, "TracerPid") == "0"
        if shape == shapes.MINIMAL.name:
            main_thread = "tokio-async: thread %d: 1 frame, at 0x" % fixture.pid
            scanned = "was found by searching the stack for a frame record"
            assert any(line.startswith(main_thread) and scanned in line for line in reading.stderr.splitlines()), reading.stderr


def test_a_batch_of_20_cores_gives_20_reports_and_a_summary(tmp_path):
    """Twenty processes of one binary, each killed by SIGABRT into a kernel core."""
    binary = build.fixture("tokio-app", "release")
    cores, manifests = [], []
    for number in range(20):
        workdir = tmp_path / ("process-%02d" % number)
        workdir.mkdir()
        with RunningFixture(binary, "hang", str(workdir), core_dumps=True) as fixture:
            os.kill(fixture.pid, signal.SIGABRT)
            fixture.process.wait(timeout=60)
        core = workdir / "core"
        wait_for(lambda core=core: core.exists() and core.stat().st_size > 0, "the kernel's core")
        cores.append(core)
        manifests.append(fixture.manifest)
    not_a_core = tmp_path / "not-a-core"
    not_a_core.write_text("hello")
    reports = tmp_path / "reports"
    # Each core's name in the output dir is its file name: give them their own.
    named = []
    for number, core in enumerate(cores):
        link = tmp_path / ("core.%02d" % number)
        os.symlink(core, link)
        named.append(link)
    run = tokio_async(binary, *named, "--json", "--output-dir", reports, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    tasks = len(expect.task_chains("hang"))
    assert lines == ["%s: %d tasks, 0 deadlocks, 0 errors -> %s" % (core, tasks, reports / (core.name + ".json")) for core in named]
    assert sorted(os.listdir(reports)) == sorted(core.name + ".json" for core in named)
    for core, manifest in zip(named, manifests):
        report = json.load(open(reports / (core.name + ".json")))
        assert report["memory_source"] == "core_file"
        # Each report is its own process's: its task ids and trees, its main thread.
        assert_tasks(report, manifest, "hang")
        assert manifest["pid"] in {thread["tid"] for thread in report["threads"]}
    # A kernel core reads as GDB reads it, byte for byte.
    gdb = Gdb()
    run_gdb = gdb.run_steps(capture(gdb, "async bt all --json"), program=binary, core=str(cores[0]))
    assert [tokio_async(binary, cores[0], "--json").stdout] == run_gdb.sections()
    # A core of another build than the binary given is not read with the wrong DWARF.
    other = build.fixture("tokio-app", "dev")
    run = tokio_async(other, cores[0])
    assert run.returncode == 1
    assert run.stderr.splitlines() == [
        "tokio-async: core file %s was written by another build than %s (build id %s in the core, %s in the binary): "
        "give the binary the process ran" % (cores[0], other, build.build_id(binary), build.build_id(other))
    ]
    # A bad core among good ones: its line says why, the others are reported, and the
    # run fails.
    run = tokio_async(binary, named[0], not_a_core, "--json", "--output-dir", tmp_path / "mixed")
    assert run.returncode == 1
    assert run.stdout.splitlines()[0].startswith("%s: %d tasks" % (named[0], tasks))
    assert run.stdout.splitlines()[1].startswith("%s: error: core file %s: " % (not_a_core, not_a_core))


@pytest.mark.parametrize("layout", ["build-id", "debuglink"])
def test_a_separate_debug_file_is_found_as_gdb_finds_it(tmp_path, layout):
    """A stripped program whose DWARF is in a separate file: by build id under --debug-dir
    (as GDB's debug-file-directory), or by .gnu_debuglink next to it."""
    binary, debug_dir = build.separate_debug_fixture(layout)
    with RunningFixture(binary, "hang", str(tmp_path)) as fixture:
        arguments = [fixture.pid, "--json"] + (["--debug-dir", debug_dir] if debug_dir else [])
        report = one_json(tokio_async(*arguments))
        assert_tasks(report, fixture.manifest, "hang")
        assert report["errors"] == []
        if debug_dir:
            # Without the directory, the one line says where it looked.
            run = tokio_async(fixture.pid)
            assert run.returncode == 1 and len(run.stderr.splitlines()) == 1, run.stderr


def test_bad_input_gets_one_line(tmp_path):
    binary = build.fixture("tokio-app", "dev")
    not_a_core = tmp_path / "not-a-core"
    not_a_core.write_text("hello")
    for arguments, code, line in (
        (["999999999"], 1, "tokio-async: no process 999999999"),
        (["1", "bogus"], 2, "tokio-async: unknown command 'bogus': the commands are backtrace (bt), tasks, task, waits and diff "
                            "(tokio-async --help)"),
        (["1", "tasks", "--bad"], 2, "tokio-async: unknown argument '--bad'; usage: tasks [--json] [--output FILE] [--group] [FILTERS]"),
        ([binary, not_a_core], 1, "tokio-async: core file %s: not a core file (no ELF header)" % not_a_core),
        ([binary, not_a_core, not_a_core], 2, "tokio-async: several cores need --output-dir DIR (one report per core goes there) "
                                              "(tokio-async --help)"),
        ([binary, not_a_core, "diff", "--since", not_a_core], 2,
         "tokio-async: cannot read %s as a saved report (expected value at line 1 column 1); save one with "
         "`tokio-async PID tasks --json --output FILE`" % not_a_core),
        ([binary, not_a_core, "--nonblocking"], 2, "tokio-async: --nonblocking reads a live process, not a core (tokio-async --help)"),
    ):
        run = tokio_async(*arguments)
        assert (run.returncode, run.stderr.splitlines(), run.stdout) == (code, [line], ""), arguments


def test_nonblocking_on_a_program_changing_its_task_lists(tmp_path):
    """tokio-app `churn` spawns tasks that finish at once, forever: read without stopping it,
    the lists change under the walk. Each run gives a report (whatever moved is among its
    errors) or one line; never a crash."""
    with RunningFixture(build.fixture("tokio-app", "dev"), "churn", str(tmp_path)) as fixture:
        for _ in range(20):
            run = tokio_async(fixture.pid, "--json", "--nonblocking")
            assert run.returncode in (0, 1), run.stderr
            if run.returncode == 0:
                report = json.loads(run.stdout)
                assert report["runtimes"] and isinstance(report["errors"], list)
            else:
                assert len(run.stderr.splitlines()) == 1 and run.stderr.startswith("tokio-async: "), run.stderr
            assert status(fixture.pid, "TracerPid") == "0"


def test_stuck_for_counts_from_a_saved_report(tmp_path):
    """The executable keeps no stops between runs: --stuck-for counts from a report saved
    earlier (--since); every parked task is stuck, the ticker moved."""
    fixture, progress = ticking_fixture(tmp_path, 1_000)
    with fixture:
        saved = tmp_path / "stop1.json"
        assert tokio_async(fixture.pid, "tasks", "--json", "--output", saved).returncode == 0
        time.sleep(1.5)
        report = one_json(tokio_async(fixture.pid, "tasks", "--stuck-for", "1", "--since", saved, "--json"))
        ticker = int(fixture.manifest["facts"]["task.ticker"])
        every = [task["id"] for task in json.load(open(saved))["tasks"]]
        assert sorted(task["id"] for task in report["tasks"]) == sorted(set(every) - {ticker})
        # Without a saved report, one line says how, before the program is stopped.
        run = tokio_async(fixture.pid, "tasks", "--stuck-for", "1")
        assert (run.returncode, run.stderr.splitlines()) == (2, [
            "tokio-async: --stuck-for counts from an earlier stop, and tokio-async keeps none between runs: save one "
            "(tokio-async PID tasks --json --output stop1.json) and give it, --since stop1.json (tokio-async --help)"])
        assert_runs_on(fixture, progress)


@pytest.mark.parametrize("how", ["copied", "in-place"])
def test_the_program_is_let_go_before_the_report_is_written(tmp_path, how):
    """The program runs on while tokio-async is still busy writing (here: blocked opening a
    FIFO nobody reads yet): it was detached once its memory was copied (or, in place, its
    tasks read), not when tokio-async exits (the kernel lets a tracer's tracees go then
    anyway)."""
    fixture, progress = ticking_fixture(tmp_path, 1_000)
    with fixture:
        fifo = tmp_path / "report.fifo"
        os.mkfifo(fifo)
        looking = subprocess.Popen([EXECUTABLE, str(fixture.pid), "tasks", "--json", "--output", str(fifo)]
                                   + (["--in-place"] if how == "in-place" else []),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: blocked_opening(looking.pid), "tokio-async to open the FIFO")
            assert looking.poll() is None, "still writing its report"
            assert_runs_on(fixture, progress)
        finally:
            with open(fifo) as report:
                assert len(json.loads(report.read())["tasks"]) == 1_001
            looking.communicate(timeout=60)
        assert looking.returncode == 0
