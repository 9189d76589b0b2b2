"""Cores LLDB writes itself (`process save-core`): on Linux they are minidumps, in three
styles. `full` and `modified-memory` give the report the live process gave, in LLDB 19
and in LLDB 14 (which cannot write one, but reads them); `stack` keeps no heap, and says
how to save one that does. GDB does not read minidumps."""

import json
import re

import pytest
from support import build
from support.debuggers import LLDB_14, Lldb, capture

PROFILES = ["dev", "release"]
STYLES = ["full", "modified-memory", "stack"]


@pytest.fixture(scope="module", params=PROFILES)
def minidumps(request, tmp_path_factory):
    """The fixture's live report at its checkpoint, then one minidump per style of that stop."""
    directory = tmp_path_factory.mktemp("minidump-%s" % request.param)
    binary = build.fixture("tokio-app", request.param)
    cores = {style: str(directory / ("%s.dmp" % style)) for style in STYLES}
    lldb = Lldb()
    steps = [lldb.break_at("tokio_async_checkpoint"), "run"] + capture(lldb, "async bt all --json")
    steps += ["process save-core -s %s %s" % (style, path) for style, path in cores.items()]
    run = lldb.run_steps(steps, program=binary, args=["breakpoint"], env={"FIXTURE_MANIFEST": str(directory / "manifest.json")})
    [live] = run.json_sections()
    with open(cores["full"], "rb") as core:
        assert core.read(4) == b"MDMP", run.stdout + run.stderr
    return binary, live, cores


def as_a_core_reports(live):
    """The live report less what a core does not say: where memory came from, the threads'
    names (LLDB writes none into a minidump), and the time left on a deadline (a minidump
    holds no clock: the deadline is given on its own)."""
    report = json.loads(json.dumps(live))
    report.pop("memory_source")
    report.pop("stack_source")
    report.pop("taken_at")
    for thread in report["threads"]:
        thread["name"] = None

    def without_clock(node):
        if isinstance(node, dict):
            detail = node.get("detail")
            if isinstance(detail, dict) and isinstance(detail.get("deadline"), dict):
                at = detail["deadline"]["secs"] + detail["deadline"]["nanos"] / 1e9
                detail["remaining_secs"] = None
                node["summary"] = re.sub(r"until [+-][0-9.]+s", "until %.3fs on the monotonic clock" % at, node["summary"])
            for value in node.values():
                without_clock(value)
        elif isinstance(node, list):
            for value in node:
                without_clock(value)

    without_clock(report)
    return report


@pytest.mark.parametrize("debugger", [Lldb(), LLDB_14], ids=["lldb", "lldb14"])
@pytest.mark.parametrize("style", ["full", "modified-memory"])
def test_an_lldb_minidump_gives_the_live_report(minidumps, debugger, style):
    binary, live, cores = minidumps
    run = debugger.run_steps(capture(debugger, "async bt all --json"), program=binary, core=cores[style])
    sections = run.json_sections()
    assert len(sections) == 1, run.stdout + run.stderr
    [report] = sections
    # A minidump names no mapped files: LLDB walks the stacks.
    assert (report.pop("memory_source"), report.pop("stack_source")) == ("debugger", "debugger")
    # A minidump's time is not read.
    assert "taken_at" not in report
    assert report == as_a_core_reports(live)


@pytest.mark.parametrize("debugger", [Lldb(), LLDB_14], ids=["lldb", "lldb14"])
def test_a_minidump_of_the_stacks_alone_says_how_to_save_one(minidumps, debugger):
    binary, _, cores = minidumps
    run = debugger.run_steps(["async bt all"], program=binary, core=cores["stack"])
    [error] = run.error_lines()
    assert re.fullmatch(
        re.escape(
            "tokio-async: this core is an LLDB minidump, which gives no thread pointers, and glibc's thread list is "
            "not readable in it (cannot read glibc's thread list at "
        )
        + "0x[0-9a-f]+"
        + re.escape(
            "): `process save-core` keeps only the threads' stacks unless asked; save it with "
            "`process save-core -s modified-memory FILE` or `-s full`"
        ),
        error,
    ), error
    assert run.traceback_free()
