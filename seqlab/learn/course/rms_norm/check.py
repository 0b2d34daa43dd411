"""rms_norm: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit_torch import dtype, f32, leading_dims, randn, same_dtype_and_values, tensor
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return [Case(said("cases.worked"), (tensor([[3.0, 4.0], [1e-3, -1e-3]]), tensor([1.0, 2.0])), {"eps": 1e-5}),
            Case(said("cases.random", k=1), (randn(2, 3, 8, seed=3), randn(8, seed=4) + 1)),
            Case(say("case_small"), (randn(4, 6, seed=5, scale=1e-2), randn(6, seed=6) + 1), {"eps": 1e-3})]


CHECKS = {
    "leading dims": Check(lambda: [Case(say("case_1d"), (randn(6, seed=40), randn(6, seed=41) + 1)),
                                   Case(say("case_3_leading"), (randn(2, 2, 3, 5, seed=42), randn(5, seed=43) + 1))]),
    "eps inside": Check(lambda: [Case(say("case_tiny"), (randn(3, 4, seed=44, scale=1e-3), randn(4, seed=45) + 1),
                                      {"eps": 1e-2})]),
    "eps given": Check(lambda: [Case("eps=0.5", (randn(2, 4, seed=46), randn(4, seed=47) + 1), {"eps": 0.5}),
                                Case(say("case_default_eps"), (randn(3, 4, seed=48, scale=3e-3),
                                                               randn(4, seed=49) + 1))]),
    "dtype": Check(lambda: [Case(say("case_f32"), f32(randn(3, 8, seed=50), randn(8, seed=51) + 1))],
                   same_dtype_and_values),
}


# --- mistakes -----------------------------------------------------------------------------------------
def eps_outside_the_root(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True).sqrt() + eps) * weight


def mean_subtracted(x, weight, eps=1e-5):
    centred = x - x.mean(-1, keepdim=True)                 # that is LayerNorm's first step
    return centred / (centred.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def weight_missing(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt()


def mean_over_every_dimension(x, weight, eps=1e-5):
    return x / (x.pow(2).mean() + eps).sqrt() * weight     # one root mean square for the whole tensor


def eps_ignored(x, weight, eps=1e-5):
    return x / (x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt() * weight


def _over_another_axis(ev):
    """The student's output is x / rms * weight with the mean of squares taken over another axis."""
    found_first = None
    for i in ev.usable("all"):
        if not ev.wrong(i, ()):
            continue
        x, weight = ev.cases[i].args[:2]
        eps = ev.cases[i].kwargs.get("eps", 1e-5)
        found = [k for k in range(x.dim() - 1)
                 if D.close(x / (x.pow(2).mean(k, keepdim=True) + eps).sqrt() * weight, ev.outputs[i], ev.rtol, ev.atol)]
        if not found:
            return None
        found_first = found_first or say("other_axis", case=ev.cases[i].label, axis=found[0])
    return found_first


MUTANTS = {"eps_outside_the_root": eps_outside_the_root, "mean_subtracted": mean_subtracted,
           "weight_missing": weight_missing, "mean_over_every_dimension": mean_over_every_dimension,
           "eps_ignored": eps_ignored}
RECOGNISERS = {"wrong_axis": _over_another_axis, "eps_ignored": D.matches(eps_ignored),
               "leading_dims": leading_dims(), "dtype": dtype()}
