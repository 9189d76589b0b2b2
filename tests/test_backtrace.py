"""`async backtrace` in real GDB and LLDB against the tokio-app fixture: run to a
breakpoint, attach to a running process, dev and release builds. Asserts exact task ids,
function chains, await points and lines, thread roles and the running task."""

import json
import os
import re
import subprocess

import pytest
from support import build, debuggers, expect
from support.debuggers import capture
from support.markers import Markers
from support.process import RunningFixture

PROFILES = ["dev", "release"]


def run_to_checkpoint(debugger, tmp_path, profile, commands, flavor="multi_thread", program=None):
    """Each command's run (captured) at tokio-app's checkpoint, and the manifest."""
    manifest = tmp_path / "manifest.json"
    steps = [debugger.break_at("tokio_async_checkpoint"), "run"]
    for command in commands:
        steps += capture(debugger, command)
    run = debugger.run_steps(
        steps,
        program=program or build.fixture("tokio-app", profile),
        args=["breakpoint", flavor],
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert manifest.exists(), run.stdout + run.stderr
    return run, json.loads(manifest.read_text())


def assert_tasks(report, manifest, mode):
    ids = manifest["tasks"]
    by_id = {task["id"]: task for task in report["tasks"]}
    expected = expect.task_chains(mode)
    # Every live task is listed, and nothing else; the finished one is gone.
    assert sorted(by_id) == sorted(ids[name] for name in expected)
    assert ids["finished"] not in by_id
    states = expect.task_states(mode)
    for name, chain in expected.items():
        task = by_id[ids[name]]
        assert "error" not in task, task
        assert expect.chain(task["root"]) == chain, name
        assert task["state"] == states[name], name
        assert task["address"].startswith("0x")


def threads_by_role(report):
    roles = {}
    for thread in report["threads"]:
        roles.setdefault(thread["role"], []).append(thread)
    return roles


def assert_breakpoint_report(report, manifest, profile, thread_names=True):
    assert report["version"] == 2
    assert_tasks(report, manifest, "breakpoint")
    roles = threads_by_role(report)
    assert sorted(roles) == ["block_on", "worker"]
    workers = roles["worker"]
    assert sorted(w["worker"] for w in workers) == [0, 1]
    running = [w for w in workers if w["current_task"] is not None]
    assert [w["current_task"] for w in running] == [manifest["tasks"]["runner"]]
    assert expect.chain(running[0]["future"]) == expect.task_chains("breakpoint")["runner"]
    assert running[0]["future"]["running"] is True
    idle = [w for w in workers if w["current_task"] is None]
    assert len(idle) == 1 and idle[0]["future"] is None
    # Why the child task has not run: it waits in the running worker's LIFO slot.
    assert running[0]["state"] == "running"
    assert running[0]["queue"] == {"lifo_slot": manifest["tasks"]["child"], "local": []}
    # The other worker has nothing queued; it parks (or is caught on its way there). The
    # spawn that filled the LIFO slot wakes it: caught between parks, its core is on its
    # stack, not in its context, so it is idle with no queue to read.
    assert idle[0]["state"] in ("parked", "searching", "idle")
    if idle[0]["queue"] is None:
        assert idle[0]["state"] == "idle"
    else:
        assert idle[0]["queue"] == {"lifo_slot": None, "local": []}
    assert [runtime["inject"] for runtime in report["runtimes"]] == [[]]
    assert report["errors"] == []
    [main] = roles["block_on"]
    assert main["tid"] == manifest["pid"]
    if thread_names:
        assert main["name"] == "tokio-app"
        assert all(w["name"] == "tokio-rt-worker" for w in workers)
    # Release builds keep no location for block_on's pinned future: found on its stack.
    assert expect.chain(main["future"]) == expect.main_future_chain()
    assert "error" not in main or main["error"] is None
    assert report["errors"] == []
    assert [r["flavor"] for r in report["runtimes"]] == ["MultiThread"]


@pytest.mark.parametrize("profile", PROFILES)
def test_breakpoint_run_reports_every_task_and_the_running_one(debugger, tmp_path, profile):
    run, manifest = run_to_checkpoint(debugger, tmp_path, profile, ["async backtrace all --json"])
    [report] = run.json_sections()
    assert_breakpoint_report(report, manifest, profile)
    # Saved locals are read only with `full` (they cost a third of the time over many tasks).
    assert '"locals":' not in json.dumps(report)


@pytest.mark.parametrize("profile", PROFILES)
def test_attach_to_a_hanging_process(debugger, tmp_path, profile):
    binary = build.fixture("tokio-app", profile)
    with RunningFixture(binary, "hang", str(tmp_path)) as fixture:
        run = debugger.run_steps(capture(debugger, "async bt all --json"), pid=fixture.pid)
        sections = run.json_sections()
    assert len(sections) == 1, run.stdout + run.stderr
    report = sections[0]
    assert_tasks(report, fixture.manifest, "hang")
    roles = threads_by_role(report)
    assert sorted(w["worker"] for w in roles["worker"]) == [0, 1]
    assert all(w["current_task"] is None and w["future"] is None for w in roles["worker"])
    [main] = roles["block_on"]
    assert main["tid"] == fixture.pid
    assert expect.chain(main["future"]) == expect.main_future_chain()


def test_attach_to_a_process_in_a_container(debugger, tmp_path):
    """A process in a mount namespace of its own (a container) runs a file that is not at
    its path here. GDB reads it through the target (`target:PATH`), and so does the command,
    from /proc/PID/exe; LLDB 19 loads none, and the line names the commands that load it;
    LLDB 14 cannot attach to such a process."""
    binary = build.fixture("tokio-app", "dev")
    inside = tmp_path / "container-root"  # empty here; the fixture's directory in there
    inside.mkdir()
    # sh -c SCRIPT BINARY MODE: $0 is the binary as seen here, run from where it is in there.
    script = 'mount --bind "${0%%/*}" %s && exec %s/"${0##*/}" "$@"' % (inside, inside)
    launcher = ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]
    with RunningFixture(binary, "hang", str(tmp_path), launcher=launcher) as fixture:
        pid = fixture.pid
        first = debugger.run_steps(capture(debugger, "async bt all --json"), pid=pid)
        if debugger.name == "lldb":
            load = ["process detach", "target create /proc/%d/exe" % pid, "process attach -p %d" % pid]
            reloaded = debugger.run_steps(load + capture(debugger, "async bt all --json"), pid=pid)
    assert not os.path.exists(inside / "tokio-app")
    if debugger.name == "lldb14":
        assert "error: attach failed" in first.stdout + first.stderr and first.error_lines() == []
        return
    if debugger.name == "lldb":
        assert first.error_lines() == [
            "tokio-async: the debugger loaded no executable for process %d, which runs %s/tokio-app (a file of "
            "another mount namespace, as in a container, or one it could not open); load the one it runs: "
            "`process detach`, `target create /proc/%d/exe`, `process attach -p %d`" % (pid, inside, pid, pid)
        ]
        first = reloaded
    [report] = first.json_sections()
    assert_tasks(report, fixture.manifest, "hang")
    [main] = threads_by_role(report)["block_on"]
    assert expect.chain(main["future"]) == expect.main_future_chain()


def test_a_statically_linked_program(debugger, tmp_path):
    """glibc linked in (a static-pie): no ld.so, and thread-locals from the executable's own
    TLS segment. LLDB 14, which has no fs_base, needs glibc's thread list, and a static
    glibc keeps no descriptors for debuggers to read it by: one line says so."""
    run, manifest = run_to_checkpoint(debugger, tmp_path, "dev", ["async bt all --json"], program=build.static_fixture())
    if debugger.name == "lldb14":
        assert run.error_lines() == [
            "tokio-async: this LLDB (lldb version 14.0.6) gives no fs_base register, and reading glibc's thread "
            "list failed: glibc is linked statically, and keeps no _thread_db_* descriptors to read its thread "
            "list by"
        ]
        return
    [report] = run.json_sections()
    assert_breakpoint_report(report, manifest, "dev")


def test_verbose_says_how_the_core_unwound_each_stack(debugger, tmp_path):
    """`--verbose` first says what the executable's `--verbose` says of the unwinds: with
    the program's call frame information taken out, each thread's frames left by frame
    records; with it, one line saying every stack unwound by it to its outermost frame."""
    built = build.dwarf5_fixture("tokio-app", "dev")
    without_cfi = str(tmp_path / "tokio-app-without-cfi")
    subprocess.run(["objcopy", "--remove-section", ".eh_frame", "--remove-section", ".eh_frame_hdr", built, without_cfi],
                   check=True)
    saved = tmp_path / "report.json"
    for binary, work in [(without_cfi, tmp_path / "without"), (built, tmp_path / "with")]:
        work.mkdir()
        with RunningFixture(binary, "hang", str(work)) as fixture:
            command = "async bt all -v --json --output %s" % saved if binary == without_cfi else "async tasks --verbose"
            run = debugger.run_steps(capture(debugger, command), pid=fixture.pid)
        assert run.traceback_free(), run.stdout + run.stderr
        [output] = run.sections()
        lines = output.splitlines()
        if binary == without_cfi:
            report = json.loads(saved.read_text())
            assert_tasks(report, fixture.manifest, "hang")
            noted = expect.frames_left_by_frame_records(output, "tokio-async: ")
            assert sorted(noted) == sorted(thread["tid"] for thread in report["threads"]), output
            assert all(count >= 10 for count in noted.values()), noted
            # The notes, each naming its thread, then the one line of --output.
            assert all(line.startswith("tokio-async: thread ") for line in lines[:-1]), output
            assert re.fullmatch(r"wrote 7 tasks and 3 threads \(JSON, [\d.]+ MB\) to %s" % re.escape(str(saved)),
                                lines[-1]), output
        else:
            assert lines[0] == "tokio-async: each stack was unwound by its call frame information to its outermost frame"
            assert lines[1] == "tokio 1.54.1: 1 runtime (MultiThread), 7 tasks", output


def test_without_all_only_running_tasks_are_listed(debugger, tmp_path):
    run, manifest = run_to_checkpoint(debugger, tmp_path, "dev", ["async bt --json"])
    [report] = run.json_sections()
    assert [task["id"] for task in report["tasks"]] == [manifest["tasks"]["runner"]]
    assert len(report["threads"]) == 3


def squeeze(text):
    return [re.sub(r"\s+", " ", line).strip() for line in text.strip().splitlines()]


def test_text_output_reads_like_bt(debugger, tmp_path):
    run, manifest = run_to_checkpoint(debugger, tmp_path, "dev", ["async backtrace all"])
    [text] = run.sections()
    lines = squeeze(text)
    m = Markers()
    ids = manifest["tasks"]
    src = "tokio-app/src/main.rs"
    level1 = lines.index("Task %d (idle)" % ids["level1"])
    assert lines[level1 + 1 : level1 + 4] == [
        "#0 async fn tokio_app::level1 at %s:%d (await #0)" % (src, m.await_line("level1")),
        "#1 async fn tokio_app::level2 at %s:%d (await #1)" % (src, m.await_line("level2")),
        "#2 async fn tokio_app::level3 at %s:%d (await #0)" % (src, m.await_line("level3")),
    ]
    # The main thread's block_on future keeps the sender, in the Vec `keep_senders`.
    assert re.fullmatch(
        r"#3 recv on oneshot 0x[0-9a-f]+ \(nothing sent; sender held by thread %d at %s:%d\)" % (manifest["pid"], src, m.await_line("app_main")),
        lines[level1 + 4],
    ), lines[level1 + 4]
    child = lines.index("Task %d (scheduled)" % ids["child"])
    assert lines[child + 1] == "#0 async fn tokio_app::child_task at %s:%d (not started)" % (src, m.fns["child_task"])
    runner = lines.index("Task %d (running)" % ids["runner"])
    assert lines[runner + 1] == "#0 async fn tokio_app::runner at %s:%d (running)" % (src, m.running["runner"])
    assert "Thread %d \"tokio-app\": block_on" % manifest["pid"] in lines
    worker = r'Thread \d+ "tokio-rt-worker": worker [01], '
    assert any(re.fullmatch(worker + "running task %d" % ids["runner"], line) for line in lines)
    assert any(re.fullmatch(worker + "(parked|searching for work|idle)", line) for line in lines)
    running_worker = next(i for i, line in enumerate(lines) if re.fullmatch(worker + "running task %d" % ids["runner"], line))
    assert lines[running_worker + 1] == "queued: task %d next (LIFO slot)" % ids["child"]


def test_help(debugger):
    run = debugger.run_steps(
        capture(debugger, "help async") + capture(debugger, "help async backtrace")
        + capture(debugger, "help async tasks") + capture(debugger, "help async task") + capture(debugger, "help async waits")
    )
    help_async, help_backtrace, help_tasks, help_task, help_waits = (" ".join(section.split()) for section in run.sections())
    assert help_waits.startswith("Print who waits for whom: each lock, semaphore, channel, Notify and JoinHandle")
    assert "Async backtraces of the tokio tasks in the program being debugged." in help_async
    assert help_backtrace.startswith(
        "Print each tokio thread's current future and await stack; `all` adds every task, "
        "`full` the locals kept across each await, `--json` prints JSON; `--output FILE` writes the report to "
        "FILE and prints one line; `--group` prints tasks of the same shape once. FILTERS select tasks (they imply "
        "`all`): --name REGEX, --state STATE, --waiting-on KIND, --runtime ADDRESS, --limit N, --stuck-for SECONDS."
    )
    assert help_tasks.startswith("List the tokio tasks, one line each: id, state, runtime, root, the deepest frame in your code")
    assert help_task.startswith("Print one task's whole async backtrace, as `async backtrace all` prints it")
    # Each command's options are listed in its help, in every debugger.
    for option in ("--json", "--output", "--group", "--name", "--state", "--waiting-on", "--runtime", "--limit"):
        assert option in help_backtrace and option in help_tasks
    assert "--group" not in help_task and "--output" in help_task


def test_output_to_a_file(debugger, tmp_path):
    """`--output FILE` writes what the command would print, and prints one line instead."""
    json_file, text_file = tmp_path / "report.json", tmp_path / "report.txt"
    run, manifest = run_to_checkpoint(debugger, tmp_path, "dev", [
        "async backtrace all --json",
        "async backtrace all --json --output %s" % json_file,
        "async backtrace all",
        "async backtrace all -o %s" % text_file,
        "async backtrace all --output /nonexistent/dir/report.txt",
    ])
    printed_json, json_line, printed_text, text_line, failure = run.sections()
    tasks, threads = len(json.loads(printed_json)["tasks"]), len(json.loads(printed_json)["threads"])
    assert tasks == len(expect.task_chains("breakpoint")) and threads >= 3
    def size(path):
        return "%.1f MB" % (path.stat().st_size / 1e6)
    assert json_line.strip() == "wrote %d tasks and %d threads (JSON, %s) to %s" % (tasks, threads, size(json_file), json_file)
    assert text_line.strip() == "wrote %d tasks and %d threads (text, %s) to %s" % (tasks, threads, size(text_file), text_file)
    # The same stop, so the same report (a sleep's time left moves on between the calls).
    def moving(text):
        return re.sub(r"(\+|\"remaining_secs\": ?)[0-9.]+", r"\1<s>", text)
    assert moving(json_file.read_text()) == moving(printed_json)
    # LLDB drops the blank line that ends the printed text.
    assert moving(text_file.read_text()).rstrip("\n") == moving(printed_text).rstrip("\n")
    assert run.error_lines() == ["tokio-async: cannot write /nonexistent/dir/report.txt: No such file or directory (os error 2)"]
    assert not failure.strip() and run.traceback_free()


def test_a_new_stop_is_walked_again(debugger, tmp_path):
    """A second command on the same stop reuses the first's walk of the stacks; after the
    program runs to another stop, the stacks are read again."""
    source = build.FIXTURES + "/tokio-app/src/main.rs"
    spawn_line = next(number for number, line in enumerate(open(source), 1) if "let child = tokio::spawn(child_task());" in line)
    first_stop = "break main.rs:%d" % spawn_line if debugger.name == "gdb" else "breakpoint set --file main.rs --line %d" % spawn_line
    steps = [first_stop, debugger.break_at("tokio_async_checkpoint"), "run"]
    steps += capture(debugger, "async bt --json") + capture(debugger, "async bt --json")
    steps += ["continue"] + capture(debugger, "async bt --json")
    run = debugger.run_steps(
        steps, program=build.fixture("tokio-app", "dev"), args=["breakpoint", "multi_thread"],
        env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")},
    )
    first, again, second = run.json_sections()

    def running_line(report):
        [thread] = [thread for thread in report["threads"] if thread["state"] == "running"]
        return thread["future"]["location"]["line"]

    assert running_line(first) == running_line(again) == spawn_line
    assert running_line(second) == Markers().running["runner"]


# Runs in the debugger: what was loaded ahead of any command, as (path, outcome kind).
PRELOADS = (
    "import tokio_async_glue.commands as c; "
    "print('PRELOADS', c.preload_outcomes())"
)


@pytest.mark.parametrize("program,expected", [("tokio-app", "[('tokio-app', 'ok')]"), ("plain-app", "[('plain-app', 'not_tokio')]")])
def test_dwarf_is_loaded_when_gdb_loads_the_program(tmp_path, program, expected):
    """Sourced first (as from ~/.gdbinit), the script starts indexing a tokio program's
    DWARF when GDB loads it, and skips other programs; TOKIO_ASYNC_PRELOAD=0 turns it off."""
    from support.debuggers import Gdb

    binary = build.fixture(program, "dev")
    for env, loaded in (({}, expected), ({"TOKIO_ASYNC_PRELOAD": "0"}, "[]")):
        run = Gdb().run_steps(["python " + PRELOADS, "file " + binary, "python " + PRELOADS], env=env)
        assert [line for line in run.stdout.splitlines() if line.startswith("PRELOADS")] == ["PRELOADS []", "PRELOADS " + loaded], run.stderr


# In LLDB the load starts on a thread listening for module loads: wait up to 3 s for it.
LLDB_PRELOADS = (
    "import time, tokio_async_glue.commands as c; "
    "[time.sleep(0.05) for _ in range(60) if not c._preloads]; " + PRELOADS.split("; ", 1)[1]
)


@pytest.mark.parametrize("lldb", [debuggers.Lldb(), debuggers.LLDB_14], ids=["lldb", "lldb14"])
@pytest.mark.parametrize("program,expected", [("tokio-app", "[('tokio-app', 'ok')]"), ("plain-app", "[('plain-app', 'not_tokio')]")])
def test_dwarf_is_loaded_when_lldb_loads_the_program(lldb, program, expected):
    """Imported first (as from ~/.lldbinit), the script starts indexing a tokio program's
    DWARF when LLDB loads its modules, and skips other programs; TOKIO_ASYNC_PRELOAD=0
    turns it off."""
    binary = build.fixture(program, "dev")
    for env, loaded in (({}, expected), ({"TOKIO_ASYNC_PRELOAD": "0"}, "[]")):
        run = lldb.run_steps(["script " + PRELOADS, "file " + binary, "script " + LLDB_PRELOADS], env=env)
        assert [line for line in run.stdout.splitlines() if line.startswith("PRELOADS")] == ["PRELOADS []", "PRELOADS " + loaded], run.stderr


def test_loading_twice_is_harmless(debugger, tmp_path):
    from support.paths import GDB_SCRIPT, LLDB_SCRIPT

    load = "source %s" % GDB_SCRIPT if debugger.name == "gdb" else "command script import %s" % LLDB_SCRIPT
    run, manifest = run_to_checkpoint(debugger, tmp_path, "dev", [load, "async bt --json"])
    _, report = run.sections()
    assert [task["id"] for task in json.loads(report)["tasks"]] == [manifest["tasks"]["runner"]]
    assert not run.error_lines() and run.traceback_free()


@pytest.mark.parametrize("profile", PROFILES)
def test_current_thread_runtime(debugger, tmp_path, profile):
    """One thread runs everything: blocked in block_on, and polling a task right now."""
    run, manifest = run_to_checkpoint(debugger, tmp_path, profile, ["async bt all --json"], "current_thread")
    [report] = run.json_sections()
    assert_tasks(report, manifest, "breakpoint")
    assert [r["flavor"] for r in report["runtimes"]] == ["CurrentThread"]
    [thread] = report["threads"]
    assert (thread["tid"], thread["role"], thread["worker"]) == (manifest["pid"], "block_on", None)
    assert thread["current_task"] == manifest["tasks"]["runner"]
    assert expect.chain(thread["future"]) == expect.task_chains("breakpoint")["runner"]
    # Why the child has not run: it waits in the runtime's local run queue.
    assert thread["queue"] == {"lifo_slot": None, "local": [manifest["tasks"]["child"]]}
    assert [runtime["inject"] for runtime in report["runtimes"]] == [[]]
    assert report["errors"] == []
    # current_thread's block_on keeps its future argument even in release builds.
    assert expect.chain(thread["block_on_future"]) == expect.main_future_chain()


@pytest.mark.parametrize("build_kind", ["dev", "frame-pointers"])
def test_block_on_future_in_its_first_poll(debugger, tmp_path, build_kind):
    """Stopped in the main future's first poll, which has never been suspended: only the
    `block_on` frame's local finds it (a stack search takes suspended futures only). The
    glue asks the debugger for no local in a physical frame, so this is the core's own
    reading of the local from DWARF, with the frame base rsp (dev) or rbp (a build with
    frame pointers: the DWARF 5 fixture)."""
    binary = build.fixture("tokio-app", "dev") if build_kind == "dev" else build.dwarf5_fixture("tokio-app", "dev")
    line = Markers().running["app_main"]
    stop = "break main.rs:%d" % line if debugger.name == "gdb" else "breakpoint set --file main.rs --line %d" % line
    run = debugger.run_steps([stop, "run"] + capture(debugger, "async bt --json"), program=binary, args=["hang"],
                             env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")})
    [report] = run.json_sections()
    [main] = [thread for thread in report["threads"] if thread["role"] == "block_on"]
    assert main.get("error") is None, main
    assert expect.chain(main["future"]) == [("async_block", "tokio_app::main::{async_block#3}", None, None, Markers().await_line("main_block"))]
    assert main["future"]["running"] is True


@pytest.mark.parametrize("profile", PROFILES)
def test_two_runtimes_in_one_process(debugger, tmp_path, profile):
    """A multi_thread runtime and a current_thread runtime on another thread: each task is
    listed once, under the runtime that owns it. In release builds both block_on futures
    are found on their threads' stacks."""
    binary = build.fixture("tokio-app", profile)
    with RunningFixture(binary, "hang", str(tmp_path), extra_args=["two_runtimes"]) as fixture:
        run = debugger.run_steps(capture(debugger, "async bt all --json"), pid=fixture.pid)
        [report] = run.json_sections()
    ids = fixture.manifest["tasks"]
    m = Markers()
    assert sorted(r["flavor"] for r in report["runtimes"]) == ["CurrentThread", "MultiThread"]
    by_id = {task["id"]: task for task in report["tasks"]}
    assert sorted(by_id) == sorted(ids[name] for name in ids if name != "finished")
    [second] = [t for t in report["threads"] if t["name"] == "second-rt"]
    assert second["role"] == "block_on" and second["current_task"] is None
    assert expect.chain(second["future"]) == [
        expect.suspended(m, "async_fn", "tokio_app::second_runtime_main", "second_runtime_main"),
        ("pending", "core::future::pending::Pending<()>", None, None, None),
    ]
    second_runtime = second["runtime"]
    [main] = [t for t in report["threads"] if t["tid"] == fixture.pid]
    assert main["runtime"] != second_runtime
    assert expect.chain(main["future"]) == expect.main_future_chain()
    for name, task in ((name, by_id[ids[name]]) for name in ids if name != "finished"):
        owned_by_second = name.startswith("second_")
        assert (task["runtime"] == second_runtime) == owned_by_second, name
    assert expect.chain(by_id[ids["second_sleeper"]]["root"]) == [
        expect.suspended(m, "async_fn", "tokio_app::second_sleeper", "second_sleeper"),
        expect.SLEEP,
    ]
    assert expect.chain(by_id[ids["second_level1"]]["root"]) == expect.task_chains("hang")["level1"]


@pytest.mark.parametrize("profile", PROFILES)
def test_local_set_tasks(debugger, tmp_path, profile):
    """`spawn_local` tasks live in their LocalSet, not in the runtime's task list; the
    LocalSet is found through the block_on future that runs it."""
    binary = build.fixture("tokio-app", profile)
    with RunningFixture(binary, "hang", str(tmp_path), extra_args=["local_set"]) as fixture:
        run = debugger.run_steps(capture(debugger, "async bt all --json"), pid=fixture.pid)
        sections = run.json_sections()
    [report] = sections
    ids = fixture.manifest["tasks"]
    m = Markers()
    assert sorted(r["flavor"] for r in report["runtimes"]) == ["LocalSet", "MultiThread"]
    [local_set] = [r for r in report["runtimes"] if r["flavor"] == "LocalSet"]
    # tokio keeps no count of a LocalSet's tasks; the block_on future's run_until led to it.
    assert (local_set["task_count"], local_set["tasks_read"]) == (None, 2)
    assert local_set["found_by"] == {"via": "block_on_future", "thread": fixture.pid}
    by_id = {task["id"]: task for task in report["tasks"]}
    assert sorted(by_id) == sorted(ids[name] for name in ids if name != "finished")
    for name in ids:
        if name != "finished":
            assert (by_id[ids[name]]["runtime"] == local_set["address"]) == name.startswith("local_"), name
    assert expect.chain(by_id[ids["local_sleeper"]]["root"]) == [
        expect.suspended(m, "async_fn", "tokio_app::local_sleeper", "local_sleeper"),
        expect.SLEEP,
    ]
    assert expect.chain(by_id[ids["local_level1"]]["root"]) == expect.task_chains("hang")["level1"]
    [main] = [t for t in report["threads"] if t["tid"] == fixture.pid]
    chain = expect.chain(main["future"])
    assert chain[0][:3] == ("async_fn", "tokio::task::local::LocalSet::run_until", "suspended")
    assert chain[1] == expect.suspended(m, "async_block", "tokio_app::run_with_local_set::{async_block#0}", "local_main")
    assert chain[2:] == expect.main_future_chain()[1:]


@pytest.mark.parametrize("profile", PROFILES)
def test_local_set_polled_at_the_stop(debugger, tmp_path, profile):
    """Stopped inside a LocalSet task, polled by the LocalSet on the main thread: the
    LocalSet's tasks, the running one among them, are all listed."""
    run, manifest = run_to_checkpoint(debugger, tmp_path, profile, ["async bt all --json"], "local_set_polled")
    [report] = run.json_sections()
    ids = manifest["tasks"]
    assert sorted(r["flavor"] for r in report["runtimes"]) == ["LocalSet", "MultiThread"]
    [local_set] = [r for r in report["runtimes"] if r["flavor"] == "LocalSet"]
    local_names = ["local_sleeper", "local_level1", "runner"]
    assert (local_set["task_count"], local_set["tasks_read"]) == (None, len(local_names))
    by_id = {task["id"]: task for task in report["tasks"]}
    assert sorted(by_id) == sorted(ids[name] for name in ids if name != "finished")
    for name in ids:
        if name != "finished":
            assert (by_id[ids[name]]["runtime"] == local_set["address"]) == (name in local_names), name
    chains = expect.task_chains("breakpoint")
    runner = by_id[ids["runner"]]
    assert (runner["state"], expect.chain(runner["root"])) == ("running", chains["runner"])
    assert expect.chain(by_id[ids["local_level1"]]["root"]) == chains["level1"]
    # The main thread polls the runner task now, inside the LocalSet inside block_on.
    [main] = [t for t in report["threads"] if t["tid"] == manifest["pid"]]
    assert (main["role"], main["current_task"]) == ("block_on", ids["runner"])
    assert expect.chain(main["future"]) == chains["runner"]
    m = Markers()
    chain = expect.chain(main["block_on_future"])
    assert chain[0][:3] == ("async_fn", "tokio::task::local::LocalSet::run_until", "suspended")
    assert chain[1] == expect.suspended(m, "async_block", "tokio_app::run_with_local_set::{async_block#0}", "local_main")
    assert report["errors"] == []


@pytest.mark.parametrize("name", [
    "tokio::runtime::park::CachedParkThread::block_on<core::pin::Pin<X>>",  # GDB
    "tokio::runtime::park::CachedParkThread::block_on::h82e3f58b9b959051",  # LLDB, legacy mangling
    "<tokio::runtime::park::CachedParkThread>::block_on::<tokio_app::main::{closure#3}>",  # LLDB, v0 mangling
    "tokio::runtime::park::CachedParkThread::block_on<fn() -> u8>",
])
def test_the_glue_knows_the_block_on_frame_by_any_debugger_name(name):
    """The glue asks for the block_on local in the frame the core reads it from, whatever
    the debugger calls that function; a closure inside it is another function."""
    import sys

    from support.paths import REPO

    sys.path.insert(0, REPO + "/python")
    from tokio_async_glue.adapter import FrameNeedsOfThread

    table = [("tokio::runtime::park::CachedParkThread::block_on", "f")]
    assert FrameNeedsOfThread(table).of(name, inlined=True).locals == ["f"]
    assert FrameNeedsOfThread(table).of(name, inlined=False).locals == []
    closure = name.replace("::h82e3f58b9b959051", "") + "::{closure#0}"
    assert FrameNeedsOfThread(table).of(closure, inlined=True).locals == []
