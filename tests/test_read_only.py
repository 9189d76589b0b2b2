"""Proof that the commands only read: at one stop, everything the inferior could have had
changed is captured before and after `async backtrace all full` (and the other commands):
every writable mapping's bytes, every thread's registers, the debugger's breakpoints and
selection, and what would move if the inferior were resumed or called into. GDB runs the
commands with `set may-call-functions off`; LLDB's stop counter, which expression
evaluation also moves, must stand still."""

import json

from support import build, expect
from support.checkpoint import locked_version
from support.inferior import script_step, tagged_lines

COMMANDS = ["async backtrace all full", "async backtrace all full --json", "async tasks", "async waits"]

# Runs inside the debugger, stopped at the checkpoint: snapshot, commands, snapshot, all
# at the same stop (nothing in between resumes the inferior).
READ_ONLY_SCRIPT = r'''
import hashlib, json

def writable_mappings():
    mappings = []
    with open("/proc/%d/maps" % pid()) as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(part, 16) for part in fields[0].split("-"))
            if "w" in fields[1]:
                mappings.append((start, end, fields[1], fields[5] if len(fields) > 5 else ""))
    return mappings

def memory_digests():
    """sha256 of every writable mapping, read from /proc/PID/mem (root, or the tracer may
    read it), else through the debugger."""
    digests = {}
    try:
        mem = open("/proc/%d/mem" % pid(), "rb", buffering=0)
    except OSError:
        mem = None
    for start, end, perms, name in writable_mappings():
        digest = hashlib.sha256()
        try:
            for at in range(start, end, 1 << 20):
                size = min(1 << 20, end - at)
                if mem is not None:
                    mem.seek(at)
                    chunk = mem.read(size)
                else:
                    chunk = read_memory(at, size)
                if len(chunk) != size:
                    raise OSError("short read at %#x" % at)
                digest.update(chunk)
            value = digest.hexdigest()
        except OSError as error:
            value = "unreadable: %s" % error
        digests["%#x-%#x %s %s" % (start, end, perms, name)] = value
    if mem is not None:
        mem.close()
    return digests

def snapshot():
    return {"memory": memory_digests(), "registers": registers(), "breakpoints": breakpoint_list(),
            "selection": selection(), "no_call": no_call_evidence()}

first = snapshot()
again = snapshot()
outputs = [run_command(command) for command in COMMANDS]
after = snapshot()
# Last, with the snapshots taken: that the checks would have seen a call.
call = try_inferior_call()
print("@@readonly " + json.dumps({"first": first, "again": again, "after": after, "outputs": outputs,
                                  "call": call, "after_call": no_call_evidence()}))
'''


def test_commands_change_nothing_in_the_inferior_or_the_debugger(debugger, tmp_path):
    binary = build.fixture("tokio-app", "dev")
    manifest = tmp_path / "manifest.json"
    body = "COMMANDS = %r\n" % COMMANDS + READ_ONLY_SCRIPT
    steps = [debugger.break_at("tokio_async_checkpoint"), "run"]
    if debugger.name == "gdb":
        steps.append("set may-call-functions off")
    steps.append(script_step(debugger, tmp_path / "read_only.py", body))
    run = debugger.run_steps(steps, program=binary, args=["breakpoint"], env={"FIXTURE_MANIFEST": str(manifest)})
    assert run.traceback_free(), run.stdout + run.stderr
    [line] = tagged_lines(run, "readonly")
    result = json.loads(line)
    first, again, after = result["first"], result["again"], result["after"]

    # The snapshot itself is stable at one stop, and it sees the program's memory: the
    # heap, the thread stacks, the executable's data.
    assert again == first
    memory = first["memory"]
    assert len(memory) >= 5 and not [key for key, value in memory.items() if value.startswith("unreadable")], memory
    assert any(key.endswith("[heap]") for key in memory) and any(key.endswith("[stack]") for key in memory)
    assert len(first["registers"]) == 3  # the main thread and two workers

    # The commands worked, with nothing to call into the program.
    text, report, tasks, waits = result["outputs"]
    report = json.loads(report)
    assert report["errors"] == []
    ids = json.loads(manifest.read_text())["tasks"]
    assert sorted(task["id"] for task in report["tasks"]) == sorted(ids[name] for name in expect.task_chains("breakpoint"))
    assert text.startswith("tokio %s: 1 runtime (MultiThread), 7 tasks\n" % locked_version("tokio")), text
    assert "tokio-async:" not in text + tasks + waits
    assert len(tasks.splitlines()) == 3 + 7, tasks  # the header, a blank line, the column titles, 7 tasks
    assert waits.rstrip().endswith("No deadlock found."), waits

    # And after them, nothing differs: not a byte, not a register, not a breakpoint's hit
    # count, not the selected thread; nothing resumed or called.
    changed = [part for part in ("memory", "registers", "breakpoints", "selection", "no_call") if after[part] != first[part]]
    assert changed == [], [(part, first[part], after[part]) for part in changed if part != "memory"]
    if debugger.name == "gdb":
        assert first["no_call"] == {"events": {name: 0 for name in first["no_call"]["events"]}, "may-call-functions": False}
        # The setting held: a call is refused.
        assert result["call"] == "Cannot call functions in the program: may-call-functions is off."
    else:
        # A call into the program (an expression) moves the counter the check relies on.
        assert "(int) $0 = " in result["call"], result["call"]
        assert result["after_call"]["stop_id_with_expressions"] > first["no_call"]["stop_id_with_expressions"]
