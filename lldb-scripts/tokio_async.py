# Load with `command script import /path/to/lldb-scripts/tokio_async.py` (or put that line
# in ~/.lldbinit). Adds `async backtrace` / `async bt` [all] [--json]. LLDB imports this
# file as a module named `tokio_async`, so the package it loads has another name.
import os
import sys

_package_root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
if _package_root not in sys.path:
    sys.path.insert(0, _package_root)


def __lldb_init_module(debugger, internal_dict):
    import tokio_async_glue.lldb_adapter

    tokio_async_glue.lldb_adapter.register(debugger)
