# make demo  - build, then show async backtraces of a real tokio program under GDB
# make test  - the whole suite (Rust unit tests, GDB tests, tokio task-dump oracle)
# make build - the loadable extension, python/tokio_async_glue/_core.abi3.so
# make test-versions - the fixtures against every tokio minor since 1.38 (slow)
# make bench - the speed benchmark: prints its table and writes bench/RESULTS.md
# make install - build, copy to INSTALL_DIR (~/.local/share/tokio-async) and load it from
#                ~/.gdbinit and ~/.lldbinit; make uninstall - undo that
# make wheel - the pip wheel (maturin, abi3), in target/wheels

CARGO ?= cargo
PYTHON ?= python3
EXTENSION := python/tokio_async_glue/_core.abi3.so
# Where `make install` puts the scripts and the package (the folder itself, not a prefix).
INSTALL_DIR ?= $(HOME)/.local/share/tokio-async

.PHONY: all setup build demo test test-rust test-debuggers test-versions bench install uninstall wheel clean

all: build

setup:
	@tools/setup.sh

# abi3 and not linked to libpython (pyo3's extension-module feature), so one build loads
# in any debugger's embedded Python 3.9+.
build:
	$(CARGO) build --release -p tokio-async-core
	cp target/release/libtokio_async_core.so $(EXTENSION).tmp
	mv -f $(EXTENSION).tmp $(EXTENSION)

demo: setup build
	@tools/demo.sh

test: setup build test-rust test-debuggers

test-rust:
	$(CARGO) test --no-default-features -p tokio-async-core

test-debuggers: build
	$(PYTHON) -m pytest -q tests

# `make test` runs tests/test_versions.py for the oldest tokio and the LTS lines only.
test-versions: setup build
	TOKIO_VERSIONS=all $(PYTHON) -m pytest -q tests/test_versions.py

bench: setup build
	$(PYTHON) bench/run.py --write bench/RESULTS.md

install: build
	@tools/install.sh install "$(INSTALL_DIR)"

uninstall:
	@tools/install.sh uninstall "$(INSTALL_DIR)"

wheel:
	@PYTHON=$(PYTHON) tools/wheel.sh

clean:
	$(CARGO) clean
	rm -f $(EXTENSION)
