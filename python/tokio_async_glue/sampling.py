"""`async sample`, shared by both debuggers: runs the program, stops it every interval,
adds every task of each stop to the core's `Sampler` (nothing is written to the program),
and prints where the task-samples were parked. The program ends stopped, with the thread
and frame selected that were at the start; Ctrl-C ends the sampling and still prints the
report so far."""

import os
import shlex
from typing import NamedTuple, Optional

from .adapter import UserError

SAMPLE = "sample"
USAGE = "usage: async sample [--interval SECONDS] [--count N] [--output FILE.folded] [--svg FILE.svg]"
HELP = (
    "Sample where the tasks wait: run the program, stop it every --interval seconds (default 0.5), --count times "
    "(default 20), and read every task at each stop; then print each await point's share of the task-samples and "
    "the tasks that never moved. --output writes folded stacks (inferno-flamegraph, speedscope), --svg a flamegraph."
)
# A bound on the walk: at most this many samples, each at least this far apart.
MAX_COUNT = 100000
MIN_INTERVAL = 0.001


class Options(NamedTuple):
    interval: float = 0.5
    count: int = 20
    folded: Optional[str] = None
    svg: Optional[str] = None


def parse(argument_string: str) -> Options:
    try:
        words = shlex.split(argument_string)
    except ValueError as error:
        raise UserError("%s; %s" % (error, USAGE)) from None
    options = Options()
    while words:
        word = words.pop(0)
        name, _, attached = word.partition("=")
        if name not in ("--interval", "-i", "--count", "-c", "--output", "-o", "--svg"):
            raise UserError("unknown argument %r; %s" % (word, USAGE))
        if not attached and not words:
            raise UserError("%s needs a value; %s" % (name, USAGE))
        value = attached or words.pop(0)
        if name in ("--interval", "-i"):
            try:
                interval = float(value[:-1] if value.endswith("s") else value)
            except ValueError:
                interval = -1.0
            if not MIN_INTERVAL <= interval <= 3600:
                raise UserError("--interval needs seconds between %g and 3600, not %r" % (MIN_INTERVAL, value))
            options = options._replace(interval=interval)
        elif name in ("--count", "-c"):
            if not value.isdigit() or not 1 <= int(value) <= MAX_COUNT:
                raise UserError("--count needs a number of samples from 1 to %d, not %r" % (MAX_COUNT, value))
            options = options._replace(count=int(value))
        else:
            path = os.path.abspath(os.path.expanduser(value))
            options = options._replace(**{"folded" if name in ("--output", "-o") else "svg": path})
    return options


def _why_it_ended(stop, taken: int) -> str:
    after = "after %d sample%s" % (taken, "" if taken == 1 else "s")
    if stop.kind == "interrupted":
        return "sampling interrupted (Ctrl-C) %s" % after
    if stop.kind == "exited":
        return "sampling ended %s: the program exited%s" % (after, stop.text)
    if stop.kind == "breakpoint":
        return "sampling ended %s: the program stopped at %s" % (after, stop.text)
    if stop.kind == "signal":
        return "sampling ended %s: the program received %s" % (after, stop.text)
    return "sampling ended %s: the program stopped (%s)" % (after, stop.text or stop.kind)


def run_command(stepper, core_calls, argument_string: str) -> str:
    """`core_calls.sample(sampler)` adds the stop the program is at; `core_calls.new_sampler()`."""
    options = parse(argument_string)
    stepper.check_can_sample()
    sampler = core_calls.new_sampler()
    selected = (stepper.selected_thread_id(), stepper.selected_frame_index())
    note, taken, exited = None, 0, False
    try:
        for _ in range(options.count):
            stop = stepper.run_for(options.interval)
            if stop.kind != "sampled":
                note, exited = _why_it_ended(stop, taken), stop.kind == "exited"
                break
            core_calls.sample(sampler)
            taken += 1
    except KeyboardInterrupt:
        note = "sampling interrupted (Ctrl-C) after %d sample%s" % (taken, "" if taken == 1 else "s")
    finally:
        if not exited:
            stepper.select(*selected)
    if taken == 0:
        raise UserError(note or "no sample taken")
    return sampler.report(interval=options.interval, note=note, folded=options.folded, svg=options.svg)
