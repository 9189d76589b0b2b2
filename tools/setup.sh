#!/usr/bin/env bash
# Installs what building and testing need, on a fresh Debian machine of this project's
# kind (Rust toolchain, gcc and Python 3 with pip are already there). Idempotent.
set -euo pipefail

missing_packages=()
command -v gdb >/dev/null 2>&1 || missing_packages+=(gdb)
command -v strip >/dev/null 2>&1 || missing_packages+=(binutils)
# LLDB 19 works out of the box with Python; Debian's default lldb (14) conflicts with it.
command -v lldb-19 >/dev/null 2>&1 || missing_packages+=(lldb-19)
dpkg -s python3-lldb-19 >/dev/null 2>&1 || missing_packages+=(python3-lldb-19)
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
