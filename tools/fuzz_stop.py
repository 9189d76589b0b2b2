"""Sourced by GDB (after gdb-scripts/tokio_async.py) at a fixture's stop, for `make
fuzz-images`: writes the request the glue would send for `async bt all full --json` (the
threads, their thread pointers and frames, and the block_on local as GDB reads it) and the
load bias to $FUZZ_STOP_JSON, then a core file of the stop to $FUZZ_STOP_CORE.
tools/fuzz_images.py drives it."""

import json
import os

import gdb
from tokio_async_glue import adapter as glue_adapter
from tokio_async_glue import commands
from tokio_async_glue.gdb_adapter import GdbAdapter

# The glue asks GDB for a block_on local only in inlined frames (the core finds it from
# DWARF in physical ones). Recorded stops keep what GDB reads in physical frames too: it is
# what rust-core/tests/suite/frame_locals.rs checks the DWARF reading against.
_needs_of = glue_adapter.FrameNeedsOfThread.of
glue_adapter.FrameNeedsOfThread.of = lambda self, function_name, inlined: _needs_of(self, function_name, True)

adapter = GdbAdapter()
_, load_bias, threads = commands._stopped_program(adapter)
stop = {
    "load_bias": load_bias,
    "request": {
        "threads": [thread.to_request() for thread in threads],
        "all": True,
        "locals": True,
        "group": True,
        "wait_edges": True,
    },
}
# JSON has no bytes: the locals' are written in hex, as the core reads them back.
with open(os.environ["FUZZ_STOP_JSON"], "w") as out:
    json.dump(stop, out, default=lambda data: data.hex())
gdb.execute("gcore %s" % os.environ["FUZZ_STOP_CORE"], to_string=True)
