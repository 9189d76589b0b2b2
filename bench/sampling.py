"""The sampling benchmark (`make bench-sampling`): how long `async sample --interval 0.1
--count 20` takes over 10,000 tasks (tests/fixtures/many-tasks, dev build) in GDB and LLDB
19, from the fixture's checkpoint, after one `async tasks` has loaded the DWARF. Prints
one table row per debugger: the whole command's wall time, the 2.0 s the program ran
within it, and what each sample cost beyond that (stopping, reading every task, resuming).
The issue's bound: 20 samples of 10,000 tasks in under 20 s in all."""

import json
import os
import re
import sys
import tempfile
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))
from support import build, debuggers  # noqa: E402
from support.inferior import script_step, tagged_lines  # noqa: E402

TASKS, INTERVAL, COUNT = 10000, 0.1, 20

TIMING = r'''
import json, time
run_command("async tasks --limit 1")
start = time.monotonic()
output = run_command("async sample --interval %s --count %d")
print("@@sample " + json.dumps({"seconds": time.monotonic() - start, "output": output}))
'''


def measure(debugger, binary):
    setup = [debugger.break_at("tokio_async_checkpoint"), "run"]
    with tempfile.TemporaryDirectory() as work:
        step = script_step(debugger, Path(work) / "sampling_bench.py", TIMING % (INTERVAL, COUNT))
        run = debugger.run_steps(setup + [step], program=binary, args=[str(TASKS)], timeout=600)
    tagged = tagged_lines(run, "sample")
    if not tagged:
        raise RuntimeError(run.stdout[-2000:] + run.stderr[-2000:])
    return json.loads(tagged[0])


def main():
    binary = build.fixture("many-tasks", "dev")
    print("%d tasks, `async sample --interval %s --count %d`, dev build" % (TASKS, INTERVAL, COUNT))
    print("| debugger | samples | task-samples | total s | of which running s | per sample s |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, debugger in (("gdb", debuggers.Gdb()), ("lldb-19", debuggers.Lldb())):
        result = measure(debugger, binary)
        header = re.search(r"^([\d,]+) samples [\d.]+ s apart, ([\d,]+) task-samples$", result["output"], re.M)
        if not header:
            raise RuntimeError("%s: %s" % (name, result["output"]))
        samples = int(header.group(1).replace(",", ""))
        running = samples * INTERVAL
        print("| %s | %d | %s | %.2f | %.1f | %.3f |" % (
            name, samples, header.group(2), result["seconds"], running, (result["seconds"] - running) / samples))


if __name__ == "__main__":
    main()
