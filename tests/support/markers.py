"""Expectations the fixture carries in its source: `// @await NAME #N`, `// @fn NAME`,
`// @running NAME`, `// @branch NAME` (a select!/join! branch written on that line),
`// @spawn NAME` (where task NAME is spawned)."""

import re

from .paths import FIXTURE_SOURCE

MARKER = re.compile(r"//\s*@(await|fn|running|branch|spawn)\s+(\w+)(?:\s+#(\d+))?")


class Markers:
    def __init__(self, path=FIXTURE_SOURCE):
        self.awaits = {}
        self.fns = {}
        self.running = {}
        self.branches = {}
        self.spawns = {}
        with open(path) as source:
            for number, line in enumerate(source, start=1):
                match = MARKER.search(line)
                if not match or line.lstrip().startswith("//!"):
                    continue
                kind, name, index = match.groups()
                if kind == "await":
                    self.awaits[name] = (number, int(index))
                elif kind == "fn":
                    self.fns[name] = number
                elif kind == "branch":
                    self.branches[name] = number
                elif kind == "spawn":
                    self.spawns[name] = number
                else:
                    self.running[name] = number

    def await_line(self, name):
        return self.awaits[name][0]

    def await_index(self, name):
        return self.awaits[name][1]
