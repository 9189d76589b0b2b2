import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytest
from support import debuggers
from support.paths import EXTENSION

# The files that take longest (most build programs of their own) start first: under
# `--dist loadfile` a file runs whole on one worker, and a long one left to the end keeps
# the run going while the other worker idles. (Longest first, from `--durations` of a
# clean-clone run; the rest keep their order.)
LONGEST_FIRST = [
    "test_realworld.py", "test_taskdump_oracle.py", "test_standalone.py",
    "test_every_task.py", "test_shapes.py", "test_versions.py", "test_backtrace.py", "test_stepping.py",
]


def pytest_collection_modifyitems(items):
    rank = {name: at for at, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)), len(rank)))


@pytest.fixture(scope="session", autouse=True)
def prerequisites():
    if not os.path.exists(EXTENSION):
        pytest.exit("the extension is not built: run `make build` (make test does it)", returncode=2)
    debuggers.require_installed()


@pytest.fixture(params=debuggers.ALL, ids=debuggers.ALL_IDS)
def debugger(request):
    """Each test that takes this runs once under GDB and once under LLDB."""
    return request.param


# Files this big (cores, mostly) are removed when the test file that made them is done:
# kept to the end of the session they add up to 5 GB, more than a CI machine may have.
BIG_FILE = 16 << 20


@pytest.fixture(scope="module", autouse=True)
def remove_big_files_after_module(tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    before = set(os.listdir(base))
    yield
    for name in set(os.listdir(base)) - before:
        for directory, _, files in os.walk(os.path.join(base, name)):
            for file in files:
                path = os.path.join(directory, file)
                try:
                    if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) >= BIG_FILE:
                        os.remove(path)
                except OSError:
                    pass


# TEST_CPU_LOG=FILE: one line per test with its wall seconds and the CPU seconds of the
# programs it ran (builds, debuggers, the executable) and of pytest itself, to find where
# a run's CPU goes (tools/cpu_by_test.py sums it by file and phase).
CPU_LOG = os.environ.get("TEST_CPU_LOG")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    if not CPU_LOG:
        yield
        return
    import resource
    import time

    def cpu(who):
        usage = resource.getrusage(who)
        return usage.ru_utime + usage.ru_stime

    started = (time.monotonic(), cpu(resource.RUSAGE_CHILDREN), cpu(resource.RUSAGE_SELF))
    yield
    wall = time.monotonic() - started[0]
    children = cpu(resource.RUSAGE_CHILDREN) - started[1]
    own = cpu(resource.RUSAGE_SELF) - started[2]
    with open(CPU_LOG, "a") as log:
        log.write("%.2f %.2f %.2f %s\n" % (wall, children, own, item.nodeid))
