"""The boundary between the glue and the core, without a debugger: requests are typed
(the glue's own name threads and `all` only; a field the core does not know is an error),
failures are `_core.Error`
exceptions carrying their kind, and the glue's caches and its load ahead of the commands
behave as the commands need."""

import os
import sys
import threading

import pytest
from support import build
from support.paths import REPO

sys.path.insert(0, os.path.join(REPO, "python"))

from tokio_async_glue import _core, commands


def test_a_request_of_the_glue_names_threads_and_all_only():
    _core.Request([], all=True)
    _core.Request([])
    for arguments in ({"threads": [], "al": True}, {"threads": [], "view": "tasks"}, {}):
        with pytest.raises(TypeError):
            _core.Request(**arguments)
    thread = {"tid": 1, "name": None, "fs_base": None, "frames": [{"pc": 1, "sp": 2, "file": None, "line": None}]}
    _core.Request([thread])
    for threads, says in (
        ([dict(thread, frames=[dict(thread["frames"][0], pcs=3)])], "unknown field `pcs`"),
        ([dict(thread, tid="one")], "'str' object cannot be interpreted as an integer"),
        (3, "is not an instance of 'Sequence'"),
    ):
        with pytest.raises(_core.Error) as raised:
            _core.Request(threads)
        assert raised.value.kind == "internal"
        assert says in str(raised.value), str(raised.value)


def test_a_process_takes_keywords_only():
    with pytest.raises(TypeError):
        _core.Process(0, lambda address, size: None)
    _core.Process(load_bias=0, read_memory=lambda address, size: None, live_pid=None)


def test_a_stop_clock_names_what_saw_the_stop():
    for source in ("stop_event", "first_command"):
        _core.Process(load_bias=0, read_memory=lambda address, size: None, stop_clock=(1.0, 2.0, source))
    with pytest.raises(_core.Error) as raised:
        _core.Process(load_bias=0, read_memory=lambda address, size: None, stop_clock=(1.0, 2.0, "stop"))
    assert raised.value.kind == "internal"
    assert str(raised.value) == "a stop clock's source is stop_event or first_command, not \"stop\""


def test_a_failed_load_raises_with_its_kind():
    plain = build.fixture("plain-app", "dev")
    with pytest.raises(_core.Error) as raised:
        _core.start_loading(plain, only_if_tokio=True, index_ahead=False).wait()
    assert raised.value.kind == "not_tokio"
    assert "does not link tokio" in str(raised.value)
    with pytest.raises(_core.Error) as raised:
        _core.start_loading("/nonexistent/program").wait()
    assert raised.value.kind == "binary"


def test_a_command_on_a_program_with_no_thread_in_a_runtime_raises_no_runtime():
    binary = _core.start_loading(build.fixture("tokio-app", "dev"), index_ahead=False).wait()
    process = _core.Process(load_bias=0, read_memory=lambda address, size: None)
    with pytest.raises(_core.Error) as raised:
        _core.backtrace(binary, process, _core.Request([]))
    assert raised.value.kind == "no_runtime"
    # A request is used once.
    request = _core.Request([])
    with pytest.raises(_core.Error):
        _core.task_ids(binary, process, request)
    with pytest.raises(_core.Error) as raised:
        _core.task_ids(binary, process, request)
    assert "used twice" in str(raised.value)


class _NoProgram:
    """An adapter whose program cannot be read: preloading it fails in the glue."""

    def executable_path(self):
        raise RuntimeError("the debugger went away")


def test_a_failed_load_ahead_of_the_commands_is_said_by_the_next_command_once(monkeypatch):
    monkeypatch.setenv("TOKIO_ASYNC_PRELOAD", "1")
    commands.preload_for(_NoProgram())
    output, error = commands.execute(lambda: _NoProgram(), commands.TASKS, "--bad")
    assert output is None
    assert error.splitlines()[0] == "tokio-async: loading the program ahead of this command failed (RuntimeError: the debugger went away)"
    assert error.splitlines()[1].startswith("tokio-async: unknown argument '--bad'")
    output, error = commands.execute(lambda: _NoProgram(), commands.TASKS, "--bad")
    assert len(error.splitlines()) == 1, "said once"


def test_the_glue_caches_stay_whole_under_threads(monkeypatch):
    """LLDB preloads from a thread of its own while commands run on the main one."""
    monkeypatch.setenv("TOKIO_ASYNC_PRELOAD", "1")
    binary = build.fixture("tokio-app", "dev")

    class Adapter:
        def executable_path(self):
            return binary

        def debug_file_directories(self):
            return []

        def debug_file_path(self):
            return None

    errors = []

    def preload():
        try:
            for _ in range(50):
                commands.preload_for(Adapter())
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=preload) for _ in range(4)]
    for thread in threads:
        thread.start()
    loaded = commands.start_loading_binary(binary)()
    for thread in threads:
        thread.join()
    assert not errors
    assert loaded.entry > 0
    assert commands.start_loading_binary(binary)() is loaded, "cached"


def test_numbers_are_read_as_typed_with_or_without_separators():
    for typed in ("10001", "10,001", "10_001"):
        assert commands.parse_arguments(typed, commands.TASK).filter == {"ids": [10001]}
    assert commands.parse_arguments("--limit 1,000", commands.TASKS).filter == {"limit": 1000}
    for bad in ("10,01", "1,0001", ",100", "10__001", "0x10"):
        with pytest.raises(commands.UserError):
            commands.parse_arguments(bad, commands.TASK)


def test_help_and_completion_come_from_the_cores_table():
    """Every command's help, usage, words and flags are the core parser's own table: the
    glue keeps no copy (nothing to keep equal)."""
    table = {entry.name: entry for entry in _core.command_table()}
    assert sorted(table) == sorted(
        ["backtrace", "tasks", "task", "waits", "diff", "next", "step", "finish", "until-polled", "until-woken", "sample"]
    )
    assert commands.help_text("tasks").endswith("\nusage: async tasks [--json] [--output FILE] [--group] [FILTERS]")
    assert commands.help_text("until-woken").startswith("Continue until something wakes task TASK")
    state = next(option for option in commands.OPTIONS if option.long == "state")
    assert (state.short, state.value, state.commands) == ("s", "STATE", ("backtrace", "tasks"))
    assert state.choices == ("idle", "scheduled", "running", "complete", "cancelled")
    assert commands.WORDS == {"backtrace": ("all", "full"), "tasks": (), "task": ("full",), "waits": (), "diff": ()}
    assert commands.complete("tasks", "--state sch", lambda: None) == ["scheduled"]
    assert commands.complete("waits", "--", lambda: None) == ["--json", "--max-bytes", "--max-nodes", "--output", "--verbose"]


def test_bad_words_are_the_cores_one_line():
    for words, says in (
        ("--bad", "unknown argument '--bad'; usage: async tasks [--json] [--output FILE] [--group] [FILTERS]"),
        ("--limit", "--limit needs a number; usage: async tasks"),
        ("--stuck-for soon", "--stuck-for needs a number of seconds, not 'soon'"),
        ("'unclosed", "No closing quotation; usage: async tasks"),
    ):
        with pytest.raises(commands.UserError) as raised:
            commands.parse_arguments(words, commands.TASKS)
        assert str(raised.value).startswith(says), str(raised.value)
    assert commands.parse_arguments("--output ~/report.json", commands.TASKS).output == os.path.expanduser("~/report.json")


def test_sample_and_stepping_words_are_read_by_the_cores_parser_too():
    """`async sample` and the stepping commands are parsed once, by the core, with the
    usage lines the help shows."""
    options = commands.parse_sample("-i 0.25s --count=3 --svg ~/s.svg")
    assert (options.interval, options.count, options.folded) == (0.25, 3, None)
    assert str(options.svg) == os.path.expanduser("~/s.svg")
    assert commands.parse_stepping("until-polled", "42").task == 42
    assert commands.parse_stepping("finish", "--own-frame").own_frame
    for parse, says in (
        (lambda: commands.parse_sample("--bad"),
         "unknown argument '--bad'; usage: async sample [--interval SECONDS] [--count N] [--output FILE.folded] "
         "[--svg FILE.svg]"),
        (lambda: commands.parse_sample("--count 0"), "--count needs a number of samples from 1 to 100000, not '0'"),
        (lambda: commands.parse_sample("'open"), "No closing quotation; usage: async sample"),
        (lambda: commands.parse_stepping("until-woken", ""), "which task? usage: async until-woken TASK"),
        (lambda: commands.parse_stepping("step", "now"), "step takes no arguments; usage: async step"),
    ):
        with pytest.raises(commands.UserError) as raised:
            parse()
        assert str(raised.value).startswith(says), str(raised.value)
    assert commands.help_text("next").endswith("\nusage: async next [--own-frame]")


def test_verbose_says_where_the_debugger_walked_the_stacks():
    """Where the core reads no files of the target (a remote target, a minidump), the
    threads are the debugger's walk: `--verbose` says so in place of the core's notes."""
    walked = [{"tid": 1, "name": "main", "fs_base": None, "frames": []}]
    assert commands._unwind_notes(walked) == (
        "tokio-async: the debugger walked the stacks (the core unwinds them where it reads the program's files "
        "itself, a live process here or a core file the debugger names, unless TOKIO_ASYNC_FRAMES=debugger)\n")
