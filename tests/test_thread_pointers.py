"""The read-only fs_base fallback for LLDB 14 and LLDB's minidumps (glibc's thread list), on
a synthetic memory image laid out the way glibc's `_thread_db_*` descriptors say; its
one-line failures; and the check that tells a thread pointer from a wrong register."""

import os
import struct
import sys

import pytest
from support.paths import REPO

sys.path.insert(0, os.path.join(REPO, "python"))

from tokio_async_glue.thread_pointers import ThreadPointerError, glibc_thread_pointers, is_thread_pointer

# Offsets glibc would publish: tid at 0x2d0 in struct pthread, the `list` link at 0x2c0,
# list_t.next at 0, and the two list heads inside _rtld_global.
LAYOUT = {
    "_thread_db_pthread_tid": 0x2D0,
    "_thread_db_pthread_list": 0x2C0,
    "_thread_db_list_t_next": 0,
    "_thread_db_rtld_global__dl_stack_used": 0x10,
    "_thread_db_rtld_global__dl_stack_user": 0x20,
}
RTLD_GLOBAL = 0x1000
DESCRIPTORS = 0x9000


def image(threads_used, threads_user):
    memory = {}
    symbols = {"_rtld_global": RTLD_GLOBAL}
    for i, (name, offset) in enumerate(LAYOUT.items()):
        address = DESCRIPTORS + 16 * i
        symbols[name] = address
        memory[address] = struct.pack("<III", 32, 1, offset)

    def link(head, threads):
        nodes = [pthread + LAYOUT["_thread_db_pthread_list"] for pthread, _ in threads]
        ring = [head] + nodes + [head]
        for here, following in zip(ring, ring[1:]):
            memory[here] = struct.pack("<Q", following)
        for pthread, tid in threads:
            memory[pthread + LAYOUT["_thread_db_pthread_tid"]] = struct.pack("<I", tid)

    link(RTLD_GLOBAL + LAYOUT["_thread_db_rtld_global__dl_stack_used"], threads_used)
    link(RTLD_GLOBAL + LAYOUT["_thread_db_rtld_global__dl_stack_user"], threads_user)

    def read(address, size):
        data = memory.get(address)
        return data[:size] if data is not None and len(data) >= size else None

    return symbols.get, read


def test_every_thread_on_both_lists_is_found():
    symbol, read = image([(0x7F0000010000, 101), (0x7F0000020000, 102)], [(0x7F0000030000, 100)])
    assert glibc_thread_pointers(symbol, read, read) == {101: 0x7F0000010000, 102: 0x7F0000020000, 100: 0x7F0000030000}


def test_missing_glibc_symbols_say_so():
    symbol, read = image([], [])
    with pytest.raises(ThreadPointerError, match=r"^glibc's _thread_db_pthread_tid is not readable"):
        glibc_thread_pointers(lambda name: None, read, read)


def test_a_static_glibc_says_so():
    """A statically linked glibc has its lists as plain variables and no descriptors."""
    _, read = image([], [])
    statics = {"_dl_stack_used": 0x2000, "_dl_stack_user": 0x2010}
    with pytest.raises(ThreadPointerError, match=r"^glibc is linked statically, and keeps no _thread_db_\* descriptors"):
        glibc_thread_pointers(statics.get, read, read)


def test_a_thread_pointer_points_at_itself():
    memory = {0x7F0000010000: struct.pack("<Q", 0x7F0000010000), 0xFFFF: None}
    assert is_thread_pointer(0x7F0000010000, lambda address, size: memory.get(address))
    assert not is_thread_pointer(0xFFFF, lambda address, size: memory.get(address))
    assert not is_thread_pointer(0x7F0000010008, lambda address, size: struct.pack("<Q", 0x7F0000010000))
    assert not is_thread_pointer(0, lambda address, size: struct.pack("<Q", 0))


def test_a_cyclic_list_ends():
    symbol, read = image([(0x7F0000010000, 101)], [])
    node = 0x7F0000010000 + LAYOUT["_thread_db_pthread_list"]

    def looping(address, size):
        if address == node:
            return struct.pack("<Q", node)  # points at itself
        return read(address, size)

    assert glibc_thread_pointers(symbol, read, looping) == {101: 0x7F0000010000}
