"""GDB/MI result records read into Python values: `^done,stack=[frame={level="0",...}]`
-> {"stack": [("frame", {"level": "0", ...})]}. A list keeps each item's name, since MI
lists may name them (`frame=`), and a tuple is a dict."""

import re

_NAME = re.compile(r"[A-Za-z_][\w-]*")


def result_records(text, kind="done"):
    """The results of every `^KIND,...` record in `text`, in order."""
    records = []
    for line in text.splitlines():
        if line.startswith("^%s," % kind):
            value, end = _results(line, len(kind) + 2, None)
            records.append(value)
    return records


def _results(text, at, closing):
    """`name=value,...` up to `closing` (or the end): a dict, and where it ended."""
    results = {}
    while at < len(text) and text[at] != closing:
        name = _NAME.match(text, at)
        at = name.end() + 1  # past '='
        value, at = _value(text, at)
        results[name.group()] = value
        if at < len(text) and text[at] == ",":
            at += 1
    return results, at


def _value(text, at):
    char = text[at]
    if char == '"':
        return _string(text, at)
    if char == "{":
        value, at = _results(text, at + 1, "}")
        return value, at + 1
    # A list of values, or of name=value items.
    items, at = [], at + 1
    while text[at] != "]":
        name = _NAME.match(text, at)
        if name and text[name.end()] == "=":
            value, at = _value(text, name.end() + 1)
            items.append((name.group(), value))
        else:
            value, at = _value(text, at)
            items.append((None, value))
        if text[at] == ",":
            at += 1
    return items, at + 1


def _string(text, at):
    chars, at = [], at + 1
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    while text[at] != '"':
        if text[at] == "\\":
            at += 1
            chars.append(escapes.get(text[at], text[at]))
        else:
            chars.append(text[at])
        at += 1
    return "".join(chars), at + 1
