"""rnn_bptt: the cases, the checks of its sentences, the gradients and per-step terms, its mutants and
recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import rnn as _rnn
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, central_differences, same_dtypes, same_values
from seqlab.learn.kit import (copy_arrays, left_at_zero, not_float64, rnn_sequence_cases, same, square_only,
                              weights_not_summed)
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return rnn_sequence_cases(backward=True)


CHECKS = {"future term": Check(verify=same_values("xs", "h0")),
          "summed over time": Check(verify=same_values("Wx", "Wh", "b", "Wy", "by")),
          "dh_last": Check(lambda: rnn_sequence_cases(True, ((31, 4, 3, 4, 2), (32, 1, 2, 3, 2)), dh_last=True)),
          "non-square": Check(lambda: rnn_sequence_cases(True, ((33, 4, 2, 5, 3), (34, 3, 6, 2, 4)))),
          "float64": Check(lambda: rnn_sequence_cases(True, ((35, 3, 3, 4, 2),), float32=True), same_dtypes())}


def gradients(case):
    params, xs, h0, dys = (copy_arrays(a) for a in case.args)
    dh_last = case.kwargs.get("dh_last")

    def loss():
        out = _rnn.rnn_forward(params, xs, h0)
        extra = 0.0 if dh_last is None else float(dh_last @ out["hs"][-1])
        return float(np.sum(dys * out["ys"])) + extra

    return central_differences(loss, {**params, "xs": xs, "h0": h0}), same


def step_terms(case):
    """Each step's term of the shared weights' gradients: the lab's backward through that step alone,
    with the gradient the later steps send it."""
    params, xs, h0, dys = (copy_arrays(a) for a in case.args)
    hs = _rnn.rnn_hidden_forward(params, xs, h0)
    T = len(xs)
    terms = {k: [None] * T for k in ("Wx", "Wh", "b", "Wy", "by")}
    dh_future = case.kwargs.get("dh_last")
    for t in reversed(range(T)):
        prev = hs[t - 1] if t else h0
        step = _rnn.rnn_hidden_backward(params, xs[t:t + 1], prev, hs[t:t + 1], dys[t:t + 1] @ params["Wy"], dh_future)
        for k in ("Wx", "Wh", "b"):
            terms[k][t] = step[k]
        terms["Wy"][t], terms["by"][t] = np.outer(dys[t], hs[t]), dys[t]
        dh_future = step["h0"]
    return {k: np.array(v) for k, v in terms.items()}


# --- mistakes -----------------------------------------------------------------------------------------
def _variant(params, xs, h0, dys, dh_last, *, future=True, summed=True, tanh_of="h", back_through="Wh.T",
             future_through_tanh=True):
    xs = np.asarray(xs, dtype=np.float64)
    h0 = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    dys = np.asarray(dys, dtype=np.float64)
    hs = _rnn.rnn_hidden_forward(params, xs, h0)
    Wx, Wh = params["Wx"], params["Wh"]
    g = {"Wx": np.zeros_like(Wx), "Wh": np.zeros_like(Wh), "b": np.zeros_like(params["b"]),
         "xs": np.zeros_like(xs)}
    dh_future = np.zeros(Wh.shape[0]) if dh_last is None else np.asarray(dh_last, dtype=np.float64)
    for t in reversed(range(len(xs))):
        h_prev = hs[t - 1] if t > 0 else h0
        future_term = dh_future if future or t == len(xs) - 1 else 0.0
        tanh_prime = 1 - (hs[t] if tanh_of == "h" else h_prev) ** 2
        if future_through_tanh:
            dpre = (dys[t] @ params["Wy"] + future_term) * tanh_prime
        else:
            dpre = (dys[t] @ params["Wy"]) * tanh_prime + future_term
        for name, value in (("Wx", np.outer(dpre, xs[t])), ("Wh", np.outer(dpre, h_prev)), ("b", dpre)):
            g[name] = g[name] + value if summed else value
        g["xs"][t] = Wx.T @ dpre
        dh_future = (Wh.T if back_through == "Wh.T" else Wh) @ dpre
    g["h0"] = dh_future
    g["Wy"] = dys.T @ hs if summed else np.outer(dys[0], hs[0])
    g["by"] = dys.sum(axis=0) if summed else dys[0].copy()
    return g


def no_future_gradient(params, xs, h0, dys, dh_last=None):
    return _variant(params, xs, h0, dys, dh_last, future=False)


def shared_weights_not_summed(params, xs, h0, dys, dh_last=None):
    return _variant(params, xs, h0, dys, dh_last, summed=False)


def tanh_derivative_of_previous_state(params, xs, h0, dys, dh_last=None):
    return _variant(params, xs, h0, dys, dh_last, tanh_of="h_prev")


def future_not_transposed(params, xs, h0, dys, dh_last=None):
    return _variant(params, xs, h0, dys, dh_last, back_through="Wh")


def future_term_without_tanh_derivative(params, xs, h0, dys, dh_last=None):
    return _variant(params, xs, h0, dys, dh_last, future_through_tanh=False)


def h0_ignored(params, xs, h0, dys, dh_last=None):
    return _variant(params, xs, None, dys, dh_last)


def dh_last_ignored(params, xs, h0, dys, dh_last=None):
    return _rnn.rnn_bptt(params, xs, h0, dys, None)


def Wy_gradient_transposed(params, xs, h0, dys, dh_last=None):
    grads = _rnn.rnn_bptt(params, xs, h0, dys, dh_last)
    return {**grads, "Wy": grads["Wy"].T}


MUTANTS = {"no_future_gradient": no_future_gradient, "shared_weights_not_summed": shared_weights_not_summed,
           "tanh_derivative_of_previous_state": tanh_derivative_of_previous_state,
           "future_not_transposed": future_not_transposed,
           "future_term_without_tanh_derivative": future_term_without_tanh_derivative,
           "dh_last_ignored": dh_last_ignored, "Wy_gradient_transposed": Wy_gradient_transposed, "h0_ignored": h0_ignored}
RECOGNISERS = {
    # each family by the input gradient its mutant gives on every case: on the worked example (a delay line)
    # the three give the same numbers, the random cases tell them apart
    "no_future_gradient": D.matches(no_future_gradient, ("xs",), "own", say("no_future")),
    "future_not_transposed": D.matches(future_not_transposed, ("xs",), "own", say("not_transposed")),
    "future_term_without_tanh_derivative": D.matches(future_term_without_tanh_derivative, ("xs",), "own",
                                                     say("future_skips_tanh")),
    "shared_weights_not_summed": weights_not_summed(("Wx", "Wh", "b", "Wy", "by")),
    "dh_last_ignored": D.failed_check("dh_last"),
    "Wy_gradient_transposed": D.transposed("Wy"),
    "gradient_left_at_zero": left_at_zero(), "square_only": square_only(), "not_float64": not_float64()}
axes = {"xs": ("time step", "input"), "Wx": ("hidden unit", "input"), "Wh": ("hidden unit", "hidden unit"),
        "Wy": ("output", "hidden unit"), "b": ("hidden unit",), "by": ("output",), "h0": ("hidden unit",)}
