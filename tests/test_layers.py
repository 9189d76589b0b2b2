"""The core's modules use only the layers below their own (rust-core/src/lib.rs and
CONTRIBUTING.md draw them), and no two modules use each other, however indirectly: read
from the `crate::`/`super::` paths each module names (comments aside). The pyo3 module,
the top layer, is a crate over the core (rust-core/python), which cargo keeps from being
used by it."""

import os
import re

from support.paths import REPO

SOURCE = os.path.join(REPO, "rust-core", "src")

# Lowest first; a module may use its own layer's modules (without a cycle) and those below.
LAYERS = [
    ["error", "format", "names", "model", "panics", "arch", "threads"],
    ["memory", "core_file", "budget"],
    ["dwarf"],
    ["stack"],
    ["value"],
    ["layouts"],
    ["std_values", "collections"],
    ["tokio"],
    ["future"],
    ["block_on", "task_decode"],
    ["links", "groups", "selection", "history"],
    ["waits"],
    ["inspect", "stepping"],
    ["native"],
    ["render", "stack_view"],
    ["output"],
    ["command"],
    ["top"],
    ["cli", "dap"],
]
LAYER_OF = {module: index for index, layer in enumerate(LAYERS) for module in layer}
# Modules for tests only, and the executables' entry points (src/bin), outside the library.
TEST_ONLY = {"testing", "bin"}


def module_path(path):
    parts = os.path.relpath(path, SOURCE)[: -len(".rs")].split(os.sep)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return parts


def uses(depth):
    """{module path (to `depth` segments): the module paths it names}, tests left out."""
    edges = {}
    for directory, _, files in os.walk(SOURCE):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(directory, name)
            me = module_path(path)
            if not me or me[0] in TEST_ONLY or name == "tests.rs":
                continue
            source = re.split(r"#\[cfg\(test\)\]", open(path).read())[0]
            source = re.sub(r"//[^\n]*", "", source)
            named = set()
            for match in re.finditer(r"\bcrate::([a-z_]+(?:::[a-z_]+)*)", source):
                named.add(tuple(match.group(1).split("::")))
            parent = me if name == "mod.rs" else me[:-1]
            for match in re.finditer(r"\bsuper::([a-z_]+(?:::[a-z_]+)*)", source):
                named.add(tuple((parent[:-1] if name == "mod.rs" else parent) + match.group(1).split("::")))
            for match in re.finditer(r"use super::\{([^}]*)\}", source):
                base = parent[:-1] if name == "mod.rs" else parent
                for item in match.group(1).split(","):
                    item = item.strip().split("::")[0]
                    if item and item[0].islower() and item != "self":
                        named.add(tuple(base + [item]))
            key = tuple(me[:depth])
            edges.setdefault(key, set()).update(path[:depth] for path in named if path[:depth] != key)
    return edges


def cycles(edges):
    """The strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in edges.get(node, ()):
            if other not in edges:
                continue
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted("::".join(part) for part in component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_module_has_a_layer():
    modules = {path[0] for path in uses(1)}
    assert modules - set(LAYER_OF) == set(), "add the module to LAYERS here and in lib.rs"


def test_modules_use_only_their_layer_and_those_below():
    upward = []
    for (module,), named in uses(1).items():
        for (other,) in named:
            if other in LAYER_OF and LAYER_OF[other] > LAYER_OF[module]:
                upward.append("%s -> %s" % (module, other))
    assert upward == []


def test_no_modules_use_each_other():
    for depth in (1, 2, 3):
        assert cycles(uses(depth)) == [], "depth %d" % depth
