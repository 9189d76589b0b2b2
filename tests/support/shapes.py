"""tokio's build shapes: the feature sets a program can build tokio with that change the
layouts this tool reads (docs/layouts.md). Each fixture program declares the tokio features
it uses; its default feature `tokio-full` adds tokio's `full`, and `multi-thread` adds the
multi-thread scheduler alone.

- `full`: tokio's `full` features (the default build), with `parking_lot`: tokio's
  internal `Mutex` is `(PhantomData, lock_api::Mutex)`;
- `minimal`: only what the program uses, without `parking_lot`: that `Mutex` wraps
  `std::sync::Mutex`;
- `current-thread-only`: `rt` without `rt-multi-thread`: the scheduler enums have one
  variant (programs built this way run only current_thread runtimes and LocalSets).

FIXTURE_SHAPE selects the shape every fixture of a test run is built in (default `full`);
each shape has a target dir of its own, so switching never rebuilds another's tokio."""

import os
from typing import List, NamedTuple

from .paths import REPO


class Shape(NamedTuple):
    name: str
    cargo_args: List[str]
    target_dir: str
    multi_thread: bool = True


FULL = Shape("full", [], os.path.join(REPO, "target", "fixtures"))
MINIMAL = Shape("minimal", ["--no-default-features", "--features", "multi-thread"], os.path.join(REPO, "target", "fixtures-minimal"))
CURRENT_THREAD_ONLY = Shape(
    "current-thread-only", ["--no-default-features"], os.path.join(REPO, "target", "fixtures-current-thread-only"), multi_thread=False
)
ALL = [FULL, MINIMAL, CURRENT_THREAD_ONLY]
# Fixtures that do not link tokio have no shapes (and no shape features).
WITHOUT_TOKIO = {"plain-app"}
BY_NAME = {shape.name: shape for shape in ALL}


def selected() -> Shape:
    """The shape of this test run: FIXTURE_SHAPE, else `full`."""
    name = os.environ.get("FIXTURE_SHAPE", FULL.name)
    if name not in BY_NAME:
        raise RuntimeError("FIXTURE_SHAPE=%s: not one of %s" % (name, ", ".join(BY_NAME)))
    return BY_NAME[name]
