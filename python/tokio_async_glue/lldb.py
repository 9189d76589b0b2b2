"""In LLDB, `command script import tokio_async_glue.lldb` adds `async backtrace` /
`async bt`, for the package installed (pip, the wheel) into the Python LLDB embeds; same as
importing lldb-scripts/tokio_async.py."""


def __lldb_init_module(debugger, internal_dict):
    from . import lldb_adapter

    lldb_adapter.register(debugger)
