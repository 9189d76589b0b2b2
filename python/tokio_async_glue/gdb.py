"""In GDB, `python import tokio_async_glue.gdb` adds `async backtrace` / `async bt`, for the
package installed (pip, the wheel) into the Python GDB embeds; same as sourcing
gdb-scripts/tokio_async.py. Importing twice is harmless."""

from . import gdb_adapter

gdb_adapter.register()
