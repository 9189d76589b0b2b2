"""Debug information where real builds put it, in GDB and LLDB: split DWARF (rustc's `.dwp`
and `.dwo` files), a separate debug file found by `.gnu_debuglink` or by build id (the
debugger told where to look), compressed debug sections, and DWARF 5. Each variant of the
tokio-app fixture must give the full dev-build report at the checkpoint: every task's chain,
the workers, and the block_on thread's future, which the debugger reads from a local (so
the debugger, too, must have found the DWARF)."""

import glob
import json
import os
import shutil

import pytest
from support import build
from support.debuggers import capture
from test_backtrace import assert_breakpoint_report
from test_bad_input import ALIVE, assert_no_debug_file_found, assert_still_working

SEPARATE_LAYOUTS = ["debuglink", "debuglink-subdir", "debuglink-debug-dir", "build-id"]


def debug_dir_step(debugger, directory):
    """Tells the debugger where separate debug files are (the tool reads the same setting)."""
    if debugger.name == "gdb":
        return "set debug-file-directory %s" % directory
    return "settings set target.debug-file-search-paths %s" % directory


def load_program_step(debugger, binary):
    return "file %s" % binary if debugger.name == "gdb" else "target create %s" % binary


def run_to_checkpoint(debugger, tmp_path, binary, debug_dir, commands):
    """The debugger is told `debug_dir` (if any) before it loads the program: both debuggers
    look for debug files once, when they load it."""
    steps = [debug_dir_step(debugger, debug_dir)] if debug_dir else []
    steps += [load_program_step(debugger, binary), debugger.break_at("tokio_async_checkpoint"), "run breakpoint"]
    return debugger.run_steps(steps + commands, env={"FIXTURE_MANIFEST": str(tmp_path / "manifest.json")})


def report_at_checkpoint(debugger, tmp_path, binary, debug_dir=None):
    manifest = tmp_path / "manifest.json"
    run = run_to_checkpoint(debugger, tmp_path, binary, debug_dir, capture(debugger, "async bt all --json"))
    assert manifest.exists(), run.stdout + run.stderr
    sections = run.sections()
    assert len(sections) == 1 and not run.error_lines(), run.stdout + run.stderr
    return json.loads(sections[0]), json.loads(manifest.read_text()), run


@pytest.mark.parametrize("profile", ["split-packed", "split-unpacked"])
def test_split_dwarf(debugger, tmp_path, profile):
    report, manifest, _ = report_at_checkpoint(debugger, tmp_path, build.fixture("tokio-app", profile))
    assert_breakpoint_report(report, manifest, "dev")


@pytest.mark.parametrize("layout", SEPARATE_LAYOUTS)
def test_separate_debug_file(debugger, tmp_path, layout):
    binary, debug_dir = build.separate_debug_fixture(layout)
    report, manifest, _ = report_at_checkpoint(debugger, tmp_path, binary, debug_dir)
    assert_breakpoint_report(report, manifest, "dev")


@pytest.mark.parametrize("kind", ["zlib", "zstd"])
def test_compressed_debug_sections(debugger, tmp_path, kind):
    report, manifest, run = report_at_checkpoint(debugger, tmp_path, build.compressed_fixture(kind))
    if debugger.name == "lldb14" and kind == "zstd":
        # LLDB 14 predates zstd (LLVM 16 added it) and reads none of the DWARF. The tool
        # reads it itself and unwinds the stacks from the threads' registers, so nothing
        # is missing (the running task's line came from LLDB's frames before).
        assert "unsupported compression type" in run.stderr
    assert_breakpoint_report(report, manifest, "dev")


@pytest.mark.parametrize("profile", ["dev", "split-unpacked"])
def test_dwarf5(debugger, tmp_path, profile):
    """DWARF 5 forms (strx, addrx, rnglistx, loclists, v5 line tables), and split into
    .dwo files the DWARF 5 way (skeleton units, DW_AT_dwo_name)."""
    report, manifest, _ = report_at_checkpoint(debugger, tmp_path, build.dwarf5_fixture("tokio-app", profile))
    assert_breakpoint_report(report, manifest, "dev")


def test_a_debug_file_the_debugger_found_its_own_way(debugger, tmp_path):
    """GDB through debuginfod (a hit in its client's cache; the server is unreachable),
    LLDB through `target symbols add`: the file is in none of the places the tool searches
    itself (named `debuginfo`, under a cache directory), and the tool reads the one the
    debugger loaded."""
    binary, debug_dir = build.separate_debug_fixture("build-id")
    [debug_file] = glob.glob(os.path.join(debug_dir, ".build-id", "*", "*.debug"))
    build_id = os.path.basename(os.path.dirname(debug_file)) + os.path.basename(debug_file)[: -len(".debug")]
    cached = tmp_path / "debuginfod" / build_id / "debuginfo"
    cached.parent.mkdir(parents=True)
    shutil.copy(debug_file, cached)
    manifest = tmp_path / "manifest.json"
    env = {"FIXTURE_MANIFEST": str(manifest)}
    if debugger.name == "gdb":
        env.update(DEBUGINFOD_URLS="http://127.0.0.1:9", DEBUGINFOD_CACHE_PATH=str(tmp_path / "debuginfod"))
        steps = ["set debuginfod enabled on", load_program_step(debugger, binary)]
    else:
        steps = [load_program_step(debugger, binary), "target symbols add %s" % cached]
    steps += [debugger.break_at("tokio_async_checkpoint"), "run breakpoint"] + capture(debugger, "async bt all --json")
    run = debugger.run_steps(steps, env=env)
    assert manifest.exists(), run.stdout + run.stderr
    [report] = run.json_sections()
    assert_breakpoint_report(report, json.loads(manifest.read_text()), "dev")


def test_a_separate_debug_file_the_debugger_was_not_told_about(debugger, tmp_path):
    """Found by build id only under a directory the debugger does not search: one line
    naming where the tool looked (the system's directory)."""
    binary, _ = build.separate_debug_fixture("build-id")
    # Attached: without its debug file the binary has no symbol to break at.
    assert_no_debug_file_found(debugger, tmp_path, binary)


def test_split_package_missing(debugger, tmp_path):
    """A split-packed binary without its .dwp: one line naming the package and .dwo files
    it looked for."""
    binary = build.without_package_fixture()
    run = run_to_checkpoint(debugger, tmp_path, binary, None, ["async backtrace all", debugger.echo(ALIVE)])
    [line] = run.error_lines()
    prefix = "tokio-async: %s cannot be inspected: its DWARF is split (-C split-debuginfo) and none of its " % binary
    assert line.startswith(prefix), line
    assert " split units was found: no %s.dwp, no /" % binary in line, line
    assert line.endswith(
        "; keep the .dwp next to the executable, or the .dwo files where the build wrote them"
    ), line
    assert_still_working(run)
