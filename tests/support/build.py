"""Builds the fixture programs (once per test session; cargo makes repeats cheap)."""

import functools
import os
import shutil
import subprocess
from typing import Optional

from . import shapes
from .paths import DWARF5_TARGET, FIXTURES, STATIC_TARGET, TASKDUMP_TARGET

PROFILE_DIRS = {"dev": "debug", "release": "release", "linetables": "linetables"}
# Separate debug files and compressed sections, made from the dev build by objcopy.
DEBUG_FILE_VARIANTS = os.path.join(shapes.selected().target_dir, "debug-files")


def _cargo(args, target_dir, extra_env=None, toolchain=None):
    env = dict(os.environ)
    env.pop("RUSTFLAGS", None)
    env.update(extra_env or {})
    result = subprocess.run(
        ["cargo"] + (["+" + toolchain] if toolchain else []) + ["build", "--quiet", "--target-dir", target_dir] + args,
        cwd=FIXTURES,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError("building fixtures failed:\n" + result.stdout)


# The profiles every fixture is built in during a test run: in the run's shape they are
# built for the whole workspace at once, so that cargo unifies the fixtures' dependency
# features and compiles each dependency once per profile (one at a time, each fixture's
# own feature set gave tokio three builds per profile, from syn's and parking_lot's).
WHOLE_WORKSPACE_PROFILES = ("dev", "release")
# No test runs these in release: the whole-workspace release build leaves out their
# fat-LTO links (10 CPU-seconds); asked for, each is built alone.
NOT_RUN_IN_RELEASE = ("plain-app", "timing-app")
# The fixtures with tokio's task dump (the oracle, test_taskdump_oracle.py): built together.
TASKDUMP_PROGRAMS = ("tokio-app", "waits-app", "services-app")


@functools.lru_cache(maxsize=None)
def fixture(program: str = "tokio-app", profile: str = "dev", shape: str = "") -> str:
    """Path of a fixture binary built in `profile` (dev, release, linetables), with tokio in
    `shape` (shapes.py; by default the test run's, FIXTURE_SHAPE)."""
    built = shapes.BY_NAME[shape] if shape else shapes.selected()
    if program in shapes.WITHOUT_TOKIO:
        built = shapes.FULL
    whole = built == shapes.selected() and profile in WHOLE_WORKSPACE_PROFILES
    if profile == "release" and program in NOT_RUN_IN_RELEASE:
        whole = False
    _build(built.name, profile, None if whole else program)
    return os.path.join(built.target_dir, PROFILE_DIRS.get(profile, profile), program)


@functools.lru_cache(maxsize=None)
def _build(shape: str, profile: str, program: Optional[str]):
    """Builds `program` in `profile` and `shape`; with no program, every fixture (the
    workspace) at once."""
    built = shapes.BY_NAME[shape]
    selection = ["-p", program] if program else ["--workspace"]
    if not program and profile == "release":
        selection += [arg for left_out in NOT_RUN_IN_RELEASE for arg in ("--exclude", left_out)]
    _cargo(selection + ["--profile", profile] + built.cargo_args, built.target_dir)


@functools.lru_cache(maxsize=None)
def taskdump_fixture(program: str = "tokio-app") -> str:
    """A fixture built with tokio's task dump (the oracle), in the dev profile; the three
    are built at once (their dependencies so once)."""
    if program not in TASKDUMP_PROGRAMS:
        raise ValueError("%s has no taskdump build (TASKDUMP_PROGRAMS)" % program)
    _build_taskdump_programs()
    return os.path.join(TASKDUMP_TARGET, "debug", program)


@functools.lru_cache(maxsize=None)
def _build_taskdump_programs():
    selection = [arg for program in TASKDUMP_PROGRAMS for arg in ("-p", program)]
    _cargo(
        selection + ["--features", "taskdump"] + shapes.selected().cargo_args,
        TASKDUMP_TARGET,
        {"RUSTFLAGS": "--cfg tokio_unstable --cfg tokio_taskdump"},
    )


@functools.lru_cache(maxsize=None)
def stripped_fixture() -> str:
    """A copy of the dev tokio-app without any symbols or debug info."""
    source = fixture("tokio-app", "dev")
    stripped = os.path.join(shapes.selected().target_dir, "tokio-app-stripped")
    shutil.copyfile(source, stripped)
    subprocess.run(["strip", "--strip-all", stripped], check=True)
    os.chmod(stripped, 0o755)
    return stripped


@functools.lru_cache(maxsize=None)
def dwarf5_fixture(program: str = "tokio-app", profile: str = "dev") -> str:
    """A fixture built by the nightly toolchain with DWARF 5, in its own target dir since
    it needs other RUSTFLAGS (std stays DWARF 4: it is not rebuilt). It keeps frame
    pointers too, as profiled production builds do: its functions' frame base is rbp,
    not rsp (one build covers both)."""
    rustflags = "-Zdwarf-version=5 -C force-frame-pointers=yes"
    _cargo(["-p", program, "--profile", profile] + shapes.selected().cargo_args, DWARF5_TARGET, {"RUSTFLAGS": rustflags}, toolchain="nightly")
    return os.path.join(DWARF5_TARGET, PROFILE_DIRS.get(profile, profile), program)


@functools.lru_cache(maxsize=None)
def static_fixture(program: str = "tokio-app") -> str:
    """A dev build with glibc linked in (`-C target-feature=+crt-static`: a static-pie, no
    ld.so), as some services ship."""
    host = "x86_64-unknown-linux-gnu"
    _cargo(["-p", program, "--target", host] + shapes.selected().cargo_args, STATIC_TARGET, {"RUSTFLAGS": "-C target-feature=+crt-static"})
    return os.path.join(STATIC_TARGET, host, "debug", program)


def build_id(binary: str) -> str:
    """The binary's GNU build id, in hex."""
    notes = subprocess.run(["readelf", "-n", binary], check=True, stdout=subprocess.PIPE, text=True).stdout
    [build_id] = [line.split(":", 1)[1].strip() for line in notes.splitlines() if "Build ID:" in line]
    return build_id


def build_id_path(debug_dir: str, binary: str) -> str:
    """Where a debugger looks for the binary's debug file by build id."""
    build_id_hex = build_id(binary)
    return os.path.join(debug_dir, ".build-id", build_id_hex[:2], build_id_hex[2:] + ".debug")


def _fresh_copy(variant: str, program: str = "tokio-app") -> str:
    directory = os.path.join(DEBUG_FILE_VARIANTS, variant)
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    binary = os.path.join(directory, program)
    shutil.copyfile(fixture(program, "dev"), binary)
    os.chmod(binary, 0o755)
    return binary


@functools.lru_cache(maxsize=None)
def separate_debug_fixture(layout: str):
    """The dev tokio-app with its DWARF moved to a separate file (objcopy --only-keep-debug);
    returns (binary, debug directory the debugger must be told about, or None).

    - `debuglink`: `strip --strip-debug` + `.gnu_debuglink`, the debug file next to the binary;
    - `debuglink-subdir`: the same, the debug file in the binary's `.debug/` directory;
    - `debuglink-debug-dir`: the same, the debug file in `<debug dir>/<binary's dir>/`;
    - `build-id`: `strip --strip-all` (no symbols left either), no debuglink, the debug
      file at `<debug dir>/.build-id/xx/rest.debug`."""
    binary = _fresh_copy(layout)
    directory = os.path.dirname(binary)
    debug_dir = os.path.join(directory, "debug-dir")
    scratch = binary + ".debug"
    subprocess.run(["objcopy", "--only-keep-debug", binary, scratch], check=True)
    if layout == "build-id":
        subprocess.run(["strip", "--strip-all", binary], check=True)
        final = build_id_path(debug_dir, binary)
    else:
        subprocess.run(["strip", "--strip-debug", binary], check=True)
        # The link records the file's name and CRC; where it is found is up to the search.
        subprocess.run(["objcopy", "--add-gnu-debuglink=" + scratch, binary], check=True)
        final = {
            "debuglink": scratch,
            "debuglink-subdir": os.path.join(directory, ".debug", "tokio-app.debug"),
            "debuglink-debug-dir": os.path.join(debug_dir, directory.lstrip("/"), "tokio-app.debug"),
        }[layout]
    os.makedirs(os.path.dirname(final), exist_ok=True)
    os.replace(scratch, final)
    return binary, (debug_dir if layout in ("build-id", "debuglink-debug-dir") else None)


@functools.lru_cache(maxsize=None)
def compressed_fixture(kind: str) -> str:
    """The dev tokio-app with its debug sections compressed by objcopy (`zlib` or `zstd`)."""
    binary = _fresh_copy("compressed-" + kind)
    subprocess.run(["objcopy", "--compress-debug-sections=" + kind, binary], check=True)
    return binary


@functools.lru_cache(maxsize=None)
def without_package_fixture() -> str:
    """The split-packed tokio-app copied without its .dwp: its own units' DWARF is nowhere."""
    binary = os.path.join(DEBUG_FILE_VARIANTS, "no-dwp", "tokio-app")
    shutil.rmtree(os.path.dirname(binary), ignore_errors=True)
    os.makedirs(os.path.dirname(binary))
    shutil.copyfile(fixture("tokio-app", "split-packed"), binary)
    os.chmod(binary, 0o755)
    return binary
