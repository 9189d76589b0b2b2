"""Builds the fixture programs (once per test session; cargo makes repeats cheap)."""

import functools
import os
import shutil
import subprocess

from .paths import FIXTURE_TARGET, FIXTURES, TASKDUMP_TARGET

PROFILE_DIRS = {"dev": "debug", "release": "release", "linetables": "linetables", "limited": "limited"}


def _cargo(args, target_dir, extra_env=None):
    env = dict(os.environ)
    env.pop("RUSTFLAGS", None)
    env.update(extra_env or {})
    result = subprocess.run(
        ["cargo", "build", "--quiet", "--target-dir", target_dir] + args,
        cwd=FIXTURES,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError("building fixtures failed:\n" + result.stdout)


@functools.lru_cache(maxsize=None)
def fixture(program: str = "tokio-app", profile: str = "dev") -> str:
    """Path of a fixture binary built in `profile` (dev, release, linetables, limited)."""
    _cargo(["-p", program, "--profile", profile], FIXTURE_TARGET)
    return os.path.join(FIXTURE_TARGET, PROFILE_DIRS[profile], program)


@functools.lru_cache(maxsize=None)
def taskdump_fixture(program: str = "tokio-app") -> str:
    """A fixture built with tokio's task dump (the oracle), in the dev profile."""
    _cargo(
        ["-p", program, "--features", "taskdump"],
        TASKDUMP_TARGET,
        {"RUSTFLAGS": "--cfg tokio_unstable --cfg tokio_taskdump"},
    )
    return os.path.join(TASKDUMP_TARGET, "debug", program)


@functools.lru_cache(maxsize=None)
def stripped_fixture() -> str:
    """A copy of the dev tokio-app without any symbols or debug info."""
    source = fixture("tokio-app", "dev")
    stripped = os.path.join(FIXTURE_TARGET, "tokio-app-stripped")
    shutil.copyfile(source, stripped)
    subprocess.run(["strip", "--strip-all", stripped], check=True)
    os.chmod(stripped, 0o755)
    return stripped
