#!/usr/bin/env bash
# Compares this checkout's `async backtrace all --json` with another commit's on the same
# program: N parked tasks of many-tasks (release), in GDB, live. Prints per tool the median
# of 5 warm runs, wall and CPU (the debugger process's user+sys, which other load on the
# machine disturbs less), and the output size.
#   bench/compare.sh REF [N]      e.g. bench/compare.sh 136ecfb 10000
set -euo pipefail
cd "$(dirname "$0")/.."
ref=${1:?usage: bench/compare.sh REF [N]}
count=${2:-10000}
other=target/bench/$ref
make -s build >/dev/null 2>&1
(cd tests/fixtures && cargo build -q --release -p many-tasks --target-dir ../../target/fixtures)
if [ ! -f "$other/python/tokio_async_glue/_core.abi3.so" ]; then
    rm -rf "$other" && mkdir -p target/bench
    git worktree add -f -q --detach "$other" "$ref"
    # As make build builds the extension: the pyo3 crate over the core (rust-core/python),
    # or before it had one, the core itself with its `python` feature (its default then).
    crate=tokio-async-core
    [ -f "$other/rust-core/python/Cargo.toml" ] && crate=tokio-async-python
    (cd "$other" && CARGO_TARGET_DIR="$PWD/../target-$ref" cargo rustc -q --release -p $crate --lib --crate-type cdylib)
    cp "target/bench/target-$ref/release/lib${crate//-/_}.so" "$other/python/tokio_async_glue/_core.abi3.so"
fi
binary=target/fixtures/release/many-tasks
measure=$(mktemp)
trap 'rm -f "$measure"' EXIT
cat > "$measure" <<'PY'
import json, statistics, time
def measure(run, label):
    run("async backtrace all --json")  # cold: loads the DWARF
    walls, cpus = [], []
    for _ in range(5):
        wall, cpu = time.perf_counter(), time.process_time()
        output = run("async backtrace all --json")
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    tasks = len(json.loads(output)["tasks"])
    print("RESULT %-8s tasks %d  wall %.3f s  cpu %.3f s  %d bytes" % (label, tasks, statistics.median(walls), statistics.median(cpus), len(output)))
PY
for tool in "$other:$ref" ".:HEAD"; do
    root=${tool%%:*}
    gdb -nx -batch -q -ex "set auto-load python-scripts off" -ex "source $root/gdb-scripts/tokio_async.py" \
        -ex "break tokio_async_checkpoint" -ex run \
        -ex "python exec(open('$measure').read()); measure(lambda c: gdb.execute(c, to_string=True), '${tool##*:}')" \
        --args "$binary" "$count" 2>/dev/null | grep '^RESULT' | cut -d' ' -f2-
done
