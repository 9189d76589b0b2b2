# make demo  - build, then show async backtraces of a real tokio program under GDB
# make test  - the whole suite: lint (rustfmt, clippy, ruff), Rust unit tests, GDB and LLDB
#              tests, tokio's task dump as oracle
# make build - the loadable extension, python/tokio_async_glue/_core.abi3.so, and the
#              `tokio-async` executable, target/release/tokio-async
# make test-versions - the fixtures against every tokio minor since 1.38, in each of tokio's
#                      build shapes (slow)
# make test-shapes - the whole debugger suite with the fixtures' tokio built without
#                    parking_lot, only the features they use (slow)
# make test-million - a million tasks read whole with the default settings (slow)
# make bench - the speed benchmark: prints its tables and writes bench/RESULTS.md (with the
#              scale table at 10,000 and 100,000 tasks)
# make bench-scale - the scale table with a million tasks too (slow; a few GB of memory)
# make bench-top - what each refresh of `tokio-async top` costs at 10,000 and 100,000 tasks
# make bench-stepping - what async next/step/finish take while 50 tasks run the same code
# make bench-sampling - what async sample takes over 10,000 tasks (20 samples)
# make bench-dap - what threads and a task's stackTrace take through `tokio-async dap` at
#                  a stop of 10,000 tasks, against lldb-dap-19 alone
# make bench-standalone - how long `tokio-async PID` stops 10,000 tasks, and its time
#                         against GDB's `async backtrace all` (GDB's start included)
# make install - build, copy to INSTALL_DIR (~/.local/share/tokio-async) and load it from
#                ~/.gdbinit and ~/.lldbinit; make uninstall - undo that
# make wheel - the pip wheel (maturin, abi3), in target/wheels
# make fuzz - the fuzzing campaign (decoder, task-list walker, ELF/DWARF loader) over real
#             fixture stops: FUZZ_TARGETS="decoder=N task-lists=N loader=N" executions;
#             prints executions, exec/s, slowest input and panics per target
# make fuzz-images - record again the fixture stops the fuzzer mutates (fuzz/images, GDB)

CARGO ?= cargo
PYTHON ?= python3
EXTENSION := python/tokio_async_glue/_core.abi3.so
# Where `make install` puts the scripts and the package (the folder itself, not a prefix).
INSTALL_DIR ?= $(HOME)/.local/share/tokio-async

.PHONY: all setup build executable demo test lint fixtures test-rust-after-build debugger-suite-after-build test-rust test-debuggers debugger-suite test-versions test-shapes test-million test-realworld bench bench-scale bench-top bench-stepping bench-sampling bench-standalone bench-dap install uninstall wheel fuzz fuzz-images clean

all: build

setup:
	@tools/setup.sh

# abi3 and not linked to libpython (pyo3's extension-module feature), so one build loads
# in any debugger's embedded Python 3.9+. maturin builds it (tools/wheel.sh), as the wheel
# too, from rust-core/python: the pyo3 module is a crate of its own over the core, so the
# core is compiled once for the extension, the executable and the integration tests.
build:
	@PYTHON=$(PYTHON) tools/wheel.sh
	cp target/release/libtokio_async_python.so $(EXTENSION).tmp
	mv -f $(EXTENSION).tmp $(EXTENSION)
	$(MAKE) --no-print-directory executable

# target/release/tokio-async, linking no libpython. Cargo builds and tests with the whole
# workspace's features (`--workspace`): the pyo3 crate's macros enable features of syn,
# which the core's serde derives are built with, so a build of the core alone would
# compile it again.
executable:
	$(CARGO) build --release --workspace --bin tokio-async

demo: setup build
	@tools/demo.sh

# The whole suite, two parts at a time on the two cores (a crate's front end, a fat-LTO
# link, a debugger starting each leave one idle), each part starting as soon as what it
# needs is built: make build beside the linters and then the fixtures' dev build; the
# Rust tests once make build is done, the debugger tests once the fixtures are too. Both
# suites build their fixtures through tests/support/build.py, with the same cargo
# commands, so whichever asks first builds and the other waits on cargo's lock. Each
# part's output is printed whole when it ends.
test: setup
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint test-rust-after-build debugger-suite-after-build

test-rust-after-build: build
	@$(MAKE) --no-print-directory test-rust

debugger-suite-after-build: build fixtures
	@$(MAKE) --no-print-directory debugger-suite

# The fixture programs in the dev profile, built as the tests build them (the tests ask
# for each one again; cargo finds them fresh).
fixtures: setup
	$(PYTHON) tools/fixture.py tokio-app dev > /dev/null

debugger-suite:
	$(DEBUGGER_SUITE)

# The formatter and the linters, as CI runs them: any finding fails the suite.
lint: setup
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings
	$(PYTHON) -m ruff check python tests tools bench gdb-scripts lldb-scripts

# The integration tests (one binary, tests/suite) run on the release build make build
# compiled (overflow checks included, Cargo.toml): they run the crate users run, compiled
# once for all. The unit tests are a build of their own (the library in test mode)
# whatever its settings: unoptimized, over optimized dependencies, it compiles in 19
# CPU-seconds instead of 111. They are the core's alone (`-p`): the dependencies that
# then lack the syn features pyo3's macros add are built again (23 CPU-seconds); with the
# workspace, the pyo3 crate's empty test binary cost more (49 in all: the core again,
# unoptimized, and pyo3 for cargo's settings instead of maturin's). The debugger tests are
# the pyo3 crate's tests. No crate has doc tests (rust-core/Cargo.toml); the examples are
# left to clippy, which checks that they build. `+`: under make test's -j2, cargo takes its
# jobs from make's, and the debugger tests beside it keep their cores.
RUST_TESTS = $(CARGO) test --release
test-rust:
	+$(RUST_TESTS) -p tokio-async-core --lib --config 'profile.release.package.tokio-async-core.opt-level=0'
	+$(RUST_TESTS) --workspace --bins --test '*'

# Four pytest workers (pytest-xdist) on this project's two-core machines: a worker spends
# a third of its time waiting (on a debugger's start, a program getting ready, a sleep), so
# with two the cores were 71% busy (sampled every 5 s over a run's first four minutes),
# with three 88% (a whole run), and three still left them 60-85% busy for minutes at a
# time once the Rust tests had ended. A file's tests stay on one worker, which builds that
# file's fixture variants once; the slowest files start first (tests/conftest.py).
PYTEST_WORKERS ?= 4
DEBUGGER_SUITE = $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=25 --ignore=tests/scale tests

test-debuggers: build
	$(DEBUGGER_SUITE)

# A million tasks read whole with the default budget, by the executable and in GDB
# (tests/scale; minutes, and a few GB of memory).
test-million: setup build
	$(PYTHON) -m pytest -q tests/scale/test_million_tasks.py

# `make test` runs tests/test_versions.py for the oldest tokio and one of each era of
# layouts after it (tests/support/versions.py), with tokio's `full` features
# (tests/test_shapes.py covers the other shapes on the newest). One pytest process: a
# version's build rewrites its copy of the sources and its binaries in place, and the
# versions share one target dir per shape.
test-versions: setup build
	TOKIO_VERSIONS=all TOKIO_SHAPES=all $(PYTHON) -m pytest -q tests/test_versions.py

# Real programs from the Rust package registry (tests/test_realworld.py), in dev and
# release; `make test` runs bore only, in release.
test-realworld: setup build
	REALWORLD=all REALWORLD_PROFILES="dev release" $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile tests/test_realworld.py

test-shapes: setup build
	FIXTURE_SHAPE=minimal $(PYTHON) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile --ignore=tests/scale tests

bench: setup build
	$(PYTHON) bench/run.py --write bench/RESULTS.md
	$(PYTHON) bench/scale.py --tasks 10000,100000 --write bench/RESULTS.md

# The executable, GDB and LLDB at 10,000, 100,000 and 1,000,000 tasks (bench/scale.py).
bench-scale: setup build
	$(PYTHON) bench/scale.py --tasks 10000,100000,1000000 --write bench/RESULTS.md

# What each refresh of `tokio-async top` costs the program and the machine (bench/top.py).
bench-top: setup build
	$(PYTHON) bench/top.py --write bench/RESULTS.md

# What following a task costs while 50 tasks run the same code (bench/stepping.py).
bench-stepping: setup build
	$(PYTHON) bench/stepping.py

# What an editor waits for through the DAP proxy at 10,000 tasks (bench/dap.py).
bench-dap: setup build
	$(PYTHON) bench/dap.py

# What sampling 10,000 tasks 20 times costs (bench/sampling.py).
bench-sampling: setup build
	$(PYTHON) bench/sampling.py

# The executable's pause and time against GDB's (bench/standalone.py).
bench-standalone: setup build
	$(PYTHON) bench/standalone.py

install: build
	@tools/install.sh install "$(INSTALL_DIR)"

uninstall:
	@tools/install.sh uninstall "$(INSTALL_DIR)"

wheel:
	@PYTHON=$(PYTHON) tools/wheel.sh

# Optimized, but with the overflow checks and debug assertions the tests run with, in a
# target dir of its own; niced, one process (one core).
FUZZ_TARGETS ?= decoder=20000 task-lists=200000 loader=100
FUZZ_SEED ?= 1
# Where cases with outcomes not seen before go (minimised); fuzz/corpus is what is replayed.
FUZZ_CORPUS ?= target/fuzz/corpus

fuzz:
	CARGO_PROFILE_RELEASE_OVERFLOW_CHECKS=true CARGO_PROFILE_RELEASE_DEBUG_ASSERTIONS=true CARGO_TARGET_DIR=target/fuzz \
		$(CARGO) build --release --no-default-features -p tokio-async-core --example fuzz
	nice -n 10 target/fuzz/release/examples/fuzz run --seed $(FUZZ_SEED) --corpus $(FUZZ_CORPUS) $(FUZZ_TARGETS)

fuzz-images:
	$(PYTHON) tools/fuzz_images.py

clean:
	$(CARGO) clean
	rm -f $(EXTENSION)
