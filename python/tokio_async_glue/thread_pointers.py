"""Thread pointers (x86_64 `fs_base`) for debuggers that do not expose that register
(LLDB 14), read without running anything in the inferior: glibc keeps every thread's
`struct pthread` on two lists in ld.so's `_rtld_global`, and exports for libthread_db
the layout of the fields involved as `_thread_db_*` descriptors. On x86_64 the thread
pointer is the address of the thread's `struct pthread`."""

from typing import Callable, Dict, Optional

MAX_THREADS = 1 << 16
POINTER_SIZE = 8

# Each `_thread_db_<struct>_<field>` descriptor is three uint32: bit size, count, offset.
DESCRIPTORS = (
    "_thread_db_pthread_tid",
    "_thread_db_pthread_list",
    "_thread_db_list_t_next",
    "_thread_db_rtld_global__dl_stack_used",
    "_thread_db_rtld_global__dl_stack_user",
)


class ThreadPointerError(Exception):
    pass


def is_thread_pointer(value: int, read_memory: Callable[[int, int], Optional[bytes]]) -> bool:
    """Whether `value` can be an x86_64 thread pointer: the TLS ABI keeps the pointer's own
    value at its address (%fs:0). LLDB's minidump cores give fs_base as 0xffff."""
    data = read_memory(value, POINTER_SIZE) if value else None
    return data is not None and int.from_bytes(data, "little") == value


def glibc_thread_pointers(
    symbol_address: Callable[[str], Optional[int]],
    read_static: Callable[[int, int], Optional[bytes]],
    read_memory: Callable[[int, int], Optional[bytes]],
) -> Dict[int, int]:
    """{tid: thread pointer} for every thread glibc knows. `read_static` reads constant
    data (it may come from the library file); `read_memory` reads the inferior."""
    offsets = {}
    for name in DESCRIPTORS:
        address = symbol_address(name)
        data = read_static(address, 12) if address is not None else None
        if data is None:
            if symbol_address("_rtld_global") is None and symbol_address("_dl_stack_used") is not None:
                raise ThreadPointerError(
                    "glibc is linked statically, and keeps no _thread_db_* descriptors to read its thread list by"
                )
            raise ThreadPointerError("glibc's %s is not readable (not glibc, or no libc symbols)" % name)
        offsets[name] = int.from_bytes(data[8:12], "little")
    rtld_global = symbol_address("_rtld_global")
    if rtld_global is None:
        raise ThreadPointerError("ld.so's _rtld_global is not found")

    def pointer_at(address):
        data = read_memory(address, POINTER_SIZE)
        if data is None:
            raise ThreadPointerError("cannot read glibc's thread list at %#x" % address)
        return int.from_bytes(data, "little")

    result = {}
    for list_name in ("_thread_db_rtld_global__dl_stack_used", "_thread_db_rtld_global__dl_stack_user"):
        head = rtld_global + offsets[list_name]
        node = pointer_at(head + offsets["_thread_db_list_t_next"])
        seen = set()
        while node != head and node not in seen and len(seen) < MAX_THREADS:
            seen.add(node)
            descriptor = node - offsets["_thread_db_pthread_list"]
            tid = read_memory(descriptor + offsets["_thread_db_pthread_tid"], 4)
            if tid is None:
                raise ThreadPointerError("cannot read a thread id in glibc's thread list")
            result[int.from_bytes(tid, "little")] = descriptor
            node = pointer_at(node + offsets["_thread_db_list_t_next"])
    return result
