# Load with `source /path/to/gdb-scripts/tokio_async.py` (or put that line in ~/.gdbinit).
# Adds `async backtrace` / `async bt` [all] [--json]. GDB runs sourced files in a shared
# __main__, so this file only finds the package next to it and lets it register.
import os as _os
import sys as _sys

_package_root = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))), "python")
if _package_root not in _sys.path:
    _sys.path.insert(0, _package_root)

import tokio_async_glue.gdb_adapter as _tokio_async_gdb  # noqa: E402

_tokio_async_gdb.register()
