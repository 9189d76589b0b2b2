"""Functions of the core stay short: none over 80 lines outside tests and tables, but those
listed in LONGER, which are being split (the list only shrinks: a function brought under
the limit must leave it, and none may grow past the length it has there). Read from the
sources."""

import os
import re

from support.paths import REPO

CORE = os.path.join(REPO, "rust-core", "src")
# The pyo3 module, a crate over the core.
PYTHON_CRATE = os.path.join(REPO, "rust-core", "python", "src")
LIMIT = 80
# path under rust-core/src (the pyo3 crate's under "python/"), function -> its length today.
LONGER = {}
# Tables: one match arm per kind of a closed set, which grows with the set and reads best
# whole (a split would repeat the kinds' list). Path, function -> the set it is over.
TABLES = {
    ("history/progress.rs", "of"): "model::Detail",
}
FUNCTION = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))? )?(?:const )?(?:async )?(?:unsafe )?fn (\w+)")


def function_lengths(path):
    """(name, lines) of each function with a body, up to the file's test module."""
    with open(path) as source:
        lines = source.read().split("\n")
    end = next((index for index, line in enumerate(lines) if line.startswith("#[cfg(test)]")), len(lines))
    index = 0
    while index < end:
        found = FUNCTION.match(lines[index])
        if not found:
            index += 1
            continue
        indent, name = found.groups()
        opening = index
        while opening < end and not lines[opening].rstrip().endswith(("{", ";")):
            opening += 1
        if opening >= end or lines[opening].rstrip().endswith(";"):
            index = opening + 1
            continue
        closing = opening + 1
        while closing < end and lines[closing] != indent + "}":
            closing += 1
        yield name, closing - index + 1
        index = closing + 1


def test_no_function_of_the_core_is_over_80_lines_but_those_being_split():
    too_long = []
    seen = {}
    tables_seen = set()
    for root, prefix in ((CORE, ""), (PYTHON_CRATE, "python/")):
        for directory, name in ((directory, name) for directory, _, names in os.walk(root) for name in names):
            if not name.endswith(".rs") or name in ("tests.rs", "testing.rs"):
                continue
            path = os.path.join(directory, name)
            relative = prefix + os.path.relpath(path, root)
            for function, length in function_lengths(path):
                if length <= LIMIT:
                    continue
                if (relative, function) in TABLES:
                    tables_seen.add((relative, function))
                    continue
                allowed = LONGER.get((relative, function))
                seen[(relative, function)] = length
                if allowed is None or length > allowed:
                    too_long.append("%s: fn %s is %d lines" % (relative, function, length))
    assert too_long == []
    # Split below the limit: out of the list.
    assert sorted(set(LONGER) - set(seen)) == []
    assert sorted(set(TABLES) - tables_seen) == []
