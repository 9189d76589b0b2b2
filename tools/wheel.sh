#!/usr/bin/env bash
# The extension and the wheel, one build: maturin (pyproject.toml) builds the library as a
# cdylib into target/release and packs target/wheels/tokio_async-VERSION-cp39-abi3-PLATFORM.whl.
# `make build` copies the library from there; `make wheel` is this alone. Installs maturin
# with pip first if it is missing.
#
# One build for both because pyo3 is compiled for the settings maturin hands it (its own
# PYO3_CONFIG_FILE): a `cargo rustc` beside it made pyo3 and the core compile again for each
# other (78 s of every `make test`).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -m maturin --version >/dev/null 2>&1; then
    echo "wheel: installing maturin"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore maturin
fi
# Named, the interpreter is the one pyo3 is built for, whatever PATH a caller has (a `make
# install` from the tests runs under pyenv's shim).
interpreter=$("$python" -c 'import sys; print(sys.executable)')

# Only this build's wheel is left in target/wheels.
rm -f target/wheels/tokio_async-*.whl
"$python" -m maturin build --release --interpreter "$interpreter" --out target/wheels
