#!/usr/bin/env bash
# The extension and the wheel, one build: maturin (pyproject.toml) builds the library as a
# cdylib into target/release and packs target/wheels/tokio_async-VERSION-cp39-abi3-PLATFORM.whl.
# `make build` copies the library from there; `make wheel` is this alone. Installs maturin
# with pip first if it is missing.
#
# One build for both. pyo3 is built for the configuration the Makefile names
# (PYO3_CONFIG_FILE), which maturin takes as given, as the other cargo commands do.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${PYO3_CONFIG_FILE:?run through make (make build, make wheel): it names the configuration of pyo3}"

python=${PYTHON:-python3}
if ! "$python" -m maturin --version >/dev/null 2>&1; then
    echo "wheel: installing maturin"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore maturin
fi
# Only this build's wheel is left in target/wheels. No interpreter is looked for: the
# configuration says what pyo3 is built for, and the wheel's tags.
rm -f target/wheels/tokio_async-*.whl
"$python" -m maturin build --release --out target/wheels
