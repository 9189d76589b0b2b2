"""GDB's `bt` in a tokio program (a frame filter, on by default): a coroutine's poll frame
reads `async fn NAME`, tokio's and std's poll glue is folded under one frame per run
(elided: indented by `bt`, hidden by `bt -hide`), the frame that polls a task names it,
and inside a `block_on` frame the futures it has suspended appear as frames of their own,
with the locals they keep (`bt full`). `bt -no-filters` prints the raw stack;
`disable frame-filter global tokio-async` switches it off. What each frame becomes is the
core's (`stack_views`); this maps it onto GDB's frame decorators."""

import os

import gdb
from gdb.FrameDecorator import FrameDecorator

from . import commands

FILTER_NAME = "tokio-async"


class AsyncFrameFilter:
    def __init__(self, make_adapter):
        self.name = FILTER_NAME
        self.priority = 100
        self.enabled = True
        self.make_adapter = make_adapter

    def filter(self, frame_iter):
        if gdb.selected_thread() is None:
            return frame_iter
        adapter = self.make_adapter()
        view = commands.stack_views.of_thread(adapter, adapter.selected_tid(), adapter.selected_thread)
        if view is None:
            return frame_iter
        return _decorated(view, frame_iter)


class _Frames:
    """The decorators GDB hands over, by level, read ahead as far as a view frame needs."""

    def __init__(self, frame_iter):
        self.iterator = iter(frame_iter)
        self.waiting = {}
        self.seen = {}

    def take(self, level):
        if level in self.seen and level not in self.waiting:
            return None  # handed over already
        while level not in self.waiting:
            try:
                decorator = next(self.iterator, None)
                frame = decorator.inferior_frame() if decorator is not None else None
            except gdb.error:
                return None  # a frame GDB cannot unwind to ends the stack here
            if decorator is None:
                return None
            self.waiting[frame.level()] = decorator
            self.seen[frame.level()] = frame
        return self.waiting.pop(level)

    def first_level(self):
        decorator = next(self.iterator, None)
        if decorator is None:
            return None
        level = decorator.inferior_frame().level()
        self.waiting[level] = decorator
        self.seen[level] = decorator.inferior_frame()
        return level

    def rest(self):
        for level in sorted(self.waiting):
            yield self.waiting.pop(level)
        yield from self.iterator


def _decorated(view, frame_iter):
    frames = _Frames(frame_iter)
    start = frames.first_level()
    if start is None:
        return
    for planned in view.frames:
        if planned.level < start:
            continue
        if planned.kind == "suspended":
            frame = frames.seen.get(planned.level)
            if frame is None:
                taken = frames.take(planned.level)
                if taken is None:
                    return
                frame = taken.inferior_frame()
                frames.waiting[planned.level] = taken
            yield SuspendedFrame(frame, planned)
            continue
        decorator = frames.take(planned.level)
        if decorator is None:
            return
        elided = [taken for taken in (frames.take(level) for level in planned.elided) if taken is not None]
        if planned.function is None and not elided:
            yield decorator
        else:
            yield RenamedFrame(decorator, planned.function, elided)
    yield from frames.rest()


class RenamedFrame(FrameDecorator):
    """A machine frame under the core's name, with the glue folded into it."""

    def __init__(self, base, function, elided):
        super().__init__(base)
        self._function = function
        self._elided = elided

    def function(self):
        return self._function if self._function is not None else super().function()

    def elided(self):
        return iter(self._elided) if self._elided else None


class SuspendedFrame(FrameDecorator):
    """A future the block_on future has suspended: in memory, not on the stack. It stands
    beside a machine frame (GDB needs one) whose level is already printed, so `bt` prints
    none for it."""

    def __init__(self, frame, planned):
        super().__init__(frame)
        self._frame = frame
        self._planned = planned

    def function(self):
        return self._planned.function

    def address(self):
        return None

    def filename(self):
        return _full_path(self._planned.file)

    def line(self):
        return self._planned.line

    def frame_args(self):
        return None

    def frame_locals(self):
        return [HeldValue(local) for local in self._planned.locals]


class HeldValue:
    """A local kept across an await, as GDB reads it from its address and DWARF type
    (pretty printers apply); the core's reading where GDB does not know the type."""

    def __init__(self, local):
        self._local = local

    def symbol(self):
        return self._local.name

    def value(self):
        local = self._local
        held_type = _type_named(local.type_name)
        if held_type is not None:
            return gdb.Value(local.address).cast(held_type.pointer()).dereference()
        return local.value if local.value is not None else "<%s at %#x>" % (local.type_name, local.address)


def _type_named(name):
    """The type DWARF names so: a Rust path names a module too (`alloc::string::String`
    is also the namespace of its impls), so the struct domain is asked first."""
    try:
        symbol = gdb.lookup_symbol(name, domain=gdb.SYMBOL_STRUCT_DOMAIN)[0]
        if symbol is not None and symbol.type is not None:
            return symbol.type
        found = gdb.lookup_type(name)
        return None if found.code == gdb.TYPE_CODE_NAMESPACE else found
    except (gdb.error, RuntimeError, ValueError):
        return None


def _full_path(path):
    """A source path as GDB's own frames give it: DWARF's may be relative to the
    compilation directory, which GDB's symbol tables know."""
    if not path or os.path.isabs(path):
        return path
    try:
        _, locations = gdb.decode_line("%s:1" % path)
        for location in locations or ():
            if location.symtab is not None:
                return location.symtab.fullname()
    except (gdb.error, RuntimeError):
        pass
    return path


def register(make_adapter):
    gdb.frame_filters[FILTER_NAME] = AsyncFrameFilter(make_adapter)
