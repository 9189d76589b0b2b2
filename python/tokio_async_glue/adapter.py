"""The debugger-neutral interface: all the core needs from a debugger."""

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
    locals: Dict[str, bytes] = field(default_factory=dict)
    local_errors: Dict[str, str] = field(default_factory=dict)

    def to_request(self):
        return {
            "pc": self.pc,
            "sp": self.sp,
            "inlined": self.inlined,
            "file": self.file,
            "line": self.line,
            "locals": {name: data.hex() for name, data in self.locals.items()},
            "local_errors": self.local_errors,
        }


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


def wants_locals(function_name: str, block_on_frames) -> List[str]:
    """Which locals to read in a frame, judged by the debugger's name for its function
    (the core decides from the pc whether it really is a block_on frame)."""
    if "block_on" not in function_name:
        return []
    return sorted({local for _, local in block_on_frames})


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

    def entry_address(self) -> Optional[int]:
        """The program's entry point as loaded, to derive the load bias."""
        raise NotImplementedError

    def threads(self, block_on_frames) -> List[ThreadInfo]:
        """Every thread with its innermost frames (at most MAX_FRAMES, innermost first,
        inlined calls as frames of their own); in frames `wants_locals` names, the bytes
        of those locals."""
        raise NotImplementedError

    def read_memory(self, address: int, size: int) -> Optional[bytes]:
        raise NotImplementedError

    def live_pid(self) -> Optional[int]:
        """The pid when the target is a live process on this machine (so the core may read
        /proc/PID/mem directly); None for core files and remote targets."""
        raise NotImplementedError
