"""Thread pointers (x86_64 `fs_base`) for debuggers that do not expose that register
(LLDB 14), or give a wrong one (LLDB's minidumps), read without running anything in the
inferior: glibc's own thread list, walked by the core (`rust-core/src/native/glibc.rs`,
which `tokio-async PID --nonblocking` uses too)."""

from typing import Callable, Dict, Optional


class ThreadPointerError(Exception):
    pass


def _core():
    from . import _core as core

    return core


def is_thread_pointer(value: int, read_memory: Callable[[int, int], Optional[bytes]]) -> bool:
    """Whether `value` can be an x86_64 thread pointer: the TLS ABI keeps the pointer's own
    value at its address (%fs:0). LLDB's minidump cores give fs_base as 0xffff."""
    return bool(value) and _core().is_thread_pointer(value, read_memory)


def glibc_thread_pointers(
    symbol_address: Callable[[str], Optional[int]],
    read_static: Callable[[int, int], Optional[bytes]],
    read_memory: Callable[[int, int], Optional[bytes]],
) -> Dict[int, int]:
    """{tid: thread pointer} for every thread glibc knows. `read_static` reads constant
    data (it may come from the library file); `read_memory` reads the inferior."""
    core = _core()
    try:
        return dict(core.glibc_thread_pointers(symbol_address, read_static, read_memory))
    except core.Error as error:
        raise ThreadPointerError(str(error)) from None
