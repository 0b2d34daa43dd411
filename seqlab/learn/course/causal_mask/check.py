"""causal_mask: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_values
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return [Case(said("cases.worked"), (3,)), Case(said("cases.random", k=1), (4,)), Case(said("cases.random", k=2), (6,))]


def invariants(case, out):
    n = case.args[0]
    count = int(np.asarray(out).sum())
    return None if count == n * (n + 1) // 2 else say("count", count=count, n=n, total=n * (n + 1) // 2)


CHECKS = {"rows are queries": Check(verify=same_values()),
          "sizes": Check(lambda: [Case(say("n_1"), (1,)), Case(say("n_50"), (50,))])}
axes = {"": ("query row", "key")}


# --- mistakes -----------------------------------------------------------------------------------------
def current_position_excluded(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


def one_future_position_included(n):
    return np.tril(np.ones((n, n), dtype=bool), k=1)


def transposed(n):
    return np.triu(np.ones((n, n), dtype=bool))


def _numbers_not_bool(ev):
    """Recognises a 0/1 array of numbers whose truth values are the reference's mask."""
    for i in ev.own():
        raw = ev.raw[i]
        if not isinstance(raw, np.ndarray) or raw.dtype == bool or raw.shape != np.shape(ev.expected[i]):
            return None
        if not np.array_equal(raw != 0, ev.expected[i]):
            return None
    return say("numbers", dtype=str(ev.raw[ev.own()[0]].dtype))


MUTANTS = {"current_position_excluded": current_position_excluded,
           "one_future_position_included": one_future_position_included, "transposed": transposed}
RECOGNISERS = {"current_position_excluded": D.diagonal_offset((), say("no_diagonal")),
               "one_future_position_included": D.diagonal_offset((), say("one_future")),
               "transposed": D.transposed(()), "numbers_not_bool": _numbers_not_bool,
               "fixed_size": D.failed_check("sizes", raises=True)}
