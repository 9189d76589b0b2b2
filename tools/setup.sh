#!/usr/bin/env bash
# Installs what building and testing need, on a fresh Debian machine of this project's
# kind (Rust toolchain, gcc and Python 3 with pip are already there). Idempotent.
set -euo pipefail

missing_packages=()
command -v gdb >/dev/null 2>&1 || missing_packages+=(gdb)
command -v strip >/dev/null 2>&1 || missing_packages+=(binutils)
command -v gdbserver >/dev/null 2>&1 || missing_packages+=(gdbserver)
# LLDB 19 works out of the box with Python; Debian's default lldb (14) conflicts with it.
command -v lldb-19 >/dev/null 2>&1 || missing_packages+=(lldb-19)
dpkg -s python3-lldb-19 >/dev/null 2>&1 || missing_packages+=(python3-lldb-19)
# For the private LLDB 14 below: its Python package imports `six`.
dpkg -s python3-six >/dev/null 2>&1 || missing_packages+=(python3-six)
if ((${#missing_packages[@]})); then
    echo "setup: installing ${missing_packages[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing_packages[@]}" >/dev/null
fi

python=${PYTHON:-python3}
if ! "$python" -c 'import pytest' >/dev/null 2>&1; then
    echo "setup: installing pytest"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pytest
fi
# make test runs the debugger tests on two workers.
if ! "$python" -c 'import xdist' >/dev/null 2>&1; then
    echo "setup: installing pytest-xdist"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pytest-xdist
fi
# tests/test_top.py drives `tokio-async top` in a pseudo-terminal and reads its screen.
if ! "$python" -c 'import pexpect, pyte' >/dev/null 2>&1; then
    echo "setup: installing pexpect and pyte"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore pexpect pyte
fi
# make lint: Python's linter, and the toolchain's formatter and linter.
if ! "$python" -m ruff --version >/dev/null 2>&1; then
    echo "setup: installing ruff"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore "ruff==0.17.6"
fi
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
    echo "setup: adding rustfmt and clippy to the toolchain"
    rustup component add rustfmt clippy
fi
# tests/test_install.py builds the wheel (make wheel).
if ! "$python" -m maturin --version >/dev/null 2>&1; then
    echo "setup: installing maturin"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore maturin
fi

# Debian's default LLDB (14) conflicts with lldb-19 as a package, so the tests run a
# private copy unpacked under target/lldb-14 (nothing installed system-wide), through the
# same Python path fix its users need (see docs/usage.md, LLDB versions).
lldb14_root=target/lldb-14/root
if [ ! -x "$lldb14_root/usr/lib/llvm-14/bin/lldb" ]; then
    echo "setup: unpacking Debian's lldb-14 into target/lldb-14 for the tests"
    rm -rf target/lldb-14 && mkdir -p target/lldb-14/debs
    packages=(lldb-14 liblldb-14 python3-lldb-14 libclang-cpp14 libllvm14)
    if ! (cd target/lldb-14/debs && apt-get download "${packages[@]}" >/dev/null 2>&1); then
        apt-get update -qq
        (cd target/lldb-14/debs && apt-get download "${packages[@]}" >/dev/null)
    fi
    for deb in target/lldb-14/debs/*.deb; do dpkg-deb -x "$deb" "$lldb14_root"; done
    # Debian's python3-lldb-14 links its _lldb module to a liblldb.so only -dev ships.
    ln -sf liblldb.so.1 "$lldb14_root/usr/lib/llvm-14/lib/liblldb.so"
fi
