#!/usr/bin/env bash
# `make wheel`: builds target/wheels/tokio_async-VERSION-cp39-abi3-PLATFORM.whl with maturin
# (pyproject.toml), installing maturin with pip first if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if ! "$python" -m maturin --version >/dev/null 2>&1; then
    echo "wheel: installing maturin"
    "$python" -m pip install --quiet --disable-pip-version-check --root-user-action=ignore maturin
fi

# maturin builds with other settings than `make build` (its own PYO3_CONFIG_FILE, the
# library as cdylib only), so in make build's target dir the two would rebuild pyo3 and the
# core for each other every time. It gets a target dir of its own, started as a copy of
# make build's so that the dependencies are not compiled again.
export CARGO_TARGET_DIR=$PWD/target/wheel-build
# Only what a dependency's build leaves is copied: the test binaries beside it (400 MB after
# `make test-rust`) are not needed here.
if [ ! -d "$CARGO_TARGET_DIR/release" ] && [ -d target/release/deps ]; then
    mkdir -p "$CARGO_TARGET_DIR/release/deps"
    cp -a target/release/.fingerprint target/release/build "$CARGO_TARGET_DIR/release/"
    find target/release/deps -maxdepth 1 -type f \( -name '*.rlib' -o -name '*.rmeta' -o -name '*.so' -o -name '*.d' \) \
        -exec cp -a -t "$CARGO_TARGET_DIR/release/deps" {} +
fi

# Only this build's wheel is left in target/wheels.
rm -f target/wheels/tokio_async-*.whl
"$python" -m maturin build --release --out target/wheels
