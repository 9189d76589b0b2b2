"""tokio's build shapes (support/shapes.py) on the newest tokio. The whole suite runs with
tokio's `full` features (parking_lot's Mutex inside tokio); here the fixtures built with
only the features they use, without parking_lot (`minimal`: std's Mutex inside tokio), and
without the multi-thread scheduler (`current-thread-only`: tokio's scheduler enums have
one variant), must give the same reports. `make test-shapes` runs the whole suite in the
minimal shape; `make test-versions` crosses the shapes with every tokio minor."""

import pytest
from support import build, shapes
from support.checkpoint import locked_version, markers_of, run_to_checkpoint
from test_versions import CURRENT_THREAD_FLAVORS, FLAVORS, check_runtime_flavor
from test_waits import check_every_kind_of_wait


@pytest.fixture(scope="module")
def markers():
    return markers_of("waits-app")


# The run's own shape is `full` in `make test`: the minimal shape's waits in dev. `make
# test-shapes` runs the whole suite in the minimal shape, in dev and in fat-LTO release.
PROFILES = ["dev"] if shapes.selected() == shapes.FULL else ["dev", "release"]


@pytest.mark.parametrize("profile", PROFILES)
def test_every_kind_of_wait_without_parking_lot(debugger, tmp_path, markers, profile):
    binary = build.fixture("waits-app", profile, shape=shapes.MINIMAL.name)
    run, facts = run_to_checkpoint(debugger, tmp_path, "waits-app", profile, "async backtrace all full --json", binary=binary)
    [report] = run.json_sections()
    check_every_kind_of_wait(report, facts, markers, profile, locked_version("tokio"))


@pytest.mark.parametrize(
    "shape,flavor",
    [(shapes.MINIMAL, flavor) for flavor in FLAVORS] + [(shapes.CURRENT_THREAD_ONLY, flavor) for flavor in CURRENT_THREAD_FLAVORS],
    ids=lambda value: value.name if isinstance(value, shapes.Shape) else value,
)
def test_runtime_flavors_in_each_shape(debugger, tmp_path, shape, flavor):
    binary = build.fixture("tokio-app", "dev", shape=shape.name)
    check_runtime_flavor(debugger, tmp_path, binary, flavor, locked_version("tokio"))
