"""Following one task as it runs, shared by both debuggers: `async next`, `step`, `finish`,
`until-polled N` and `until-woken N`. The core says which coroutine instance to follow and
where its resume function can be stopped for that instance alone (a breakpoint whose
condition compares a register with the instance's address, evaluated by the debugger, so
other tasks running the same code cost no Python stop); the debugger's own `next` and
`finish` move inside one poll. The breakpoints and watchpoints set here are removed on
every path out, and a stop that is not ours (the user's breakpoint, a signal, Ctrl-C, the
program's exit) ends the command, saying so."""

import os
import re
from typing import List, NamedTuple, Optional

from . import commands
from .adapter import UserError

NEXT, STEP, FINISH, UNTIL_POLLED, UNTIL_WOKEN = "next", "step", "finish", "until-polled", "until-woken"
COMMANDS = (NEXT, STEP, FINISH, UNTIL_POLLED, UNTIL_WOKEN)

# How many polls and line steps one command follows before it gives up: a bound on every
# walk, far above what a real next or finish takes.
MAX_ROUNDS = 10000


class Stop(NamedTuple):
    """Why the program stopped: `kind` is `step` (a step or finish ended), `ours` (one of
    this command's breakpoints or watchpoints, `handle`), `sampled` (`run_for`'s time was
    up), `breakpoint` (the user's, `text` names it), `signal` (`text` names it), `exited`
    or `interrupted`."""

    kind: str
    handle: object = None
    text: str = ""
    returned: Optional[str] = None


class Stepper:
    """What a debugger supplies to the stepping commands (see gdb_adapter, lldb_adapter)."""

    def selected_thread_id(self) -> int:
        raise NotImplementedError

    def selected_frame_index(self) -> int:
        raise NotImplementedError

    def frames_with_registers(self) -> List[dict]:
        """The selected thread's frames, innermost first: `{pc, inlined, file, line,
        registers: {name: value}}` (the general registers the debugger unwound)."""
        raise NotImplementedError

    def frame_key(self, index: int):
        """What identifies frame `index` of the selected thread across steps (its function
        and canonical frame address, with the thread)."""
        raise NotImplementedError

    def next_line(self) -> Stop:
        """The debugger's `next` in the innermost frame of the selected thread."""
        raise NotImplementedError

    def finish_frame(self, index: int) -> Stop:
        """The debugger's `finish` of frame `index`; `returned` is the value it printed."""
        raise NotImplementedError

    def resume(self) -> Stop:
        raise NotImplementedError

    def next_instruction(self) -> Stop:
        """One machine instruction, stepping over calls."""
        raise NotImplementedError

    def add_breakpoint(self, address: int, condition: str):
        raise NotImplementedError

    def add_write_watchpoint(self, address: int, size: int, condition: str):
        """A hardware watchpoint; raise UserError when none can be had."""
        raise NotImplementedError

    def remove(self, handle) -> None:
        raise NotImplementedError

    def set_enabled(self, handle, enabled: bool) -> None:
        raise NotImplementedError

    def where(self) -> str:
        """Where the selected thread stopped, in the debugger's usual form."""
        raise NotImplementedError

    def select_thread_in(self, functions) -> bool:
        """Selects a thread with one of its innermost frames in a function whose name
        contains one of `functions`; False when none is."""
        raise NotImplementedError

    def thread_description(self) -> str:
        """`thread TID "NAME"` of the selected thread."""
        raise NotImplementedError

    def run_for(self, seconds: float) -> Stop:
        """Resumes the program and stops it after `seconds`: kind `sampled` when that is why
        it stopped, else the stop that came first (the user's breakpoint, Ctrl-C, ...)."""
        raise NotImplementedError

    def select(self, thread_id: int, frame_index: int) -> None:
        """Selects that thread (by its id) and frame again, if the thread is still there."""
        raise NotImplementedError

    def check_can_sample(self) -> None:
        """Raise UserError if stopping the program every interval would harm it."""


class Session:
    """One stepping command: its breakpoints, removed by `close` whatever happens."""

    def __init__(self, stepper: Stepper, core_calls):
        self.stepper = stepper
        # `plan(selected)`, `poll_targets(task)`, `wake_watch(task)`, `read(address, size)`.
        self.core = core_calls
        self.handles = []

    def close(self, handles=None):
        """Removes these breakpoints (all of them by default)."""
        handles = list(self.handles if handles is None else handles)
        for handle in handles:
            try:
                self.stepper.remove(handle)
            except Exception:
                pass  # The process may be gone; its breakpoints went with it.
        self.handles = [handle for handle in self.handles if handle not in handles]

    def _enable(self, enabled: bool):
        for handle in self.handles:
            self.stepper.set_enabled(handle, enabled)

    def step(self, how: str, frame: int = 0) -> Stop:
        """A step inside one poll (`next`, `finish`, `nexti`), with this command's breakpoints
        off: the coroutine being stepped cannot be polled elsewhere meanwhile, and a debugger's
        step can lose its way when another thread stops at a breakpoint (LLDB does)."""
        self._enable(False)
        if how == "next":
            return self.stepper.next_line()
        if how == "nexti":
            return self.stepper.next_instruction()
        return self.stepper.finish_frame(frame)

    def resume(self) -> Stop:
        self._enable(True)
        return self.stepper.resume()

    def arm(self, coroutine) -> list:
        """Breakpoints that stop when this coroutine instance is resumed."""
        if not coroutine.stops:
            raise UserError(coroutine.unstoppable or "cannot stop at %s in this build" % coroutine.function)
        armed = []
        for address, registers in coroutine.stops:
            condition = " || ".join("$%s == 0x%x" % (register, coroutine.address) for register in registers)
            handle = self.stepper.add_breakpoint(address, condition)
            self.handles.append(handle)
            armed.append(handle)
        return armed

    def has_returned(self, coroutine) -> bool:
        if coroutine.state_offset is None:
            return False
        state = self.core.read(coroutine.address + coroutine.state_offset, coroutine.state_size)
        return state is not None and coroutine.has_returned(state)


def _not_ours(stop: Stop, command: str) -> str:
    if stop.kind == "breakpoint":
        return "async %s ended: the program stopped at %s" % (command, stop.text)
    if stop.kind == "signal":
        return "async %s ended: the program received %s" % (command, stop.text)
    if stop.kind == "exited":
        return "async %s ended: the program exited%s" % (command, stop.text)
    if stop.kind == "interrupted":
        return "async %s interrupted" % command
    return "async %s ended: the program stopped (%s)" % (command, stop.text or stop.kind)


def _trace(*what):
    if os.environ.get("TOKIO_ASYNC_TRACE_STEPS"):
        print("tokio-async step:", *what)


class Ended(Exception):
    """The command ended on a stop that was not its own; the message says which."""


def _checked(stop: Stop, command: str, expected=("step", "ours")) -> Stop:
    if stop.kind not in expected:
        raise Ended(_not_ours(stop, command))
    return stop


def _who(plan, coroutine=None) -> str:
    coroutine = coroutine or (plan.chain[0] if plan.chain else None)
    owner = "task %d" % plan.task if plan.task is not None else "the block_on future"
    if coroutine is None:
        return owner
    where = "%s:%s" % (coroutine.file, coroutine.line) if coroutine.file and coroutine.line else "an unknown line"
    return "%s, async fn %s at %s" % (owner, coroutine.function, where)


def _current(session: Session):
    """The plan of the selected frame: it must run a coroutine."""
    plan = session.core.plan(session.stepper.selected_frame_index())
    if not plan.chain:
        raise UserError("the selected frame is in no async fn or block of a task; stop in one first")
    return plan


def _require_own_frame(session: Session, plan):
    if plan.chain[0].frame != session.stepper.selected_frame_index():
        raise UserError("the selected frame is not an async fn's own code; select one (frame N)")


class Follow:
    """Runs the selected coroutine instance to its next line, or to its return."""

    def __init__(self, session: Session, command: str, plan):
        self.session, self.command = session, command
        self.stepper = session.stepper
        self.plan = plan
        self.coroutine = plan.chain[0]
        self.entries = session.arm(self.coroutine)

    def step_out_to(self, frame_index: int, returned_values: list):
        """Finishes the frames inside frame `frame_index`, so that it is innermost."""
        for _ in range(frame_index):
            stop = _checked(self.session.step("finish"), self.command)
            if stop.kind == "ours":
                return stop
            if stop.returned:
                returned_values.append(stop.returned)
        return None

    def run(self, to_return: bool):
        """Steps (`next`, or `finish` when `to_return`) until the coroutine is at another
        line of its own, or has returned; returns how it ended and the value returned."""
        start_line = self.coroutine.line
        key = self.stepper.frame_key(self.coroutine.frame)
        returned = []
        resumed = look_first = False
        if self.coroutine.frame:
            stop = self.step_out_to(self.coroutine.frame, returned)
            if stop is not None:
                self.require_entry(stop)
                key, resumed, look_first = self.entered(), True, not to_return
        stop = Stop("step")
        for _ in range(MAX_ROUNDS):
            if not look_first:
                stop = _checked(self.session.step("finish" if to_return else "next"), self.command)
                _trace("run", stop, self.current_line())
                if stop.kind == "ours":
                    self.require_entry(stop)
                    key, resumed, look_first = self.entered(), True, not to_return
                    continue
            look_first = False
            if self.stepper.frame_key(0) == key:
                line = self.current_line()
                skipped = (start_line,) + ((self.coroutine.declared_line,) if resumed else ())
                if not to_return and line and line not in skipped:
                    return "line", None
                continue
            # Out of its resume function: returned, or suspended until its next poll.
            if self.session.has_returned(self.coroutine):
                return "returned", stop.returned
            self.require_entry(_checked(self.session.resume(), self.command))
            key, resumed, look_first = self.entered(), True, not to_return
        raise UserError("async %s gave up after %d polls and steps" % (self.command, MAX_ROUNDS))

    def require_entry(self, stop: Stop):
        if stop.kind != "ours" or stop.handle not in self.entries:
            raise Ended(_not_ours(stop, self.command))

    def entered(self):
        """At the resume function's first instruction, for this instance: its frame, once
        past the dispatch to where it resumes."""
        key = self.stepper.frame_key(0)
        _past_dispatch(self.session, self.command, self.coroutine.declared_line)
        return key

    def current_line(self):
        frames = self.stepper.frames_with_registers()
        return frames[0]["line"] if frames else None


def _ready_value(returned: str) -> str:
    """`core::task::poll::Poll<u64>::Ready(70)` -> `70`: the value the async fn returned."""
    match = re.match(r"^(?:core::task::poll::)?Poll(?:<.*>)?::Ready\((.*)\)$", returned, re.S)
    return match.group(1) if match else returned


def _to_awaiter(session: Session, command: str, plan, follow) -> str:
    """The selected coroutine returned: stop in its awaiter (the next one out, in the same
    task) at the line after its await. Returns a note for what cannot be done."""
    finished = plan.chain[0]
    if len(plan.chain) < 2:
        return "%s was the task's outermost async fn: the task is complete\n" % finished.function
    awaiter = plan.chain[1]
    # The returned coroutine's memory is the awaiter's to reuse (for its next call's).
    session.close(follow.entries)
    now = session.core.plan(0)
    frame = next((coroutine.frame for coroutine in now.chain if coroutine.address == awaiter.address), None)
    if frame is None:
        return "%s's awaiter %s is not on this thread's stack\n" % (finished.function, awaiter.function)
    for _ in range(frame):
        _checked(session.step("finish"), command, ("step",))
    now = session.core.plan(0)
    if now.chain and now.chain[0].line == awaiter.line:
        # Back in the middle of the await's line: on to the next one.
        Follow(session, command, now).run(to_return=False)
    return ""


def run_command(stepper: Stepper, core_calls, command: str, argument_string: str) -> str:
    """Runs one stepping command; returns what to print, raises UserError with one line."""
    arguments = commands.parse_stepping(command, argument_string)
    session = Session(stepper, core_calls)
    try:
        return _run(session, command, arguments)
    except Ended as ended:
        return "%s\n%s" % (stepper.where(), ended)
    finally:
        session.close()


def _run(session: Session, command: str, arguments) -> str:
    stepper = session.stepper
    task = arguments.task
    if command in (NEXT, FINISH):
        plan = _current(session)
        if arguments.own_frame:
            _require_own_frame(session, plan)
        follow = Follow(session, command, plan)
        outcome, returned = follow.run(to_return=command == FINISH)
        note = ""
        if outcome == "returned":
            if command == FINISH:
                value = _ready_value(returned) if returned is not None else "(the debugger cannot show the value)"
                note = "%s returned %s\n" % (plan.chain[0].function, value)
            note += _to_awaiter(session, command, plan, follow)
        return stepper.where() + note + _who(session.core.plan(0)) + "\n"
    if command == STEP:
        plan = _current(session)
        _require_own_frame(session, plan)
        coroutine = plan.chain[0]
        if not plan.awaitees:
            if plan.awaited:
                raise UserError("line %s awaits %s, which is no async fn; use async next" % (coroutine.line, plan.awaited))
            raise UserError("line %s of %s awaits nothing; `step` steps into calls" % (coroutine.line, coroutine.function))
        handles = [handle for awaitee in plan.awaitees for handle in session.arm(awaitee)]
        _enter(session, command, handles)
        return stepper.where() + _who(session.core.plan(0)) + "\n"
    if command == UNTIL_POLLED:
        targets = session.core.poll_targets(task)
        stoppable = [target for target in targets if target.stops]
        if not stoppable:
            raise UserError(targets[0].unstoppable)
        handles = [handle for target in stoppable for handle in session.arm(target)]
        _enter(session, command, handles)
        return stepper.where() + _who(session.core.plan(0)) + "\n"
    watch = session.core.wake_watch(task)
    if watch.notified_now:
        raise UserError("task %d is already woken (scheduled to run): use async until-polled %d" % (task, task))
    condition = "(*(unsigned long *)0x%x & 0x%x) != 0" % (watch.address, watch.notified_mask)
    session.handles.append(stepper.add_write_watchpoint(watch.address, watch.size, condition))
    for _ in range(MAX_ROUNDS):
        _checked(session.resume(), command, ("ours",))
        # A compare-and-swap that fails writes the word back too, and the debugger may
        # report that thread's write rather than the wake's (or drop the wake's, its value
        # then unchanged). The waking thread is stopped just after its write: select it.
        if stepper.select_thread_in(watch.waking_functions):
            return stepper.where() + "task %d woken by %s\n" % (task, _waker(session))
    raise UserError("async %s gave up after %d writes to task %d's state" % (command, MAX_ROUNDS, task))


# How many instructions a resume function's dispatch (a load of the state and a jump
# through a table) may take.
MAX_DISPATCH_INSTRUCTIONS = 64


def _past_dispatch(session: Session, command: str, declared_line: Optional[int]):
    """From a resume function's first instruction to where the coroutine resumes: by
    instructions, as a line step from there can run past the resumed line (LLDB does)."""
    stepper = session.stepper
    for _ in range(MAX_DISPATCH_INSTRUCTIONS):
        frames = stepper.frames_with_registers()
        line = frames[0]["line"] if frames else None
        if line and line != declared_line:
            return
        _checked(session.step("nexti"), command, ("step",))
        _trace("nexti", line)


def _enter(session: Session, command: str, handles: list):
    """Continues to one of `handles` (a resume function's entry), then past its dispatch to
    the line the coroutine resumes at."""
    stop = _checked(session.resume(), command, ("ours",))
    if stop.handle not in handles:
        raise Ended(_not_ours(stop, command))
    plan = session.core.plan(0)
    if plan.chain:
        _past_dispatch(session, command, plan.chain[0].declared_line)


def _waker(session: Session) -> str:
    """The task the selected thread runs, with its innermost async fn in the program's own
    code (else its innermost), or the thread itself and the runtime work it does."""
    plan = session.core.plan(0)
    if plan.chain:
        users = [coroutine for coroutine in plan.chain if coroutine.users_own]
        return _who(plan, (users or plan.chain)[0])
    # No async fn on its stack: the task id its context may hold is the blocking-pool task
    # a worker runs as, not a task it polls.
    return "%s, in no task%s" % (session.stepper.thread_description(), session.core.driver_note())
