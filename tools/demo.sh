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
