"""Running a fixture in a debugger up to its `tokio_async_checkpoint` (where every task is
parked) and reading the facts it reported."""

import json
import os
import re

from . import build
from .debuggers import capture
from .markers import Markers
from .paths import FIXTURES


def run_to_checkpoint(debugger, tmp_path, program, profile, command, binary=None):
    """`command`'s run (captured) at the checkpoint, and the fixture's manifest facts.
    `binary` overrides the fixture build (another tokio version's, say)."""
    manifest = tmp_path / "manifest.json"
    if manifest.exists():
        manifest.unlink()
    run = debugger.run_steps(
        [debugger.break_at("tokio_async_checkpoint"), "run"] + capture(debugger, command),
        program=binary or build.fixture(program, profile),
        env={"FIXTURE_MANIFEST": str(manifest)},
    )
    assert manifest.exists(), run.stdout + run.stderr
    return run, json.loads(manifest.read_text())["facts"]


def markers_of(program):
    return Markers(os.path.join(FIXTURES, program, "src", "main.rs"))


def locked_version(crate):
    """The version of `crate` the fixture workspace's lock file pins."""
    with open(os.path.join(FIXTURES, "Cargo.lock")) as lock:
        text = lock.read()
    versions = re.findall(r'\[\[package\]\]\nname = "%s"\nversion = "([^"]+)"' % re.escape(crate), text)
    assert len(versions) == 1, (crate, versions)
    return versions[0]
