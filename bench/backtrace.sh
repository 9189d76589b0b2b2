#!/usr/bin/env bash
# How long `async backtrace all --json` takes over N parked tasks, in GDB and LLDB 19, on a
# live process stopped at a breakpoint and on a core file. Prints one line per measurement:
#   debugger target tasks first_ms repeat_ms bytes
# first_ms includes loading the executable's DWARF (once per debugger session); repeat_ms
# is a second run in the same session. Usage: bench/backtrace.sh [N ...] (default 10000 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("${@:-10000 100000}")
[ $# -eq 0 ] && counts=(10000 100000)
make -s build >/dev/null
(cd tests/fixtures && cargo build -q --release -p many-tasks --target-dir ../../target/fixtures)
binary=target/fixtures/release/many-tasks
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/measure.py" <<'PY'
import json, sys, time
def measure(run, label):
    timings = []
    for _ in range(2):
        start = time.perf_counter()
        output = run("async backtrace all --json")
        timings.append((time.perf_counter() - start) * 1000)
    report = json.loads(output)
    print("RESULT %s %d %.0f %.0f %d" % (label, len(report["tasks"]), timings[0], timings[1], len(output)))
PY

echo "debugger target tasks first_ms repeat_ms bytes"
for count in "${counts[@]}"; do
    core="$work/many-$count.core"
    gdb -nx -batch -q -ex "set auto-load python-scripts off" -ex "source gdb-scripts/tokio_async.py" \
        -ex "break tokio_async_checkpoint" -ex run \
        -ex "python exec(open('$work/measure.py').read()); measure(lambda c: gdb.execute(c, to_string=True), 'gdb live')" \
        -ex "gcore $core" --args "$binary" "$count" 2>/dev/null | grep '^RESULT' | cut -d' ' -f2-
    gdb -nx -batch -q -ex "set auto-load python-scripts off" -ex "source gdb-scripts/tokio_async.py" \
        -ex "python exec(open('$work/measure.py').read()); measure(lambda c: gdb.execute(c, to_string=True), 'gdb core')" \
        "$binary" "$core" 2>/dev/null | grep '^RESULT' | cut -d' ' -f2-
    cat > "$work/measure_lldb.py" <<PY
import lldb
exec(open("$work/measure.py").read())
def run(command):
    result = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(command, result)
    return result.GetOutput()
PY
    lldb-19 --no-lldbinit -b -o "command script import lldb-scripts/tokio_async.py" \
        -o "breakpoint set --name tokio_async_checkpoint" -o run \
        -o "command script import $work/measure_lldb.py" -o "script measure_lldb.measure(measure_lldb.run, 'lldb live')" \
        -- "$binary" "$count" 2>/dev/null | grep '^RESULT' | cut -d' ' -f2-
    lldb-19 --no-lldbinit -b -o "command script import lldb-scripts/tokio_async.py" \
        -o "command script import $work/measure_lldb.py" -o "script measure_lldb.measure(measure_lldb.run, 'lldb core')" \
        -c "$core" "$binary" 2>/dev/null | grep '^RESULT' | cut -d' ' -f2-
    rm -f "$core"
done
