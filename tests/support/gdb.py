"""Runs real GDB in batch mode with the tokio-async script loaded, and captures the output
of chosen commands between markers."""

import json
import os
import subprocess

from .paths import GDB_SCRIPT

BEGIN = "@@tokio-async-begin@@"
END = "@@tokio-async-end@@"


class GdbRun:
    def __init__(self, completed):
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.returncode = completed.returncode

    def sections(self):
        """Stdout of each captured command, in order."""
        parts = []
        rest = self.stdout
        while BEGIN in rest:
            start = rest.index(BEGIN) + len(BEGIN) + 1
            end = rest.index(END, start)
            parts.append(rest[start:end])
            rest = rest[end + len(END):]
        return parts

    def json_sections(self):
        return [json.loads(section) for section in self.sections()]


def captured(command):
    """GDB commands that run `command` with its stdout between markers."""
    return ["echo %s\\n" % BEGIN, command, "echo %s\\n" % END]


def run_gdb(commands, program=None, args=(), pid=None, core=None, env=None, timeout=180, load_script=True):
    argv = ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "set confirm off"]
    argv += ["-ex", "set auto-load python-scripts off"]
    if load_script:
        argv += ["-ex", "source %s" % GDB_SCRIPT]
    for command in commands:
        argv += ["-ex", command]
    if pid is not None:
        argv += ["-p", str(pid)]
        if program:
            argv += [program]
    elif core is not None:
        argv += [program, core]
    elif program is not None:
        argv += ["--args", program] + list(args)
    full_env = dict(os.environ)
    full_env.update(env or {})
    completed = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout, env=full_env,
        stdin=subprocess.DEVNULL,
    )
    return GdbRun(completed)
