"""Where things are: the repository, the fixture workspace and its one shared target dir."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
FIXTURE_SOURCE = os.path.join(FIXTURES, "tokio-app", "src", "main.rs")
# One target dir for every fixture profile; the taskdump oracle needs other RUSTFLAGS,
# so it gets its own (sharing would rebuild tokio on every switch).
FIXTURE_TARGET = os.path.join(REPO, "target", "fixtures")
TASKDUMP_TARGET = os.path.join(REPO, "target", "fixtures-taskdump")
# The DWARF 5 variant is built by the nightly toolchain with other RUSTFLAGS.
DWARF5_TARGET = os.path.join(REPO, "target", "fixtures-dwarf5")
# glibc linked statically needs other RUSTFLAGS, and an explicit --target so that proc
# macros still build for the host.
STATIC_TARGET = os.path.join(REPO, "target", "fixtures-static")
GDB_SCRIPT = os.path.join(REPO, "gdb-scripts", "tokio_async.py")
LLDB_SCRIPT = os.path.join(REPO, "lldb-scripts", "tokio_async.py")
EXTENSION = os.path.join(REPO, "python", "tokio_async_glue", "_core.abi3.so")
