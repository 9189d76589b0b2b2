"""The `async backtrace` command, shared by both debuggers: parse arguments, gather
threads from the adapter, hand everything to the Rust core, return its output."""

import json
import os
import shlex
from typing import NamedTuple, Optional

from .adapter import DebuggerAdapter, StopCache, UserError

USAGE = "usage: async backtrace [all] [full] [--json] [--output FILE]"
HELP_ASYNC = "Async backtraces of the tokio tasks in the program being debugged."
HELP_BACKTRACE = (
    "Print each tokio thread's current future and await stack; `all` adds every task, `full` the locals "
    "kept across each await, `--json` prints JSON; `--output FILE` writes the report to FILE and prints one line."
)

_binaries = {}
# Loads started ahead of any command (`preload_for`), by the same key as `_binaries`.
_preloads = {}
_stop_cache = StopCache()


def _core():
    try:
        from . import _core as core
    except ImportError as error:
        raise UserError(
            "the Rust extension is not built (%s); run `make build` in the tokio-async checkout" % error
        )
    return core


class Arguments(NamedTuple):
    show_all: bool = False
    full: bool = False
    as_json: bool = False
    output: Optional[str] = None


def parse_arguments(argument_string: str) -> Arguments:
    try:
        words = shlex.split(argument_string)
    except ValueError as error:
        raise UserError("%s; %s" % (error, USAGE))
    arguments = Arguments()
    while words:
        word = words.pop(0)
        if word == "all":
            arguments = arguments._replace(show_all=True)
        elif word == "full":
            arguments = arguments._replace(full=True)
        elif word in ("--json", "-j"):
            arguments = arguments._replace(as_json=True)
        elif word in ("--output", "-o"):
            if not words:
                raise UserError("%s needs a file name; %s" % (word, USAGE))
            arguments = arguments._replace(output=os.path.abspath(os.path.expanduser(words.pop(0))))
        else:
            raise UserError("unknown argument %r; %s" % (word, USAGE))
    return arguments


def _binary_key(path: str, debug_dirs):
    """What a parsed executable is valid for: the file as it is now, and where its debug
    files were looked for."""
    try:
        stat = os.stat(path)
    except OSError as error:
        raise UserError("cannot read the executable %s: %s" % (path, error.strerror))
    return (path, stat.st_mtime_ns, stat.st_size, tuple(debug_dirs))


def preload_for(adapter: DebuggerAdapter) -> None:
    """Starts loading the adapter's executable's DWARF on the core's own thread, ahead of
    any command, as the debugger indexes its own symbols when it loads a file; only for
    programs that link tokio, so other programs cost nothing, and not with
    TOKIO_ASYNC_PRELOAD=0. Never raises: it is called from debugger events."""
    if os.environ.get("TOKIO_ASYNC_PRELOAD", "1") == "0":
        return
    try:
        path = adapter.executable_path()
        if not path:
            return
        debug_dirs = adapter.debug_file_directories()
        key = _binary_key(path, debug_dirs)
        if key not in _binaries and key not in _preloads:
            _preloads.clear()
            _preloads[key] = _core().start_loading(path, list(debug_dirs), True)
    except Exception:  # noqa: BLE001 - a failed preload only means the command loads later
        pass


def start_loading_binary(path: str, debug_dirs=()):
    """A function giving the core's parsed view of an executable. A view cached while the
    file and the debugger's debug-file directories are unchanged is given at once; a
    preloaded one when its load is done; else the DWARF loads on a thread of the core's own
    while the caller goes on (the debugger walks the stacks meanwhile)."""
    core = _core()
    key = _binary_key(path, debug_dirs)
    if key in _binaries:
        return lambda: _binaries[key]
    preloaded = _preloads.pop(key, None)
    pending = preloaded if preloaded is not None else core.start_loading(path, list(debug_dirs))

    def wait():
        binary, failure = pending.wait()
        if failure is not None and preloaded is not None:
            # Skipped or failed ahead of time: load now, and report what this load says.
            binary, failure = core.start_loading(path, list(debug_dirs)).wait()
        if failure is not None:
            raise UserError(failure[1])
        _binaries.clear()
        _binaries[key] = binary
        return binary

    return wait


def backtrace(adapter: DebuggerAdapter, argument_string: str) -> str:
    """Runs the command and returns its output; raises UserError with one line."""
    arguments = parse_arguments(argument_string)
    adapter.check_process()
    path = adapter.executable_path()
    if not path:
        raise UserError("the debugger does not know the program's executable; load it first (file PATH)")
    core = _core()
    loaded_binary = start_loading_binary(path, adapter.debug_file_directories())
    threads = _stop_cache.threads_of(adapter, core.block_on_frames())
    binary = loaded_binary()
    entry = adapter.entry_address()
    if entry is None:
        raise UserError("cannot find where the program was loaded (no AT_ENTRY in its auxiliary vector)")
    load_bias = (entry - binary.entry) & 0xFFFFFFFFFFFFFFFF
    request = json.dumps({"threads": [t.to_request() for t in threads], "all": arguments.show_all})
    status, output = core.backtrace(
        binary, load_bias, request, adapter.read_memory, adapter.live_pid(), arguments.as_json, arguments.full,
        arguments.output, adapter.core_file_path(),
        # Read everything through the debugger (to compare memory backends, or to rule one out).
        os.environ.get("TOKIO_ASYNC_MEMORY") == "debugger",
    )
    if status != "ok":
        raise UserError(output)
    return output
