"""cross_entropy: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import math

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit_torch import (dtype, f32, gen, leading_dims, non_finite_on, plain_softmax, randn,
                                    same_dtype_and_values, tensor)
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    import torch
    generator = gen(18)
    return [Case(said("cases.worked"), (tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]), torch.tensor([0, 1]))),
            Case(said("cases.random", k=1), (randn(2, 4, 7, seed=19, scale=3),
                                              torch.randint(0, 7, (2, 4), generator=generator))),
            Case(say("case_large"), (randn(5, 6, seed=20, scale=300), torch.randint(0, 6, (5,), generator=generator)))]


def _targets(*shape, vocab, seed):
    import torch
    return torch.randint(0, vocab, shape, generator=gen(seed))


def _targets_of(values):
    import torch
    return torch.tensor(values)


def _int32(t):
    import torch
    return t.to(torch.int32)


CHECKS = {
    "leading dims": Check(lambda: [
        Case(say("case_3_leading"), (randn(2, 3, 4, 7, seed=100, scale=2), _targets(2, 3, 4, vocab=7, seed=101))),
        Case(say("case_no_leading"), (randn(6, seed=102), _targets(vocab=6, seed=103)))]),
    "int32 targets": Check(lambda: [Case(say("case_int32"), (randn(3, 5, seed=104),
                                                             _int32(_targets(3, vocab=5, seed=105))))]),
    "large logits": Check(lambda: [
        Case(say("case_near_1000"), (randn(4, 6, seed=106, scale=5) + 1000, _targets(4, vocab=6, seed=107))),
        Case(say("case_near_minus_1000"), (randn(2, 3, 5, seed=108, scale=5) - 1000,
                                           _targets(2, 3, vocab=5, seed=109)))]),
    "target far below the maximum": Check(lambda: [
        Case(say("case_900_below"), (tensor([[0.0, 900.0, 3.0], [2.0, 1.0, 0.0]]), _targets_of([0, 1]))),
        Case(say("case_200_below"), (*f32(tensor([[[200.0, 0.0, 1.0], [0.5, 0.0, 2.0]]])), _targets_of([[1, 2]])))]),
    "dtype": Check(lambda: [Case(say("case_f32"), (*f32(randn(2, 3, 6, seed=110, scale=2)),
                                                     _targets(2, 3, vocab=6, seed=111)))],
                   same_dtype_and_values),
}


def _positions_and_vocab(case):
    logits = case.args[0]
    n = 1
    for size in logits.shape[:-1]:
        n *= size
    return n, logits.shape[-1]


# --- mistakes -----------------------------------------------------------------------------------------
def _nll(logits, targets):
    from seqlab.model.activations import log_softmax
    logp = log_softmax(logits.reshape(-1, logits.shape[-1]))
    return -logp.gather(-1, targets.reshape(-1, 1).long())


def summed_not_averaged(logits, targets):
    return _nll(logits, targets).sum()


def log_softmax_over_wrong_axis(logits, targets):
    from seqlab.model.activations import log_softmax
    flat = logits.reshape(-1, logits.shape[-1])
    logp = log_softmax(flat, 0)
    return -logp.gather(-1, targets.reshape(-1, 1).long()).mean()


def max_not_subtracted(logits, targets):
    flat = logits.reshape(-1, logits.shape[-1])
    logp = flat - flat.exp().sum(-1, keepdim=True).log()
    return -logp.gather(-1, targets.reshape(-1, 1).long()).mean()


def probabilities_not_log(logits, targets):
    probs = plain_softmax(logits.reshape(-1, logits.shape[-1]))
    return -probs.gather(-1, targets.reshape(-1, 1).long()).mean()


def log_of_softmax(logits, targets):
    probs = plain_softmax(logits.reshape(-1, logits.shape[-1]))
    return -probs.log().gather(-1, targets.reshape(-1, 1).long()).mean()


def _rounded_to_zero(ev):
    """The check of a target far below its row's maximum failed with an infinite loss, the large logits'
    check passed and the values are right on the exercise's own cases: the log of a probability that
    rounded to 0 (the maximum was subtracted)."""
    if "target far below the maximum" not in ev.failed or "large logits" in ev.failed or not D.own_values_right(ev):
        return None
    for i, case in enumerate(ev.cases):
        if case.spec == "target far below the maximum" and ev.raw[i] is not None:
            try:
                loss = float(ev.raw[i])
            except (TypeError, ValueError):
                return None
            if loss == math.inf:                 # -log(0): not -inf, which a log-sum-exp of zeros gives
                return say("rounded_to_zero", case=case.label, loss=str(loss))
    return None


def averaged_over_the_vocabulary_too(logits, targets):
    return _nll(logits, targets).mean() / logits.shape[-1]


MUTANTS = {"summed_not_averaged": summed_not_averaged, "log_softmax_over_wrong_axis": log_softmax_over_wrong_axis,
           "max_not_subtracted": max_not_subtracted, "probabilities_not_log": probabilities_not_log,
           "log_of_softmax": log_of_softmax,
           "averaged_over_the_vocabulary_too": averaged_over_the_vocabulary_too}
RECOGNISERS = {
    "summed_not_averaged": D.factor_of(((),), lambda case: {say("n_positions"): _positions_and_vocab(case)[0]}),
    "max_not_subtracted": non_finite_on("large logits", say("max_in_lse")),
    "log_of_softmax": _rounded_to_zero,
    "averaged_over_the_vocabulary_too": D.factor_of(((),), lambda case: {"1/vocab": 1 / _positions_and_vocab(case)[1]}),
    "shapes_and_types": D.failed_check("shapes and types", alone=False),
    "int32_targets": D.failed_check("int32 targets", raises=True), "leading_dims": leading_dims(), "dtype": dtype()}
