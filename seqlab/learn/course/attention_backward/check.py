"""attention_backward: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import attention as att
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, central_differences, same_dtypes, same_values
from seqlab.learn.kit import copy_arrays, float32, left_at_zero, not_float64, same, seeded_cases, square_only
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases(settings=((0, 3, 3, 2, 2, None), (1, 3, 4, 4, 3, None), (2, 4, 2, 3, 5, None)),
          float32_inputs=False) -> list[Case]:
    def make(k, rng, n, m, d, dv, mask):
        args = (rng.normal(size=(n, d)), rng.normal(size=(m, d)), rng.normal(size=(m, dv)), rng.normal(size=(n, dv)))
        return (float32(args, 0, 1, 2, 3) if float32_inputs else args), ({} if mask is None else {"mask": mask})
    return seeded_cases(make, settings, gradcheck=True)


def gradients(case):
    q, k, v = (copy_arrays(a) for a in case.args[:3])
    d_out, mask = case.args[3], case.kwargs.get("mask")
    return central_differences(lambda: float(np.sum(d_out * att.attention(q, k, v, mask)["output"])),
                               {"q": q, "keys": k, "values": v}), same


CHECKS = {"softmax backward": Check(verify=same_values("q", "keys")), "scale": Check(verify=same_values("q", "keys")),
          "mask": Check(lambda: cases(((81, 4, 4, 3, 2, np.tril(np.ones((4, 4), bool))),
                                       (82, 2, 3, 2, 2, np.array([True, False, True]))))),
          "fully masked rows": Check(lambda: cases(((83, 3, 3, 2, 2,
                                                     np.array([[1, 0, 0], [0, 0, 0], [1, 1, 1]], bool)),))),
          "sizes": Check(lambda: cases(((84, 1, 5, 3, 2, None), (85, 5, 2, 4, 1, None)))),
          "float64": Check(lambda: cases(((86, 3, 3, 2, 2, None),), float32_inputs=True), same_dtypes())}
axes = {"q": ("query row", "feature"), "keys": ("key row", "feature"), "values": ("key row", "value column")}


# --- mistakes -----------------------------------------------------------------------------------------
def missing_scale(q, keys, values, d_output, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (q, keys, values))
    dO = np.asarray(d_output, dtype=np.float64)
    A, _ = att.masked_softmax(Q @ K.T / np.sqrt(Q.shape[1]), mask)
    dA = dO @ V.T
    dS = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    return {"q": dS @ K, "keys": dS.T @ Q, "values": A.T @ dO}


def scaled_twice(q, keys, values, d_output, mask=None):
    grads = att.attention_backward(q, keys, values, d_output, mask)
    scale = 1 / np.sqrt(np.shape(q)[1])
    return {"q": grads["q"] * scale, "keys": grads["keys"] * scale, "values": grads["values"]}


def softmax_jacobian_diagonal_only(q, keys, values, d_output, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (q, keys, values))
    dO = np.asarray(d_output, dtype=np.float64)
    scale = 1 / np.sqrt(Q.shape[1])
    A, _ = att.masked_softmax(Q @ K.T * scale, mask)
    dS = A * (dO @ V.T)                                    # the -sum_j dA_j A_j term is missing
    return {"q": dS @ K * scale, "keys": dS.T @ Q * scale, "values": A.T @ dO}


def jacobian_diagonal(q, keys, values, d_output, mask=None):
    """dS = P * (1 - P) * dP: each weight's derivative by its own score only, the coupling to the others dropped."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (q, keys, values))
    dO = np.asarray(d_output, dtype=np.float64)
    scale = 1 / np.sqrt(Q.shape[1])
    P, _ = att.masked_softmax(Q @ K.T * scale, mask)
    dS = P * (1 - P) * (dO @ V.T)
    return {"q": dS @ K * scale, "keys": dS.T @ Q * scale, "values": P.T @ dO}


def values_gradient_not_transposed(q, keys, values, d_output, mask=None):
    Q, K = np.asarray(q, dtype=np.float64), np.asarray(keys, dtype=np.float64)
    A, _ = att.masked_softmax(Q @ K.T / np.sqrt(Q.shape[1]), mask)
    grads = att.attention_backward(q, keys, values, d_output, mask)
    return {**grads, "values": A @ np.asarray(d_output, dtype=np.float64)}     # A, not A^T


def _sqrt_d(case):
    return np.sqrt(np.shape(case.args[0])[-1])


MUTANTS = {"missing_scale": missing_scale, "scaled_twice": scaled_twice,
           "softmax_jacobian_diagonal_only": softmax_jacobian_diagonal_only,
           "values_gradient_not_transposed": values_gradient_not_transposed}
RECOGNISERS = {"missing_scale": D.factor_of(("q", "keys"), lambda c: {"sqrt(d)": _sqrt_d(c)}, say("q_and_keys")),
               "scaled_twice": D.factor_of(("q", "keys"), lambda c: {"1/sqrt(d)": 1 / _sqrt_d(c)}, say("q_and_keys")),
               "softmax_jacobian_diagonal_only": D.matches(jacobian_diagonal, ("q", "keys"), "own", say("diagonal")),
               "gradient_left_at_zero": left_at_zero(),
               "square_only": square_only("sizes"), "mask_ignored": D.failed_check("mask"),
               "nan_for_fully_masked_rows": D.failed_check("fully masked rows", raises=True),
               "not_float64": not_float64()}
