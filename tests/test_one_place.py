"""Each fact in one place: x86-64's register names and the kernel's register layouts live
in rust-core/src/arch.rs, and everything else (the other core modules, the Python glue,
the debugger scripts) asks it; the field names (and state bits) of tokio, std and the
libraries live in rust-core/src/layouts/. Read from the sources, comments and tests left
out."""

import os
import re

from support.paths import REPO

CORE = os.path.join(REPO, "rust-core", "src")
# The core and the pyo3 module over it (rust-core/python).
RUST = [CORE, os.path.join(REPO, "rust-core", "python", "src")]
ARCH = os.path.join(CORE, "arch.rs")
GLUE = [os.path.join(REPO, "python"), os.path.join(REPO, "gdb-scripts"), os.path.join(REPO, "lldb-scripts")]

REGISTER = r"(?:r[abcd]x|r[sd]i|r[sb]p|r(?:8|9|1[0-5])|rip|eflags|orig_rax|fs_base|gs_base)"
# A register named in a string ("rbp", "$rdi == 0x…"), or read from the kernel's struct.
NAMED = re.compile(r"""["']\$?%s\b""" % REGISTER)
STRUCT_FIELD = re.compile(r"\bregs\.%s\b" % REGISTER)
# The request the glue hands the core keys a thread's pointer by this name: a field of the
# core's request, not the debugger's register name.
REQUEST_KEY = re.compile(r"""["']fs_base["']\s*:""")


def sources(roots, suffix):
    for root in roots:
        for directory, _, names in os.walk(root):
            for name in names:
                if name.endswith(suffix):
                    yield os.path.join(directory, name)


def rust_code(path):
    """The code of a Rust file without its comments and its test module (the inline
    `mod tests { … }` that ends a file); other test-only items stay, lines kept in place."""
    text = re.split(r"#\[cfg\(test\)\]\s*mod \w+\s*\{", open(path).read())[0]
    return re.sub(r"//[^\n]*", "", text)


def python_code(path):
    text = open(path).read()
    text = re.sub(r'"""[\s\S]*?"""', "", text)
    return re.sub(r"#[^\n]*", "", text)


def findings(path, code):
    found = []
    for number, line in enumerate(code.splitlines(), start=1):
        line = REQUEST_KEY.sub("", line)
        if NAMED.search(line) or STRUCT_FIELD.search(line):
            found.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip()))
    return found


def test_register_names_and_layouts_live_in_arch_only():
    found = []
    for path in sources(RUST, ".rs"):
        if path != ARCH and os.path.basename(path) != "testing.rs":
            found += findings(path, rust_code(path))
    for path in sources(GLUE, ".py"):
        found += findings(path, python_code(path))
    assert not found, "x86-64 facts outside rust-core/src/arch.rs:\n" + "\n".join(found)
    # The check itself finds what it looks for.
    assert findings(ARCH, rust_code(ARCH)), "arch.rs names no register: the pattern is wrong"


LAYOUTS = os.path.join(CORE, "layouts")
# A field read by a name spelled in place, rather than by a path of the version table.
FIELD_BY_NAME = re.compile(r"""(?:\.field\(|\bField\()\s*["']""")


def test_field_names_live_in_the_layout_table_only():
    """A decoder or a walker names fields through `layouts/` (tokio's, std's, the
    libraries'), which keeps each version's alternatives in one table."""
    found = []
    for path in sources(RUST, ".rs"):
        if path.startswith(LAYOUTS + os.sep) or os.path.basename(path) in ("testing.rs", "tests.rs"):
            continue
        for number, line in enumerate(rust_code(path).splitlines(), start=1):
            if FIELD_BY_NAME.search(line):
                found.append("%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip()))
    assert not found, "fields named outside rust-core/src/layouts:\n" + "\n".join(found)
    assert any(FIELD_BY_NAME.search(line) for line in rust_code(os.path.join(LAYOUTS, "tokio.rs")).splitlines())


# The modules that read tokio's memory and interpret it: its bits come from `layouts/` too.
TOKIO_READERS = [os.path.join(CORE, name) for name in (
    "future", "tokio", "waits", "history", "inspect.rs", "links.rs", "task_decode.rs", "stepping.rs")]
# A word masked or shifted by a number spelled in place (`permits >> 1`, `state & 0b10`).
BIT_IN_PLACE = re.compile(r"(?:>>|&)\s*(?:0b[01_]+|0x[0-9a-fA-F_]+|\d+)\b")


def bits_in_place(path):
    return ["%s:%d: %s" % (os.path.relpath(path, REPO), number, line.strip())
            for number, line in enumerate(rust_code(path).splitlines(), start=1) if BIT_IN_PLACE.search(line)]


def test_state_bits_live_in_the_layout_table_only():
    """tokio's state words (a task's, a semaphore's permits, a channel's) are read through
    the bits and shifts `layouts/` names, as their fields are."""
    found = []
    for root in TOKIO_READERS:
        paths = sources([root], ".rs") if os.path.isdir(root) else [root]
        for path in paths:
            if os.path.basename(path) not in ("testing.rs", "tests.rs"):
                found += bits_in_place(path)
    assert not found, "state bits spelled outside rust-core/src/layouts:\n" + "\n".join(found)
    # The check itself finds what it looks for, and passes the names.
    assert BIT_IN_PLACE.search("(permits >> 1, permits & 1 == 1)") and BIT_IN_PLACE.search("state & 0b10")
    assert not BIT_IN_PLACE.search("(word >> PERMITS_SHIFT, word & PERMITS_CLOSED != 0)")
