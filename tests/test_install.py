"""The commands loaded the ways users load them, each checked on a real attach to tokio-app:
`make install` (init files in a fresh HOME, read by plain `gdb -p` and `lldb-19 -p`, and by
rust-gdb and rust-lldb next to Rust's pretty printers), `make uninstall`, and the wheel
(`make wheel`) installed with pip and imported as a module."""

import os
import re
import shutil
import subprocess
import sys

import pytest
from support import build, expect
from support.checkpoint import locked_version
from support.debuggers import BEGIN, END, Gdb, Lldb, Run, capture
from support.paths import EXTENSION, REPO
from support.process import RunningFixture

REAL_HOME = os.path.expanduser("~")
PACKAGE = os.path.dirname(EXTENSION)
DEFAULT_DIR = os.path.join(".local", "share", "tokio-async")
SOURCE = "tokio-app/src/main.rs"
KIND_WORDS = {"async_fn": "async fn", "async_block": "async block", "async_closure": "async closure"}


def environment(home, **extra):
    """The test's environment with HOME replaced. rustup and cargo (make build, rust-gdb,
    rust-lldb) keep finding the toolchain and the registry under the real one."""
    env = dict(os.environ)
    env.setdefault("RUSTUP_HOME", os.path.join(REAL_HOME, ".rustup"))
    env.setdefault("CARGO_HOME", os.path.join(REAL_HOME, ".cargo"))
    for name in ("XDG_CONFIG_HOME", "INSTALL_DIR", "PYTHONPATH"):
        env.pop(name, None)  # GDB's init file, the folder, the package: only the test's.
    env["HOME"] = str(home)
    env.update(extra)
    return env


def make(target, home, *args):
    completed = subprocess.run(
        ["make", "--no-print-directory", "-C", REPO, target, *args], env=environment(home),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, stdin=subprocess.DEVNULL, timeout=600,
    )
    return completed


def package_files():
    """The package as the repository holds it: its modules and the built extension."""
    files = []
    for root, dirs, names in os.walk(PACKAGE):
        dirs[:] = [name for name in dirs if name != "__pycache__"]
        files += [os.path.relpath(os.path.join(root, name), PACKAGE) for name in names if name.endswith(".py") or name == "_core.abi3.so"]
    assert "_core.abi3.so" in files and "gdb.py" in files and "lldb.py" in files
    return sorted(files)


def installed(home):
    completed = make("install", home)
    assert completed.returncode == 0, completed.stdout
    return completed.stdout


def init_lines(home, directory=None):
    directory = directory or os.path.join(str(home), DEFAULT_DIR)
    return (
        "source %s/gdb-scripts/tokio_async.py" % directory,
        "command script import %s/lldb-scripts/tokio_async.py" % directory,
    )


@pytest.fixture(scope="module")
def hanging_app(tmp_path_factory):
    """tokio-app (dev) parked in its `hang` mode; every test attaches to the same process."""
    workdir = tmp_path_factory.mktemp("hanging-app")
    with RunningFixture(build.fixture("tokio-app", "dev"), "hang", str(workdir)) as fixture:
        yield fixture


@pytest.fixture(scope="module")
def installed_home(tmp_path_factory):
    """A fresh HOME after `make install`."""
    home = tmp_path_factory.mktemp("home")
    installed(home)
    return home


def attach(argv, env, commands, timeout=120):
    """Runs a debugger (`argv` ends with its attach option) with `commands` captured;
    returns the Run and each command's output."""
    gdb = os.path.basename(argv[0]) in ("gdb", "rust-gdb")
    debugger = Gdb() if gdb else Lldb()
    option = "-ex" if gdb else "-o"
    steps = [step for command in commands for step in capture(debugger, command)]
    argv = list(argv) + [arg for step in steps for arg in (option, step)]
    completed = subprocess.run(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL, timeout=timeout,
    )
    run = Run(completed)
    output = run.stdout + run.stderr
    # LLDB's batch mode stops at a failing command: its END is then missing.
    printed = run.stdout.splitlines()
    assert printed.count(BEGIN) == printed.count(END) == len(commands), output
    assert run.error_lines() == [] and run.traceback_free(), output
    return run, run.sections()


def squeeze(text):
    """Non-empty lines, runs of spaces made one."""
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines() if line.strip()]


def suspended_lines(chain):
    return [
        "#%d %s %s at %s:%d (await #%d)" % (depth, KIND_WORDS[kind], function, SOURCE, line, await_point)
        for depth, (kind, function, state, await_point, line) in enumerate(chain)
        if kind in KIND_WORDS
    ]


def assert_tokio_app_report(text, manifest):
    """`async backtrace all` of the hanging tokio-app, line by line: the header, the
    block_on thread, both workers, and every task's chain to its leaf, await lines exact."""
    lines = squeeze(text)
    chains = expect.task_chains("hang")
    ids = manifest["tasks"]
    assert lines[0] == "tokio %s: 1 runtime (MultiThread), %d tasks" % (locked_version("tokio"), len(chains)), text
    main = lines.index('Thread %d "tokio-app": block_on' % manifest["pid"])
    main_chain = suspended_lines(expect.main_future_chain())
    assert lines[main + 1 : main + 1 + len(main_chain)] == main_chain, text
    assert re.fullmatch(r"#3 waiting for Notify 0x[0-9a-f]+ \(1 waiter\)", lines[main + 4]), text
    workers = sorted(re.sub(r"^Thread \d+ ", "", line) for line in lines if '"tokio-rt-worker"' in line)
    assert len(workers) == 2, text
    for number, worker in enumerate(workers):
        assert re.fullmatch(r'"tokio-rt-worker": worker %d, (parked|searching for work)' % number, worker), text
    leaves = {
        # The main thread's block_on future keeps the sender (in a Vec) at its last await.
        "oneshot_recv": r"recv on oneshot 0x[0-9a-f]+ \(nothing sent; sender held by thread %d at %s:\d+\)" % (manifest["pid"], SOURCE),
        "sleep": r"Sleep until \+[0-9.]+s",
        "join_handle": r"JoinHandle -> task %d \(idle\)" % ids["child"],
        # The main thread's block_on future keeps the Notify the task waits on.
        "notified": r"waiting for Notify 0x[0-9a-f]+ \(1 waiter; possible notifiers: thread %d at %s:\d+\)" % (manifest["pid"], SOURCE),
    }
    assert len([line for line in lines if line.startswith("Task ")]) == len(chains), text
    for name, chain in chains.items():
        start = lines.index("Task %d (idle)" % ids[name])
        frames = suspended_lines(chain)
        assert lines[start + 1 : start + 1 + len(frames)] == frames, (name, text)
        leaf = lines[start + 1 + len(frames)]
        assert re.fullmatch(r"#%d %s" % (len(frames), leaves[chain[-1][0]]), leaf), (name, leaf)
        rest = lines[start + 2 + len(frames) :]
        assert not rest or rest[0].startswith("Task "), (name, text)  # the leaf ends the chain


def test_install_twice_adds_each_init_line_once(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # An init file whose last line has no newline of its own.
    (home / ".gdbinit").write_text("set history save on")
    first = installed(home)
    gdb_line, lldb_line = init_lines(home)
    assert "added" in first
    second = installed(home)
    assert second.count("already loads it") == 2, second
    assert (home / ".gdbinit").read_text() == "set history save on\n" + gdb_line + "\n"
    assert (home / ".lldbinit").read_text() == lldb_line + "\n"
    directory = home / DEFAULT_DIR
    assert sorted(str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()) == sorted(
        [".tokio-async-install", "bin/tokio-async", "gdb-scripts/tokio_async.py", "lldb-scripts/tokio_async.py"]
        + ["python/tokio_async_glue/" + name for name in package_files()]
    )
    for name in package_files():
        with open(os.path.join(PACKAGE, name), "rb") as original:
            assert (directory / "python" / "tokio_async_glue" / name).read_bytes() == original.read(), name


def test_uninstall_removes_the_folder_and_only_its_lines(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    gdbinit = "set print pretty on\n# mine\n"
    lldbinit = "settings set target.x86-disassembly-flavor intel\n"
    (home / ".gdbinit").write_text(gdbinit)
    (home / ".lldbinit").write_text(lldbinit)
    installed(home)
    # A line the user added after ours stays too.
    with open(home / ".gdbinit", "a") as init:
        init.write("set confirm off\n")
    completed = make("uninstall", home)
    assert completed.returncode == 0, completed.stdout
    assert not (home / DEFAULT_DIR).exists()
    assert (home / ".local" / "share").is_dir()
    assert (home / ".gdbinit").read_text() == gdbinit + "set confirm off\n"
    assert (home / ".lldbinit").read_text() == lldbinit
    again = make("uninstall", home)
    assert again.returncode == 0 and "nothing installed" in again.stdout, again.stdout


def test_install_dir_and_gdbs_xdg_init_file(tmp_path):
    """INSTALL_DIR picks the folder; GDB reads only the first home init file it finds, so
    an existing ~/.config/gdb/gdbinit gets the line, not ~/.gdbinit. GDB then has the
    commands, and after uninstall it has them no more."""
    home = tmp_path / "home"
    (home / ".config" / "gdb").mkdir(parents=True)
    (home / ".config" / "gdb" / "gdbinit").write_text("set print pretty on\n")
    directory = tmp_path / "elsewhere" / "tokio-async"
    completed = make("install", home, "INSTALL_DIR=%s" % directory)
    assert completed.returncode == 0, completed.stdout
    gdb_line, lldb_line = init_lines(home, str(directory))
    assert (home / ".config" / "gdb" / "gdbinit").read_text() == "set print pretty on\n" + gdb_line + "\n"
    assert not (home / ".gdbinit").exists() and not (home / DEFAULT_DIR).exists()
    assert (home / ".lldbinit").read_text() == lldb_line + "\n"
    help_async = ["gdb", "-batch", "-ex", "help async"]
    run = subprocess.run(help_async, env=environment(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert "Async backtraces of the tokio tasks in the program being debugged." in run.stdout, run.stdout
    assert make("uninstall", home, "INSTALL_DIR=%s" % directory).returncode == 0
    assert (home / ".config" / "gdb" / "gdbinit").read_text() == "set print pretty on\n"
    assert not directory.exists()
    run = subprocess.run(help_async, env=environment(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert 'Undefined command: "async"' in run.stdout, run.stdout


def test_a_folder_it_did_not_make_is_neither_replaced_nor_removed(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me\n")
    completed = make("install", home, "INSTALL_DIR=%s" % theirs)
    assert completed.returncode != 0 and "is not an earlier install" in completed.stdout, completed.stdout
    assert make("uninstall", home, "INSTALL_DIR=%s" % theirs).returncode != 0
    assert sorted(os.listdir(theirs)) == ["notes.txt"]
    assert not (home / ".gdbinit").exists() and not (home / ".lldbinit").exists()


def test_plain_gdb_reads_the_install_from_home(installed_home, hanging_app):
    run, [report] = attach(["gdb", "-batch", "-p", str(hanging_app.pid)], environment(installed_home), ["async backtrace all"])
    assert_tokio_app_report(report, hanging_app.manifest)


def test_plain_lldb_reads_the_install_from_home(installed_home, hanging_app):
    run, [report] = attach(["lldb-19", "-b", "-p", str(hanging_app.pid)], environment(installed_home), ["async backtrace all"])
    assert_tokio_app_report(report, hanging_app.manifest)


def test_the_installed_executable_reads_a_process_without_a_debugger(installed_home, hanging_app):
    executable = installed_home / DEFAULT_DIR / "bin" / "tokio-async"
    # With no command, `backtrace all`.
    run = subprocess.run([str(executable), str(hanging_app.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert_tokio_app_report(run.stdout, hanging_app.manifest)


def task_ids_map(manifest):
    """tokio-app's `TASK_IDS` static as Rust's GDB pretty printer prints a BTreeMap."""
    tasks = manifest["tasks"]
    return "BTreeMap(size=%d) = {%s}" % (len(tasks), ", ".join('["%s"] = %d' % (k, tasks[k]) for k in sorted(tasks)))


def test_rust_gdb_has_both_the_pretty_printers_and_the_commands(installed_home, hanging_app):
    run, [report, value] = attach(
        ["rust-gdb", "-batch", "-p", str(hanging_app.pid)], environment(installed_home),
        ["async backtrace all", "print tokio_app::TASK_IDS"],
    )
    assert_tokio_app_report(report, hanging_app.manifest)
    assert task_ids_map(hanging_app.manifest) in value, value


def test_rust_lldb_has_both_the_formatters_and_the_commands(installed_home, hanging_app, tmp_path):
    """rust-lldb runs `lldb` from PATH (it sets RUST_LLDB itself, to a path under the
    toolchain): an `lldb` there is LLDB 19 here. Its formatters make every value synthetic,
    fs_base included, which the adapter must see through."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lldb").symlink_to(shutil.which("lldb-19"))
    env = environment(installed_home, PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    run, [report, value] = attach(
        ["rust-lldb", "-b", "-p", str(hanging_app.pid)], env, ["async backtrace all", "target variable tokio_app::TASK_IDS"],
    )
    assert "lldb_lookup.py" in run.stdout  # Rust's formatters were loaded ...
    assert_tokio_app_report(report, hanging_app.manifest)
    # ... and print the map's root as an Option, which plain LLDB shows as `$variants$`.
    assert "root = Some({height:" in value and "length = %d" % len(hanging_app.manifest["tasks"]) in value, value


@pytest.fixture(scope="module")
def wheel_site(tmp_path_factory):
    """`make wheel`, then the wheel installed with pip into a folder of its own."""
    completed = make("wheel", REAL_HOME)
    assert completed.returncode == 0, completed.stdout
    wheels = [name for name in os.listdir(os.path.join(REPO, "target", "wheels")) if name.endswith(".whl")]
    assert len(wheels) == 1 and re.fullmatch(r"tokio_async-[0-9.]+-cp39-abi3-\w+\.whl", wheels[0]), wheels
    wheel = os.path.join(REPO, "target", "wheels", wheels[0])
    site = tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--target", str(site), wheel]
    subprocess.run(pip, check=True, env=dict(os.environ, PIP_ROOT_USER_ACTION="ignore"))
    return wheel, site


def test_wheel_holds_the_package_and_the_extension(wheel_site):
    wheel, _ = wheel_site
    listing = subprocess.run(["unzip", "-l", wheel], check=True, stdout=subprocess.PIPE, text=True).stdout
    names = sorted(line.split()[-1] for line in listing.splitlines() if "tokio_async_glue/" in line)
    assert names == ["tokio_async_glue/" + name for name in package_files()], listing


def test_gdb_imports_the_installed_wheel(wheel_site, hanging_app, tmp_path):
    _, site = wheel_site
    env = environment(tmp_path, PYTHONPATH=str(site))
    run, [where, report] = attach(
        ["gdb", "-nx", "-batch", "-ex", "python import tokio_async_glue.gdb", "-p", str(hanging_app.pid)], env,
        ["python import tokio_async_glue; print(tokio_async_glue.__file__)", "async backtrace all"],
    )
    assert where.strip() == os.path.join(str(site), "tokio_async_glue", "__init__.py")
    assert_tokio_app_report(report, hanging_app.manifest)


def test_lldb_imports_the_installed_wheel(wheel_site, hanging_app, tmp_path):
    _, site = wheel_site
    env = environment(tmp_path, PYTHONPATH=str(site))
    run, [where, report] = attach(
        ["lldb-19", "--no-lldbinit", "-b", "-o", "command script import tokio_async_glue.lldb", "-p", str(hanging_app.pid)], env,
        ["script import tokio_async_glue; print(tokio_async_glue.__file__)", "async backtrace all"],
    )
    assert where.strip() == os.path.join(str(site), "tokio_async_glue", "__init__.py")
    assert_tokio_app_report(report, hanging_app.manifest)
