#!/usr/bin/env python3
"""`make fuzz-images`: the memory images the fuzzer mutates (fuzz/images/*.img). Each is a
real stop of a fixture: the fixture runs to where all its tasks are parked, GDB with the
glue writes the request it would send (threads, thread pointers, frames) and a core, and
`examples/fuzz.rs record` keeps the pages the core reads on that stop."""

import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

from support import build  # noqa: E402
from support.paths import GDB_SCRIPT  # noqa: E402
from support.process import RunningFixture  # noqa: E402

STOP_SCRIPT = os.path.join(REPO, "tools", "fuzz_stop.py")
IMAGES = os.path.join(REPO, "fuzz", "images")

# name -> (program, profile, how it stops, arguments). `attach`: a running fixture parked
# forever; `checkpoint`: run under GDB to its tokio_async_checkpoint.
STOPS = {
    "tokio-app-dev-hang": ("tokio-app", "dev", "attach", ["hang"]),
    "tokio-app-dev-current-thread": ("tokio-app", "dev", "attach", ["hang", "current_thread"]),
    "tokio-app-dev-local-set": ("tokio-app", "dev", "attach", ["hang", "local_set"]),
    "tokio-app-dev-two-runtimes": ("tokio-app", "dev", "attach", ["hang", "two_runtimes"]),
    "tokio-app-dev-breakpoint": ("tokio-app", "dev", "checkpoint", ["breakpoint"]),
    "tokio-app-release-hang": ("tokio-app", "release", "attach", ["hang"]),
    "waits-app-dev": ("waits-app", "dev", "checkpoint", []),
    "deadlock-app-dev": ("deadlock-app", "dev", "checkpoint", []),
    # Every decoder's kind of future, in both profiles: the stops the recorded reports
    # (fuzz/reports, tests/suite/recorded_reports.rs) keep byte for byte.
    "tokio-app-release-current-thread": ("tokio-app", "release", "attach", ["hang", "current_thread"]),
    "tokio-app-release-local-set": ("tokio-app", "release", "attach", ["hang", "local_set"]),
    "waits-app-release": ("waits-app", "release", "checkpoint", []),
    "deadlock-app-release": ("deadlock-app", "release", "checkpoint", []),
    "services-app-dev": ("services-app", "dev", "checkpoint", []),
    "services-app-release": ("services-app", "release", "checkpoint", []),
    "many-tasks-dev": ("many-tasks", "dev", "checkpoint", ["120", "2"]),
    # tokio's I/O utilities and other leaves; its main parked in select!(serve, ctrl_c).
    "io-app-dev": ("io-app", "dev", "checkpoint", []),
    "io-app-release": ("io-app", "release", "checkpoint", []),
}


def gdb_stop(binary, how, args, workdir, stop_json, core):
    env = dict(os.environ, FUZZ_STOP_JSON=stop_json, FUZZ_STOP_CORE=core, FIXTURE_MANIFEST=os.path.join(workdir, "manifest.json"))
    base = ["gdb", "-nx", "-batch", "-ex", "set pagination off", "-ex", "set confirm off", "-ex", "source %s" % GDB_SCRIPT]
    if how == "attach":
        # Without address randomisation (as GDB runs programs), so that a stop recorded
        # again from an unchanged fixture has the same addresses and the corpus still fits.
        with RunningFixture("setarch", "-R", workdir, extra_args=[binary] + args) as fixture:
            argv = base + ["-ex", "source %s" % STOP_SCRIPT, "-p", str(fixture.pid)]
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    else:
        argv = base + ["-ex", "break tokio_async_checkpoint", "-ex", "run", "-ex", "source %s" % STOP_SCRIPT,
                       "-ex", "kill", "--args", binary] + args
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, cwd=workdir)


def main(names):
    os.makedirs(IMAGES, exist_ok=True)
    for name in names or STOPS:
        program, profile, how, args = STOPS[name]
        binary = build.fixture(program, profile)
        with tempfile.TemporaryDirectory() as workdir:
            stop_json, core = os.path.join(workdir, "stop.json"), os.path.join(workdir, "stop.core")
            gdb_stop(binary, how, args, workdir, stop_json, core)
            out = os.path.join(IMAGES, name + ".img")
            subprocess.run(
                ["cargo", "run", "--quiet", "--release", "--no-default-features", "-p", "tokio-async-core", "--example", "fuzz", "--",
                 "record", name, program, profile, stop_json, core, out],
                cwd=REPO, check=True,
            )


if __name__ == "__main__":
    main(sys.argv[1:])
