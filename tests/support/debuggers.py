"""One interface over real GDB and LLDB in batch mode, so every scenario runs in both.
A run executes a list of steps; `capture(command)` steps bracket a command's output with
markers so the test can pick it out of everything else the debugger prints."""

import json
import os
import resource
import shutil
import subprocess
import tempfile

from .paths import GDB_SCRIPT, LLDB_SCRIPT, REPO

BEGIN = "@@tokio-async-begin@@"
END = "@@tokio-async-end@@"


class Run:
    def __init__(self, completed):
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.returncode = completed.returncode

    def sections(self):
        """Output of each captured command, in order (debugger chatter removed)."""
        parts = []
        rest = self.stdout
        while BEGIN + "\n" in rest:
            start = rest.index(BEGIN + "\n") + len(BEGIN) + 1
            end = rest.index(END, start)
            lines = [
                line
                for line in rest[start:end].splitlines(keepends=True)
                if not line.startswith("(lldb) ") and not line.startswith("warning: This version of LLDB")
            ]
            parts.append("".join(lines))
            rest = rest[end + len(END):]
        return parts

    def json_sections(self):
        return [json.loads(section) for section in self.sections()]

    def error_lines(self):
        """Our one-line errors, without the debugger's own `error: ` prefix."""
        lines = []
        for line in (self.stdout + "\n" + self.stderr).splitlines():
            if "tokio-async:" in line:
                lines.append(line[line.index("tokio-async:"):])
        return lines

    def traceback_free(self):
        return "Traceback" not in self.stdout and "Traceback" not in self.stderr


# GDB indexes a binary's DWARF each time it loads one; like LLDB 19 below it keeps that
# index between sessions in this cache, as a user's `set index-cache enabled on` does (a
# session to a checkpoint and `async bt all` on tokio-app: 0.64 -> 0.52 CPU-seconds).
GDB_INDEX_CACHE = os.path.join(REPO, "target", "gdb-index-cache")


class Gdb:
    name = "gdb"
    executable = "gdb"

    def echo(self, text):
        return "echo %s\\n" % text

    def break_at(self, function):
        return "break %s" % function

    def run_steps(self, steps, program=None, args=(), pid=None, core=None, env=None, timeout=180, cwd=None, core_dumps=False):
        argv = [self.executable, "-nx", "-batch", "-iex", "set index-cache directory %s" % GDB_INDEX_CACHE]
        argv += ["-iex", "set index-cache enabled on", "-ex", "set pagination off", "-ex", "set confirm off"]
        argv += ["-ex", "set auto-load python-scripts off", "-ex", "source %s" % GDB_SCRIPT]
        for step in steps:
            argv += ["-ex", step]
        if pid is not None:
            argv += ["-p", str(pid)]
        elif core is not None:
            argv += [program, core]
        elif program is not None:
            argv += ["--args", program] + list(args)
        return _execute(argv, env, timeout, cwd, core_dumps)


# LLDB indexes a binary's DWARF itself each time it loads one (0.2-0.3 CPU-seconds of a
# fixture session's 0.8): LLDB 19 keeps that index in this cache between sessions, as a
# user's `symbols.enable-lldb-index-cache` does (a session to a checkpoint and `async bt
# all`: 0.8 -> 0.55 CPU-seconds). LLDB 14 took as long with it: it runs without.
LLDB_INDEX_CACHE = os.path.join(REPO, "target", "lldb-index-cache")


class Lldb:
    def __init__(self, executable="lldb-19", name="lldb", index_cache=True):
        self.executable = executable
        self.name = name
        self.index_cache = index_cache

    def echo(self, text):
        return 'script print("%s")' % text

    def break_at(self, function):
        return "breakpoint set --name %s" % function

    def run_steps(self, steps, program=None, args=(), pid=None, core=None, env=None, timeout=180, cwd=None, core_dumps=False):
        # Steps run from a command file so that one failing command does not end the run
        # (batch mode stops at the first error otherwise), without echoing each command.
        lines = ["command script import %s" % LLDB_SCRIPT] + list(steps)
        with tempfile.NamedTemporaryFile("w", suffix=".lldb", delete=False) as script:
            script.write("\n".join(lines) + "\n")
        try:
            argv = [self.executable, "--no-lldbinit", "-b"]
            if self.index_cache:
                argv += ["-O", "settings set symbols.lldb-index-cache-path %s" % LLDB_INDEX_CACHE]
                argv += ["-O", "settings set symbols.enable-lldb-index-cache true"]
            if pid is not None:
                argv += ["-p", str(pid)]
            elif core is not None:
                argv += ["-c", core, program]
            elif program is not None:
                argv += [program]
            argv += ["-o", "command source --stop-on-error false --silent-run false %s" % script.name]
            if pid is None and core is None and args:
                argv += ["--"] + list(args)
            return _execute(argv, env, timeout, cwd, core_dumps)
        finally:
            os.unlink(script.name)


def _execute(argv, env, timeout, cwd=None, core_dumps=False):
    """`cwd` is the debugger's and so a started program's; `core_dumps` lets the kernel
    write a core of a program that dies there (the debugger could write one too)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    completed = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=full_env,
        stdin=subprocess.DEVNULL, cwd=cwd, preexec_fn=allow_core_dumps if core_dumps else None,
    )
    return Run(completed)


def allow_core_dumps():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def capture(debugger, command):
    """Steps that run `command` with its output between markers."""
    return [debugger.echo(BEGIN), command, debugger.echo(END)]


# Debian's LLDB 14, unpacked privately by tools/setup.sh and run through its wrapper.
LLDB_14 = Lldb(os.path.join(REPO, "tools", "lldb-14"), name="lldb14", index_cache=False)
ALL = [Gdb(), Lldb(), LLDB_14]
ALL_IDS = [debugger.name for debugger in ALL]


def require_installed():
    lldb14 = os.path.join(REPO, "target", "lldb-14", "root", "usr", "lib", "llvm-14", "bin", "lldb")
    missing = [d.executable for d in ALL[:2] if shutil.which(d.executable) is None]
    if not os.path.exists(lldb14):
        missing.append(lldb14)
    if missing:
        raise RuntimeError("missing debuggers: %s (make test installs them)" % ", ".join(missing))
