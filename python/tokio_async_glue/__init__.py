"""tokio-async: async backtraces of tokio tasks inside GDB and LLDB.

The Rust extension `_core` does all DWARF parsing, runtime walking and rendering; this
package only adapts each debugger to one small interface (see `adapter.py`).
"""
