"""Real tokio programs published on crates.io and written by others: the corpus of
tests/test_realworld.py. Each crate's own source comes from the registry into
target/realworld/src/, with tokio pinned to 1.54.1 in the authors' lock file (nothing else
moves), and is built as a dev build and as its authors' release profile builds it, plus
`debug = true` and `strip = false` (the tool needs the DWARF); every program and profile
shares one target dir, target/realworld/target."""

import fcntl
import functools
import glob
import os
import shutil
import subprocess
from contextlib import contextmanager
from typing import NamedTuple, Tuple

from .paths import REPO

REALWORLD = os.path.join(REPO, "target", "realworld")
SOURCES = os.path.join(REALWORLD, "src")
TARGET = os.path.join(REALWORLD, "target")
TOKIO = "1.54.1"
PROFILE_DIRS = {"dev": "debug", "release": "release"}
# The release profile is the crate's own; only these two settings are added to it.
RELEASE_WITH_DWARF = {"CARGO_PROFILE_RELEASE_DEBUG": "true", "CARGO_PROFILE_RELEASE_STRIP": "false"}


class Program(NamedTuple):
    name: str                  # what REALWORLD selects
    crate: str
    version: str
    binary: str
    features: Tuple[str, ...]  # cargo's feature flags for the build
    kind: str
    flavor: str                # the tokio runtime the program serves from
    own_code: Tuple[str, ...]  # how the paths of its own functions start (library, binary)
    # Other crates moved in the authors' lock (crate, version), only where the locked one
    # no longer compiles on this rustc.
    lock_moves: Tuple[Tuple[str, str], ...] = ()


PROGRAMS = [
    Program("bore", "bore-cli", "0.6.0", "bore", (), "TCP tunnel: control connections, copy_bidirectional",
            "multi_thread", ("bore_cli::", "bore::")),
    Program("mini-redis", "mini-redis", "0.4.1", "mini-redis-server", (), "pub/sub server with many connections",
            "multi_thread", ("mini_redis::", "mini_redis_server::")),
    # Without its default `tls` feature: that one pulls rustls and ring, C and assembly.
    Program("dufs", "dufs", "0.47.0", "dufs", ("--no-default-features",), "HTTP file server (hyper)",
            "multi_thread", ("dufs::",)),
    # One current_thread runtime per listener, each on a thread of its own. Without the
    # default TLS and websocket features; the authors' lock keeps C out (a fresh resolve
    # brings psm).
    # metrics 0.22.1 casts a borrowed `&dyn Recorder` to a 'static pointer, which this
    # rustc rejects (E0521, rust-lang/rust#141402); 0.22.4, the same minor, compiles.
    Program("rumqttd", "rumqttd", "0.20.0", "rumqttd", ("--no-default-features",), "MQTT broker",
            "current_thread", ("rumqttd::",), (("metrics", "0.22.4"),)),
    # A DNS server over UDP and TCP, authoritative from zone files and forwarding other
    # zones. Without its defaults, SQLite zones (bundled C) and rustls' platform verifier
    # (ring or aws-lc: C and assembly); with its forwarding resolver, pure Rust. The binary
    # is the CLI of the same authors' library crates, where its serving code is: they are
    # its own code.
    Program("hickory-dns", "hickory-dns", "0.26.3", "hickory-dns", ("--no-default-features", "--features", "resolver"),
            "DNS server (UDP and TCP) and forwarding resolver",
            "multi_thread", ("hickory_dns::", "hickory_server::", "hickory_net::", "hickory_proto::", "hickory_resolver::")),
]
BY_NAME = {program.name: program for program in PROGRAMS}
# `make test` runs the cheapest, which also has copy_bidirectional and tokio without
# parking_lot; `make test-realworld` runs them all.
DEFAULT = ["bore"]
# `make test` builds it as its authors ship it, in release: the dev build (63 CPU-seconds
# of make test's 1,900, most of them compiling bore's dependencies again) runs in `make
# test-realworld`, beside every program's. The fixtures cover dev builds in make test.
DEFAULT_PROFILES = ["release"]


def selected_profiles():
    """The profiles to build the programs in: REALWORLD_PROFILES (space-separated), else
    DEFAULT_PROFILES."""
    wanted = os.environ.get("REALWORLD_PROFILES", "").split()
    unknown = [name for name in wanted if name not in PROFILE_DIRS]
    if unknown:
        raise RuntimeError("REALWORLD_PROFILES=%s: not one of %s" % (" ".join(unknown), ", ".join(PROFILE_DIRS)))
    return wanted or DEFAULT_PROFILES


def selected():
    """The programs to test: REALWORLD (space-separated names, or `all`), else DEFAULT."""
    wanted = os.environ.get("REALWORLD", "").split()
    if wanted == ["all"]:
        return list(PROGRAMS)
    unknown = [name for name in wanted if name not in BY_NAME]
    if unknown:
        raise RuntimeError("REALWORLD=%s: not one of %s (or `all`)" % (" ".join(unknown), ", ".join(BY_NAME)))
    return [BY_NAME[name] for name in wanted or DEFAULT]


@contextmanager
def _locked():
    """One builder at a time across pytest workers: cargo locks its target dir, but not the
    preparation of the sources."""
    os.makedirs(REALWORLD, exist_ok=True)
    with open(os.path.join(REALWORLD, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _cargo(args, cwd, extra_env=None):
    env = dict(os.environ)
    env.pop("RUSTFLAGS", None)
    env.update(extra_env or {})
    result = subprocess.run(["cargo"] + args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        raise RuntimeError("cargo %s failed in %s:\n%s" % (" ".join(args), cwd, result.stdout))
    return result.stdout


def _registry_source(crate, version):
    """Where cargo unpacked the crate from the registry, or None."""
    cargo_home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = glob.glob(os.path.join(cargo_home, "registry", "src", "index.crates.io-*", "%s-%s" % (crate, version)))
    return found[0] if found else None


def _download(crate, version):
    """The crate's source from the registry: a throwaway package that depends on exactly
    this version, fetched (cargo unpacks every package it fetches)."""
    scratch = os.path.join(REALWORLD, "fetch", "%s-%s" % (crate, version))
    os.makedirs(os.path.join(scratch, "src"), exist_ok=True)
    with open(os.path.join(scratch, "Cargo.toml"), "w") as manifest:
        manifest.write('[package]\nname = "fetch-%s"\nversion = "0.0.0"\nedition = "2021"\n\n'
                       '[dependencies]\n%s = "=%s"\n\n[workspace]\n' % (crate, crate, version))
    open(os.path.join(scratch, "src", "lib.rs"), "w").close()
    _cargo(["fetch", "--quiet"], scratch)
    source = _registry_source(crate, version)
    if source is None:
        raise RuntimeError("cargo fetch did not unpack %s %s" % (crate, version))
    return source


def source(program: Program) -> str:
    """The crate's source under target/realworld/src, its lock file with tokio pinned."""
    directory = os.path.join(SOURCES, "%s-%s" % (program.crate, program.version))
    pinned = os.path.join(directory, ".tokio-pinned")
    if os.path.exists(pinned):
        return directory
    origin = _registry_source(program.crate, program.version) or _download(program.crate, program.version)
    scratch = directory + ".partial"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.rmtree(directory, ignore_errors=True)
    shutil.copytree(origin, scratch)
    # A workspace of its own: otherwise cargo takes it for a stray member of this
    # repository's workspace (a parent directory) and refuses. Profiles are untouched.
    with open(os.path.join(scratch, "Cargo.toml"), "a") as manifest:
        manifest.write("\n# Added by tests/support/realworld.py: a workspace of its own.\n[workspace]\n")
    # The authors' lock with tokio alone moved (and what tokio itself needs newer).
    _cargo(["update", "--quiet", "-p", "tokio", "--precise", TOKIO], scratch)
    for crate, version in program.lock_moves:
        _cargo(["update", "--quiet", "-p", crate, "--precise", version], scratch)
    os.rename(scratch, directory)
    open(pinned, "w").close()
    return directory


@functools.lru_cache(maxsize=None)
def build(name: str, profile: str) -> str:
    """Path of program `name` (a PROGRAMS name) built in `profile` (dev or release)."""
    program = BY_NAME[name]
    with _locked():
        root = source(program)
        args = ["build", "--quiet", "--locked", "--target-dir", TARGET, "--bin", program.binary] + list(program.features)
        if profile == "release":
            _cargo(args + ["--release"], root, RELEASE_WITH_DWARF)
        else:
            _cargo(args, root)
    return os.path.join(TARGET, PROFILE_DIRS[profile], program.binary)


def crate_directory(program: Program, crate: str) -> str:
    """How reports name the folder of a crate of the program's lock (`hickory-server-0.26.3`),
    the start of the paths of that crate's files."""
    return "%s-%s" % (crate, locked_version(program, crate))


def source_file(program: Program, relative: str) -> str:
    """Where the file a report names is: the program's own (a path in its crate), or a
    crate's of its lock (a path starting with crate_directory), where cargo unpacked it."""
    own = os.path.join(source(program), relative)
    if os.path.exists(own):
        return own
    directory, inside = relative.split("/", 1)
    crate, version = directory.rsplit("-", 1)
    unpacked = _registry_source(crate, version)
    if unpacked is None:
        raise RuntimeError("%s: neither the program's file nor a crate's cargo unpacked" % relative)
    return os.path.join(unpacked, inside)


def locked_version(program: Program, crate: str) -> str:
    """The version of `crate` in the program's (pinned) lock file; the only one."""
    with open(os.path.join(source(program), "Cargo.lock")) as lock:
        text = lock.read()
    versions = [block.split('version = "', 1)[1].split('"', 1)[0]
                for block in text.split("[[package]]") if '\nname = "%s"\n' % crate in block]
    assert len(versions) == 1, (crate, versions)
    return versions[0]
