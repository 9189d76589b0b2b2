"""`async sample`, shared by both debuggers: runs the program, stops it every interval,
adds every task of each stop to the core's `Sampler` (nothing is written to the program),
and prints where the task-samples were parked. The program ends stopped, with the thread
and frame selected that were at the start; Ctrl-C ends the sampling and still prints the
report so far."""

from . import commands
from .adapter import UserError

SAMPLE = "sample"


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
    options = commands.parse_sample(argument_string)
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
