"""The debugger-neutral interface: all the core needs from a debugger."""

import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Dict, List, Optional

# Frames read per thread, innermost first: enough to reach a worker's task poll and the
# block_on frame of a thread, bounded so a deep recursion cannot stall the debugger.
MAX_FRAMES = 128


class UserError(Exception):
    """A problem the user can act on; shown as one line, never as a traceback."""


@dataclass
class FrameInfo:
    pc: int
    inlined: bool
    file: Optional[str]
    line: Optional[int]
    sp: Optional[int] = None
    fp: Optional[int] = None
    locals: Dict[str, bytes] = field(default_factory=dict)
    local_errors: Dict[str, str] = field(default_factory=dict)

    def to_request(self):
        # Only what is known: a thread of 60 frames, times 64 threads, adds up.
        request = {"pc": self.pc, "inlined": self.inlined, "file": self.file, "line": self.line}
        if self.sp is not None:
            request["sp"] = self.sp
        if self.fp is not None:
            request["fp"] = self.fp
        if self.locals:
            request["locals"] = dict(self.locals)
        if self.local_errors:
            request["local_errors"] = self.local_errors
        return request


@dataclass
class ThreadInfo:
    tid: int
    name: Optional[str]
    fs_base: Optional[int]
    frames: List[FrameInfo]

    def to_request(self):
        return {
            "tid": self.tid,
            "name": self.name,
            "fs_base": self.fs_base,
            "frames": [frame.to_request() for frame in self.frames],
        }


@dataclass
class FrameNeeds:
    line: bool
    # The stack and frame pointers (the frame pointer is the frame base of code built
    # with `-C force-frame-pointers`).
    registers: bool
    locals: List[str]


class FrameNeedsOfThread:
    """What the core needs of each frame of one thread, innermost first, judged by the
    debugger's name for the frame's function (the core decides from the pc what the frame
    really is). Reading only that keeps a walk of 64 threads cheap:
    - the local that holds a `block_on` future, in the innermost frame of a function the
      core names for it (the one frame the core reads it from), and only when that frame
      is an inlined call: in a physical frame the core finds the local from DWARF and the
      stack pointer, and LLDB's first look-up of a local costs a whole-program name index
      (0.4 s on a 70 MB binary);
    - the stack and frame pointers from the first frame named like `block_on` outward
      (the local is found with them, or the future searched for there);
    - file:line only in coroutine bodies, where it says where a running async fn is
      (GDB names them `{async_fn#0}`, `{async_block#0}`, LLDB also `{{closure}}`)."""

    def __init__(self, block_on_frames):
        self.block_on_locals = dict(block_on_frames)
        self.seen_block_on = False
        self.found_block_on_local = False

    def of(self, function_name: str, inlined: bool) -> FrameNeeds:
        is_block_on = "block_on" in function_name
        self.seen_block_on = self.seen_block_on or is_block_on
        local = None
        if is_block_on and not self.found_block_on_local:
            local = self.block_on_locals.get(_function_path(function_name))
            self.found_block_on_local = local is not None
        return FrameNeeds(
            line="{async" in function_name or "closure" in function_name,
            registers=self.seen_block_on,
            # The core's `local_pointer_from_dwarf` reads it in physical frames.
            locals=[local] if local and inlined else [],
        )


def _function_path(function_name: str) -> str:
    """A debugger's name for a function as the core's paths spell it, without generic
    arguments or the symbol hash: GDB's `a::B::f<T>`, LLDB's `a::B::f::h0123456789abcdef`
    (legacy mangling) and `<a::B>::f::<T>` (v0 mangling) all give `a::B::f`; a closure in
    it stays one (`a::B::f::{closure#0}`)."""
    path = re.sub(r"::h[0-9a-f]{16}$", "", function_name)
    inherent = re.match(r"<([^<>]*)>::(.*)$", path)
    if inherent:
        path = inherent.group(1) + "::" + inherent.group(2)
    kept, depth = [], 0
    for at, char in enumerate(path):
        if char == "<":
            depth += 1
        elif char == ">" and path[at - 1 : at] != "-":
            depth -= 1
        elif depth == 0:
            kept.append(char)
    return "".join(kept).replace("::::", "::").rstrip(":")


@dataclass
class ThreadRegisters:
    tid: int
    name: Optional[str]
    fs_base: Optional[int]
    # Where the thread stopped (its newest frame), by DWARF number; None where unknown.
    registers: List[Optional[int]]

    def to_request(self):
        return {"tid": self.tid, "name": self.name, "fs_base": self.fs_base, "registers": self.registers}


class StopCache:
    """The threads and frames of one stop, kept for the next command on the same stop: the
    stack walk is most of a warm call over many threads (GDB caches frames the same way)."""

    def __init__(self):
        self.key = None
        self.threads = None

    def threads_of(self, adapter: "DebuggerAdapter", read):
        """The threads `read()` gave at this stop, read again only at another."""
        key = adapter.stop_key()
        if key is None or key != self.key:
            self.key, self.threads = None, None
            threads = read()
            self.key, self.threads = key, threads
        return self.threads


class StopClocks:
    """When each stop happened, by the debugger's key for the stop: the time of its stop
    event where the debugger gives one (or a resume of ours ended there), else the time of
    the first command run at it. A report's `taken_at`, and the time left on each sleep,
    are against this moment, not against when a later command runs."""

    KEPT = 64

    def __init__(self):
        self._clocks = OrderedDict()

    def saw_stop(self, key, source: str = "stop_event"):
        """(Unix seconds, CLOCK_MONOTONIC seconds, source): Python's monotonic clock is the
        kernel's CLOCK_MONOTONIC, which tokio's Instant counts in."""
        self._clocks[key] = (time.time(), time.monotonic(), source)
        self._clocks.move_to_end(key)
        while len(self._clocks) > self.KEPT:
            self._clocks.popitem(last=False)

    def clock_of(self, key):
        if key not in self._clocks:
            self.saw_stop(key, "first_command")
        return self._clocks[key]


class DebuggerAdapter:
    """What one debugger supplies. Implementations are read-only: they never write the
    inferior's memory, call its functions, or resume it."""

    def check_process(self) -> None:
        """Raise UserError if there is no process or core to inspect."""
        raise NotImplementedError

    def executable_path(self) -> Optional[str]:
        raise NotImplementedError

    def debug_file_directories(self) -> List[str]:
        """Where the debugger looks for separate debug files (its own setting); the core
        also looks in /usr/lib/debug."""
        return []

    def executable_build_id(self) -> Optional[str]:
        """The GNU build id, in lowercase hex, of the executable as the debugger loaded it
        (from a remote target, the target's file); None when it does not say."""
        return None

    def debug_file_path(self) -> Optional[str]:
        """The separate debug file the debugger loaded for the executable, however it found
        it (debuginfod, `target symbols add`); None when it uses the executable's own."""
        return None

    def entry_address(self) -> Optional[int]:
        """The program's entry point as loaded, to derive the load bias."""
        raise NotImplementedError

    def threads(self, block_on_frames) -> List[ThreadInfo]:
        """Every thread with its innermost frames (at most MAX_FRAMES, innermost first,
        inlined calls as frames of their own), each with what `FrameNeedsOfThread` asks."""
        raise NotImplementedError

    def thread_registers(self) -> List[ThreadRegisters]:
        """Every thread with the registers of its newest frame, by DWARF number (the
        core's `register_names().by_dwarf_number`): the core unwinds the stacks from them."""
        raise NotImplementedError

    def read_memory(self, address: int, size: int) -> Optional[bytes]:
        raise NotImplementedError

    def stop_key(self):
        """A value that changes whenever the threads' stacks may have: the inferior ran,
        stopped, or had memory or registers written. Equal keys let a command reuse the
        previous command's walk of the stacks; None never does."""
        return None

    def core_file_path(self) -> Optional[str]:
        """The core file being debugged, so the core may read it itself; None otherwise."""
        return None

    def stop_clock(self):
        """When the program stopped: (Unix seconds, CLOCK_MONOTONIC seconds, `stop_event`
        or `first_command`); None where unknown. A core's own time is the core's to say."""
        return None

    def target_key(self) -> Optional[str]:
        """What names this target among others (`pid 1234`, `core /path`): the snapshots of
        its stops are kept under it for `async diff`; None keeps none."""
        pid, core = self.live_pid(), self.core_file_path()
        if core:
            return "core %s" % core
        if pid is not None:
            return "pid %d" % pid
        return None

    def is_core(self) -> bool:
        """Whether the target is a core file (which cannot run)."""
        return self.core_file_path() is not None

    def text_style(self) -> Optional[Dict[str, str]]:
        """Escape sequences for `function`, `file` and `state` in text output, in the
        debugger's own styles; None when its colour is off or its output is no terminal."""
        return None

    def interrupt_requested(self) -> bool:
        """Whether the user asked the running command to stop, where the debugger says so
        itself (LLDB); GDB raises KeyboardInterrupt instead."""
        return False

    def live_pid(self) -> Optional[int]:
        """The pid when the target is a live process on this machine (so the core may read
        /proc/PID/mem directly); None for core files and remote targets."""
        raise NotImplementedError

    def how_to_load_running_executable(self, pid: int) -> str:
        """The debugger's commands that load the executable process `pid` runs, from
        /proc/PID/exe, which still reads after the file was deleted or replaced."""
        raise NotImplementedError


_COLOURS = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
_INTENSITIES = {"bold": "1", "dim": "2", "faint": "2"}


def ansi_escape(foreground: str = "none", background: str = "none", intensity: str = "normal") -> str:
    """An SGR escape from colour settings as GDB spells them (`yellow`, `none`, `#ff8800`,
    a number of the 256-colour palette); empty when nothing is set."""
    codes = []

    def colour(value: str, base: int):
        value = (value or "none").strip().lower()
        if value in _COLOURS:
            codes.append(str(base + _COLOURS.index(value)))
        elif value.isdigit():
            codes.append("%d;5;%s" % (base + 8, value))
        elif value.startswith("#") and len(value) == 7:
            try:
                red, green, blue = (int(value[i:i + 2], 16) for i in (1, 3, 5))
            except ValueError:
                return
            codes.append("%d;2;%d;%d;%d" % (base + 8, red, green, blue))

    colour(foreground, 30)
    colour(background, 40)
    if (intensity or "").lower() in _INTENSITIES:
        codes.append(_INTENSITIES[intensity.lower()])
    return "\x1b[%sm" % ";".join(codes) if codes else ""
