#!/usr/bin/env bash
# Installs what building and testing need, on a fresh Debian machine of this project's
# kind (Rust toolchain, gcc and Python 3 with pip are already there). Idempotent.
set -euo pipefail

missing_packages=()
command -v gdb >/dev/null 2>&1 || missing_packages+=(gdb)
command -v strip >/dev/null 2>&1 || missing_packages+=(binutils)
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
