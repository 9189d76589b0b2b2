#!/usr/bin/env python3
"""Sums a TEST_CPU_LOG (tests/conftest.py) by test file: wall seconds, the CPU seconds of
the programs the tests ran and of pytest; then the costliest tests.

    TEST_CPU_LOG=/tmp/cpu.log make test-debuggers; python3 tools/cpu_by_test.py /tmp/cpu.log
"""
import collections
import sys


def main(path, top=25):
    by_file = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    tests = []
    with open(path) as log:
        for line in log:
            wall, children, own, nodeid = line.split(" ", 3)
            numbers = (float(wall), float(children), float(own))
            row = by_file[nodeid.split("::")[0]]
            for at, number in enumerate(numbers):
                row[at] += number
            row[3] += 1
            tests.append(numbers + (nodeid.strip(),))
    total = [sum(row[at] for row in by_file.values()) for at in range(3)]
    print("%-40s %6s %9s %9s %9s" % ("file", "tests", "wall s", "progs cpu", "pytest cpu"))
    for name, row in sorted(by_file.items(), key=lambda item: -(item[1][1] + item[1][2])):
        print("%-40s %6d %9.1f %9.1f %9.1f" % (name, row[3], row[0], row[1], row[2]))
    print("%-40s %6d %9.1f %9.1f %9.1f" % ("all", len(tests), *total))
    print("\ncostliest tests (CPU of the programs they ran):")
    for wall, children, _own, nodeid in sorted(tests, key=lambda test: -test[1])[:top]:
        print("%8.1f cpu %8.1f wall  %s" % (children, wall, nodeid))


if __name__ == "__main__":
    main(sys.argv[1])
