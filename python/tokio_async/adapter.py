"""The debugger-neutral interface: all the core needs from a debugger."""

from dataclasses import dataclass
from typing import List, Optional


class UserError(Exception):
    """A problem the user can act on; shown as one line, never as a traceback."""


@dataclass
class BlockOnFrame:
    """The frame that polls a `block_on` future, and the raw bytes of its future local."""

    function: str
    local_bytes: Optional[bytes]
    error: Optional[str] = None

    def to_request(self):
        return {
            "function": self.function,
            "local_bytes": self.local_bytes.hex() if self.local_bytes is not None else None,
            "error": self.error,
        }


@dataclass
class FrameInfo:
    function: str
    file: Optional[str]
    line: Optional[int]


@dataclass
class ThreadInfo:
    tid: int
    name: Optional[str]
    fs_base: Optional[int]
    block_on: Optional[BlockOnFrame]
    frames: List[FrameInfo]

    def to_request(self):
        return {
            "tid": self.tid,
            "name": self.name,
            "fs_base": self.fs_base,
            "block_on": self.block_on.to_request() if self.block_on else None,
            "frames": [{"function": f.function, "file": f.file, "line": f.line} for f in self.frames],
        }


MAX_FRAMES = 128


class DebuggerAdapter:
    """What one debugger supplies. Implementations are read-only: they never write the
    inferior's memory, call its functions, or resume it."""

    def check_process(self) -> None:
        """Raise UserError if there is no process or core to inspect."""
        raise NotImplementedError

    def executable_path(self) -> str:
        raise NotImplementedError

    def entry_address(self) -> Optional[int]:
        """The program's entry point as loaded (AT_ENTRY), to derive the load bias."""
        raise NotImplementedError

    def threads(self, block_on_frames) -> List[ThreadInfo]:
        """Every thread with its innermost frames (at most MAX_FRAMES, innermost first) and
        the first frame matching one of `block_on_frames` ((function prefix, local name)
        pairs) with that local's bytes."""
        raise NotImplementedError

    def read_memory(self, address: int, size: int) -> Optional[bytes]:
        raise NotImplementedError

    def live_pid(self) -> Optional[int]:
        """The pid when the target is a live process on this machine (so the core may read
        /proc/PID/mem directly); None for core files and remote targets."""
        raise NotImplementedError
