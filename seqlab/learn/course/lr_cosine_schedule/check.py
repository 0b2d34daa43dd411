"""lr_cosine_schedule: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml). A slip in one phase of the schedule shows only on that phase's steps: each recogniser names the phase."""

from __future__ import annotations

import functools
import math

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    worked = [Case(said("cases.worked") if it == 0 else say("at_step", cases=said("cases.worked"), it=it),
                   (it, 1.0, 0.1, 4, 12)) for it in (0, 2, 4, 8, 12, 20)]
    return worked[:1] + [Case(say("at_step", cases=say("random_inputs"), it=c.args[0]), c.args) for c in worked[1:]] + [
        Case(say("at_step", cases=say("random_inputs"), it=37), (37, 3e-4, 3e-5, 10, 100))]


def _steps_of(label, *its):
    return lambda: [Case(say("at_step", cases=label, it=it), (it, 2.0, 0.5, 4, 10)) for it in its]


CHECKS = {
    "a float": Check(verify=same_dtypes()),
    "warm-up": Check(_steps_of(say("warm_up"), 0, 1, 3)),
    "cosine": Check(_steps_of(say("cosine"), 4, 5, 7, 10)),
    "progress": Check(lambda: [Case(say("at_step", cases="progress", it=it), (it, 1.0, 0.0, 3, 15)) for it in (6, 11)]),
    "after the cycle": Check(_steps_of(say("after_the_cycle"), 11, 30)),
}


# --- mistakes -----------------------------------------------------------------------------------------
def _schedule(it, high, low, warmup, cycle, *, warm=lambda it, w: it / w, progress=None, period=1.0,
              floor=True, swapped=False, warm_from_min=False):
    if it < warmup:
        if warm_from_min:
            return low + (high - low) * it / warmup
        return high * warm(it, warmup)
    if it > cycle and floor:
        return low
    p = (it - warmup) / (cycle - warmup) if progress is None else progress(it, warmup, cycle)
    top, bottom = (low, high) if swapped else (high, low)
    return bottom + 0.5 * (1 + math.cos(period * math.pi * p)) * (top - bottom)


def warmup_off_by_one(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters,
                     warm=lambda it, w: (it + 1) / w)


def warmup_from_min(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, warm_from_min=True)


def cosine_over_the_whole_run(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters,
                     progress=lambda it, w, c: it / c)    # the warm-up steps are counted in the cosine


def full_cosine_period(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, period=2.0)


def max_and_min_swapped(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, swapped=True)


def no_floor_after_the_cycle(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
    return _schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters, floor=False)


def _phase(case) -> str:
    it, _, _, warmup, cycle = case.args
    return "warm-up" if it < warmup else "after the cycle" if it > cycle else "cosine"


def _steps(cases):
    """'it = 0, 2 with max 1.0, min 0.1, warm-up 4, cycle 12; it = 5 with ...' for schedule cases (words said later)."""
    by_setting: dict = {}
    for case in cases:
        by_setting.setdefault(case.args[1:], []).append(str(case.args[0]))
    return D.listed([say("steps", its=", ".join(its), high=str(hi), low=str(lo), warmup=str(w), cycle=str(c))
                   for (hi, lo, w, c), its in list(by_setting.items())[:2]], "describe.joined")


def _family(formula, phase: str, text) -> D.Recogniser:
    """Fits when every rate in ``phase`` equals the mutant ``formula``'s rate there (a right rate where the
    formula gives another is evidence against it), and one differs from the reference's at least; the rest of
    the schedule may be right or hold another slip."""
    def recognise(ev):
        steps = []
        for i in ev.usable("all"):
            case = ev.cases[i]
            if _phase(case) != phase:
                continue
            if not D.close(formula(*case.args), ev.outputs[i], ev.rtol, ev.atol):
                return None
            if ev.wrong(i, ()):
                steps.append(case)
        return say("with_steps", text=text, steps=_steps(steps)) if steps else None
    return recognise


_PHASES = {"warm-up": say("phase_warm_up"), "cosine": say("phase_cosine"), "after the cycle": say("phase_after")}


def _one_phase_wrong(ev):
    """Fits when the wrong rates all lie in one phase of the schedule; names it, its steps and the right phases."""
    wrong = [i for i in ev.usable("all") if ev.wrong(i, ())]
    phases = {_phase(ev.cases[i]) for i in wrong}
    if len(phases) != 1:
        return None
    right = [_PHASES[p] for p in _PHASES if p in {_phase(ev.cases[i]) for i in ev.usable("all")} - phases]
    if not right:
        return None
    return say("one_phase_is" if len(right) == 1 else "one_phase_are", wrong=_PHASES[phases.pop()],
               steps=_steps([ev.cases[i] for i in wrong]),
               right=functools.reduce(lambda a, b: say("and", a=a, b=b), right))


MUTANTS = {"warmup_off_by_one": warmup_off_by_one, "warmup_from_min": warmup_from_min,
           "cosine_over_the_whole_run": cosine_over_the_whole_run, "full_cosine_period": full_cosine_period,
           "max_and_min_swapped": max_and_min_swapped, "no_floor_after_the_cycle": no_floor_after_the_cycle}
RECOGNISERS = {
    "warmup_off_by_one": _family(warmup_off_by_one, "warm-up", say("warmup_ahead")),
    "warmup_from_min": _family(warmup_from_min, "warm-up", say("warmup_from_min")),
    "cosine_over_the_whole_run": _family(cosine_over_the_whole_run, "cosine", say("progress_whole_run")),
    "full_cosine_period": _family(full_cosine_period, "cosine", say("full_period")),
    "max_and_min_swapped": _family(max_and_min_swapped, "cosine", say("swapped")),
    "no_floor_after_the_cycle": _family(no_floor_after_the_cycle, "after the cycle", say("no_floor")),
    "one_phase": _one_phase_wrong, "a_float": D.failed_check("a float", alone=False)}
