#!/usr/bin/env python3
"""Prints the path of a fixture program built as the debugger tests build it
(tests/support/build.py). The Rust integration tests ask here, so that both suites build
each fixture with the same cargo command, and so once (two commands for one target dir
rebuild each other's dependencies).

    tools/fixture.py PROGRAM PROFILE            in tokio's `full` shape
    tools/fixture.py --dwarf5 PROGRAM PROFILE   the DWARF 5 build (nightly)
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from support import build, shapes


def main(args):
    dwarf5 = args[:1] == ["--dwarf5"]
    if dwarf5:
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    program, profile = args
    if dwarf5:
        print(build.dwarf5_fixture(program, profile))
    else:
        print(build.fixture(program, profile, shapes.FULL.name))


if __name__ == "__main__":
    main(sys.argv[1:])
