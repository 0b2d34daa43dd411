"""adamw_step: the reference (one step of seqlab.training.AdamW), the cases, the checks of its sentences, its
mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import math

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, numbered_cases
from seqlab.learn.kit_torch import dtype, f32, matches_any, randn, same_dtype_and_values
from seqlab.learn.words import speaker

say = speaker(__file__)


def reference(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    """One update of seqlab.training.AdamW (its per-parameter form) on the tensor p from the state (m, v)
    after step - 1 steps. Returns the new (p, m, v); the arguments are not changed.

    The optimizer is made without torch.optim.Optimizer.__init__, whose add_param_group imports
    torch._dynamo (about 1.6 s) on first use; the update itself is AdamW's own code."""
    import torch

    from seqlab.training import AdamW
    param = p.detach().clone()
    optimizer = AdamW.__new__(AdamW)
    optimizer.state = {param: {"step": step - 1, "exp_avg": m.clone(), "exp_avg_sq": v.clone()}}
    param.grad = grad.clone()
    with torch.no_grad():
        optimizer._update_one({"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay}, param)
    state = optimizer.state[param]
    return param.clone(), state["exp_avg"].clone(), state["exp_avg_sq"].clone()


def _inputs(shape, seed, step, lr=0.01, wd=0.01, grad_scale=1.0, **kwargs):
    import torch
    p, g = randn(*shape, seed=seed), randn(*shape, seed=seed + 10, scale=grad_scale)
    if step == 1:
        m, v = torch.zeros(shape, dtype=torch.float64), torch.zeros(shape, dtype=torch.float64)
    else:
        m = randn(*shape, seed=seed + 20, scale=0.1 * grad_scale)
        v = randn(*shape, seed=seed + 30, scale=0.1 * grad_scale) ** 2
    return (p, g, m, v, step, lr), {"weight_decay": wd, **kwargs}


def cases() -> list[Case]:
    return numbered_cases(lambda k, seed, step, wd: _inputs((3, 4), seed, step, wd=wd),
                          ((0, 1, 0.1), (1, 5, 0.01), (2, 40, 0.3)))


def _case(label, *args, **kwargs):
    return Case(label, *_inputs(*args, **kwargs))


def _float32_case():
    args, kwargs = _inputs((3, 4), 128, 3)
    return Case(say("case_f32"), f32(*args), kwargs)


CHECKS = {
    "step": Check(lambda: [_case(say("case_step_1"), (4,), 120, 1, lr=0.1, wd=0.0),
                           _case(say("case_step_2"), (4,), 121, 2, lr=0.1, wd=0.0)]),
    "decay": Check(lambda: [_case(say("case_decay"), (3, 3), 122, 10, lr=0.1, wd=0.5)]),
    "eps": Check(lambda: [_case(say("case_tiny", step=1), (2, 3), 123, 1, lr=0.01, wd=0.0, grad_scale=1e-9),
                          _case(say("case_tiny", step=4), (2, 3), 124, 4, lr=0.01, wd=0.0, grad_scale=1e-9)]),
    "hyperparameters": Check(lambda: [_case("betas (0.8, 0.95), eps 1e-3", (3, 2), 125, 3, wd=0.2, betas=(0.8, 0.95),
                                            eps=1e-3)]),
    "any shape": Check(lambda: [_case("p (5,)", (5,), 126, 2), _case("p (2, 3, 2)", (2, 3, 2), 127, 7)]),
    "dtype": Check(lambda: [_float32_case()], same_dtype_and_values),
}


# --- mistakes -----------------------------------------------------------------------------------------
def _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, *, decay="parameter", correct=True, eps_inside=False,
           decay_after=False, eps_folded=False, decay_lr=True, step_shift=0, return_hats=False):
    beta1, beta2 = betas
    step = step + step_shift
    if decay == "moment":
        grad = grad + weight_decay * p                     # L2 in the gradient: it reaches m and v
    rate = lr * weight_decay if decay_lr else weight_decay
    new_p = p * (1 - rate) if decay == "parameter" and not decay_after else p.clone()
    m = beta1 * m + (1 - beta1) * grad
    v = beta2 * v + (1 - beta2) * grad * grad
    m_hat, v_hat = (m / (1 - beta1 ** step), v / (1 - beta2 ** step)) if correct else (m, v)
    if eps_folded:                                         # alpha_t = lr sqrt(1 - beta2^t) / (1 - beta1^t), eps beside sqrt(v)
        new_p = new_p - lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step) * m / (v.sqrt() + eps)
    else:
        denom = (v_hat + eps).sqrt() if eps_inside else v_hat.sqrt() + eps
        new_p = new_p - lr * m_hat / denom
    if decay_after:                                        # CS336's order: the decay on the updated parameter
        new_p = new_p - rate * new_p
    return (new_p, m_hat, v_hat) if return_hats else (new_p, m, v)


def decay_after_the_update(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay_after=True)


def cs336_algorithm(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay_after=True, eps_folded=True)


def eps_beside_the_uncorrected_root(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, eps_folded=True)


def eps_inside_the_root(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, eps_inside=True)


def decay_on_the_moment(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay="moment")


def no_bias_correction(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, correct=False)


def no_weight_decay(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, 0.0)


def decay_without_the_learning_rate(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, decay_lr=False)


def bias_correction_one_step_late(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, step_shift=1)


def corrected_moments_returned(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, betas, eps, weight_decay, return_hats=True)


def default_betas_and_eps(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
    return _adamw(p, grad, m, v, step, lr, (0.9, 0.999), 1e-8, weight_decay)


MUTANTS = {"decay_after_the_update": decay_after_the_update,
           "eps_beside_the_uncorrected_root": eps_beside_the_uncorrected_root, "cs336_algorithm": cs336_algorithm,
           "eps_inside_the_root": eps_inside_the_root, "decay_on_the_moment": decay_on_the_moment,
           "no_bias_correction": no_bias_correction, "bias_correction_one_step_late": bias_correction_one_step_late,
           "no_weight_decay": no_weight_decay, "decay_without_the_learning_rate": decay_without_the_learning_rate,
           "corrected_moments_returned": corrected_moments_returned, "default_betas_and_eps": default_betas_and_eps}
RECOGNISERS = {"eps_beside_the_uncorrected_root": matches_any(eps_beside_the_uncorrected_root, cs336_algorithm,
                                                              text=say("adam_eps")),
               "any_shape": D.failed_check("any shape", raises=True), "dtype": dtype()}
