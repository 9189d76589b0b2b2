"""The fixtures built against other tokio versions: each version gets a copy of the fixture
workspace under target/versions/<version> with tokio pinned, and all versions share one
target dir per build shape (target/versions/target for `full`, target-<shape> for the
others; shapes.py), so each tokio is built once per shape."""

import functools
import os
import re
import shutil
import subprocess

from . import shapes
from .paths import FIXTURES, REPO

VERSIONS_ROOT = os.path.join(REPO, "target", "versions")
TARGET = os.path.join(VERSIONS_ROOT, "target")
PROGRAMS = ["waits-app", "tokio-app"]
# Without the multi-thread scheduler only tokio-app builds (its current_thread flavors).
CURRENT_THREAD_PROGRAMS = ["tokio-app"]
CRATES = PROGRAMS + ["fixture-support"]
# The latest patch of every tokio minor this tool supports (`make test-versions`), and
# what `make test` runs: the oldest, and one version of each era of layouts the version
# table tells apart after it (docs/layouts.md): 1.47, the last LTS line whose `Sleep`
# holds a `TimerEntry`, and 1.51, the LTS line whose `Sleep` holds the one-variant
# `Timer` (1.49-1.52). The newest era (1.53+, the other LTS line's) is the main fixtures'.
ALL = ["1.38.2", "1.39.3", "1.40.0", "1.41.1", "1.42.1", "1.43.4", "1.44.2", "1.45.1", "1.46.1",
       "1.47.5", "1.48.0", "1.49.0", "1.50.0", "1.51.6", "1.52.4", "1.53.3"]
DEFAULT = ["1.38.2", "1.47.5", "1.51.6"]


def selected():
    """The versions to test: TOKIO_VERSIONS (space-separated, or `all`), else DEFAULT."""
    wanted = os.environ.get("TOKIO_VERSIONS", "").split()
    if wanted == ["all"]:
        return ALL
    return wanted or DEFAULT


def _workspace(version):
    """The copy for `version`: the sources fresh every time (the fixtures change), the
    lock file pinned once (resolving it is slow)."""
    root = os.path.join(VERSIONS_ROOT, version)
    pinned = os.path.join(root, "Cargo.lock.pinned")
    os.makedirs(root, exist_ok=True)
    for crate in CRATES:
        shutil.rmtree(os.path.join(root, crate), ignore_errors=True)
        shutil.copytree(os.path.join(FIXTURES, crate), os.path.join(root, crate))
        manifest = os.path.join(root, crate, "Cargo.toml")
        with open(manifest) as source:
            text = source.read()
        text = re.sub(r'tokio = \{ version = "1"', 'tokio = { version = "=%s"' % version, text)
        # tokio's task dump (the oracle) exists from 1.48 on; these builds do not use it.
        text = re.sub(r'taskdump = \["tokio/[^\]]*\]', "taskdump = []", text)
        with open(manifest, "w") as out:
            out.write(text)
    with open(os.path.join(FIXTURES, "Cargo.toml")) as source:
        workspace = source.read()
    workspace = re.sub(r"members = \[[^\]]*\]", "members = [%s]" % ", ".join('"%s"' % c for c in CRATES), workspace)
    with open(os.path.join(root, "Cargo.toml"), "w") as out:
        out.write(workspace)
    if os.path.exists(pinned):
        shutil.copyfile(pinned, os.path.join(root, "Cargo.lock"))
        return root
    # Everything else stays at the versions the main fixtures lock.
    shutil.copyfile(os.path.join(FIXTURES, "Cargo.lock"), os.path.join(root, "Cargo.lock"))
    _cargo(root, ["update", "--quiet", "-p", "tokio", "--precise", version])
    shutil.copyfile(os.path.join(root, "Cargo.lock"), pinned)
    return root


def _cargo(root, args, env=None):
    result = subprocess.run(
        ["cargo"] + args, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if result.returncode != 0:
        raise RuntimeError("cargo %s failed in %s:\n%s" % (" ".join(args), root, result.stdout))


def selected_shapes():
    """The build shapes to cross the versions with: TOKIO_SHAPES (space-separated names, or
    `all`), else `full` alone (tests/test_shapes.py covers the other shapes on the newest
    tokio in `make test`)."""
    wanted = os.environ.get("TOKIO_SHAPES", "").split()
    if wanted == ["all"]:
        return shapes.ALL
    return [shapes.BY_NAME[name] for name in wanted] or [shapes.FULL]


def _programs(shape):
    return PROGRAMS if shape.multi_thread else CURRENT_THREAD_PROGRAMS


@functools.lru_cache(maxsize=None)
def build(version, shape_name):
    """Builds the fixture programs (dev) against tokio `version` in the shape `shape_name`;
    returns the directory they are copied to (the shared target dir holds one version's
    binaries at a time). `--cfg tokio_unstable` because before 1.41 task ids
    (JoinHandle::id) were unstable."""
    shape = shapes.BY_NAME[shape_name]
    root = _workspace(version)
    env = dict(os.environ, RUSTFLAGS="--cfg tokio_unstable")
    target = TARGET if shape == shapes.FULL else "%s-%s" % (TARGET, shape.name)
    programs = _programs(shape)
    args = ["build", "--quiet", "--target-dir", target] + [arg for program in programs for arg in ("-p", program)]
    _cargo(root, args + shape.cargo_args, env)
    binaries = os.path.join(root, "bin" if shape == shapes.FULL else "bin-" + shape.name)
    os.makedirs(binaries, exist_ok=True)
    for program in programs:
        shutil.copy2(os.path.join(target, "debug", program), os.path.join(binaries, program))
    return binaries


def fixture(program, version, shape):
    """`program` built against tokio `version`, in `shape`."""
    return os.path.join(build(version, shape.name), program)
