"""softmax: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit_torch import (dtype, f32, in_float64, matches_any, non_finite_on, plain_softmax, randn,
                                    same_dtype_and_values, tensor)
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return [Case(said("cases.worked"), (tensor([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1001.0]]),)),
            Case(said("cases.random", k=1), (randn(2, 3, 5, seed=1, scale=3),), {"dim": 1}),
            Case(said("cases.random", k=2), (randn(4, 6, seed=2, scale=50),), {"dim": -1})]


def invariants(case, out):
    import torch
    dim = case.kwargs.get("dim", -1)
    sums = out.sum(dim)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-9):
        return say("sums_not_one", dim=dim, total=f"{sums.flatten()[0].item():.6g}")
    return None


CHECKS = {
    "any shape": Check(lambda: [Case(say("case_1d"), (randn(5, seed=30),)),
                                Case(say("case_4d"), (randn(2, 3, 4, 2, seed=31),), {"dim": 2})]),
    "dim": Check(lambda: [Case(say("case_columns"), (randn(4, 3, seed=32),), {"dim": 0}),
                          Case(say("case_3d"), (randn(2, 5, 3, seed=33),), {"dim": -2})]),
    "large logits": Check(lambda: [
        Case(say("case_1000"), (tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1001.0]]),)),
        Case(say("case_rows"), (tensor([[0.0, 1.0, 2.0], [800.0, 801.0, 700.0]]),)),
        Case(say("case_1500"), (tensor([[0.0, 0.0, 1500.0], [3.0, 2.0, 1.0]]),))]),
    "dtype": Check(lambda: [Case(say("case_f32"), f32(randn(3, 4, seed=34, scale=3))),
                            Case(say("case_f32_100"), f32(randn(2, 5, seed=35, scale=100)), {"dim": 0})],
                   same_dtype_and_values),
}


# --- mistakes -----------------------------------------------------------------------------------------
def wrong_axis(x, dim=-1):
    return plain_softmax(x, 0)


def max_not_subtracted(x, dim=-1):
    e = x.exp()
    return e / e.sum(dim, keepdim=True)


def max_of_the_whole_tensor(x, dim=-1):
    e = (x - x.max()).exp()                                # one maximum for every row: small rows underflow to 0/0
    return e / e.sum(dim, keepdim=True)


def normalised_over_everything(x, dim=-1):
    e = (x - x.max()).exp()
    return e / e.sum()                                     # right only for a single row


def _normalised_along_another_axis(ev):
    """The student's output sums to 1 along another axis than `dim`, on every case where it is wrong."""
    import numpy as np
    found = []
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        a = D.array(ev.outputs[i])
        if a.ndim < 2 or not np.isfinite(a).all():
            return None
        dim = ev.cases[i].kwargs.get("dim", -1) % a.ndim
        axes = [k for k in range(a.ndim) if np.allclose(a.sum(k), 1.0, atol=1e-9)]
        if not axes or dim in axes:
            return None
        found.append(say("sums_along", case=ev.cases[i].label, axis=axes[0], dim=dim))
    return D.listed(found[:2], "describe.joined") if found else None


def _normalised_over_everything(ev):
    import numpy as np
    for i in ev.usable("all"):
        a = D.array(ev.outputs[i])
        if ev.wrong(i, ()) and a.ndim >= 2 and np.isfinite(a).all() and abs(a.sum() - 1.0) < 1e-9:
            return say("whole_sums_one", case=ev.cases[i].label)
    return None


def _overflows_alone(ev):
    """Right on the exercise's own cases, not finite on the large logits: something else than each row's maximum
    subtracted (nothing, the mean); one maximum for the whole tensor fails the worked example already."""
    if not D.own_values_right(ev):
        return None
    return non_finite_on("large logits", say("max_along_dim"))(ev)


MUTANTS = {"wrong_axis": wrong_axis, "max_not_subtracted": max_not_subtracted,
           "max_of_the_whole_tensor": max_of_the_whole_tensor, "normalised_over_everything": normalised_over_everything}
RECOGNISERS = {"wrong_axis": _normalised_along_another_axis,
               # each by its values on every case, NaN where the mistake gives NaN: the two look alike where
               # some value is not finite, and differ in which
               "max_not_subtracted": D.any_of(matches_any(max_not_subtracted, in_float64(max_not_subtracted), text=say("no_max")),
                                              _overflows_alone),
               "max_of_the_whole_tensor": matches_any(max_of_the_whole_tensor, in_float64(max_of_the_whole_tensor),
                                                      text=say("one_max")),
               "normalised_over_everything": _normalised_over_everything,
               "any_shape": D.failed_check("any shape", raises=True), "dim": D.failed_check("dim", raises=True),
               "dtype": dtype()}
