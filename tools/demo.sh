#!/usr/bin/env bash
# Runs the tokio fixture under GDB to a point where one worker is busy inside a task,
# then prints every task's async backtrace.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "demo: building the fixture program (tests/fixtures/tokio-app)"
(cd tests/fixtures && cargo build --quiet -p tokio-app --target-dir ../../target/fixtures)

echo "demo: gdb target/fixtures/debug/tokio-app, break in a running task, then: async backtrace all"
echo
gdb -nx -batch -q \
    -ex "set pagination off" \
    -ex "set auto-load python-scripts off" \
    -ex "source gdb-scripts/tokio_async.py" \
    -ex "break tokio_async_checkpoint" \
    -ex "run" \
    -ex "echo \n(gdb) async backtrace all\n" \
    -ex "async backtrace all" \
    --args target/fixtures/debug/tokio-app breakpoint 2>&1 |
    grep -v -e '^\[New Thread' -e '^\[Thread debugging' -e 'libthread_db' -e '^warning: Missing auto-load' \
        -e '^of file ' -e "^Use \`info auto-load"

# The same program, parked, read without a debugger by the executable.
echo
echo "demo: without a debugger: target/release/tokio-async PID tasks (the program parked, and left running)"
manifest=$(mktemp -u)
FIXTURE_MANIFEST=$manifest target/fixtures/debug/tokio-app hang &
app=$!
trap 'kill $app 2>/dev/null; rm -f "$manifest"' EXIT
for _ in $(seq 200); do [ -f "$manifest" ] && break; sleep 0.05; done
echo
target/release/tokio-async "$app" tasks --verbose
echo
echo "demo: next, watch a program live, every task refreshed in a full-screen view (q quits; docs/top.md):"
echo "  target/fixtures/debug/tokio-app hang & target/release/tokio-async top \$!"
