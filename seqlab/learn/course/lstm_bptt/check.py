"""lstm_bptt: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import lstm
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn import kit
from seqlab.learn.kit import lstm_params, not_float64, seeded_cases, square_only, states_none
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases(settings=((0, 3, 3, 3), (1, 4, 2, 3), (2, 5, 4, 2)), dcs=False, states=True, float32=False) -> list[Case]:
    def make(k, rng, T, D, H):
        p = lstm_params(rng, D, H)
        kw = {"h0": rng.normal(size=H) * 0.5, "c0": rng.normal(size=H) * 0.5} if states else {}
        if dcs:
            kw["dcs"] = rng.normal(size=(T, H))
        xs = rng.normal(size=(T, D))
        return (p, xs.astype(np.float32) if float32 else xs, rng.normal(size=(T, H))), kw
    return seeded_cases(make, settings, gradcheck=True)


CHECKS = {"two paths from the future": Check(verify=same_values("xs", "h0", "c0")),
          "summed over time": Check(verify=same_values("Wx", "Wh", "bx", "bh")),
          "dcs": Check(lambda: cases(((21, 4, 3, 3), (22, 2, 2, 2)), dcs=True)),
          "h0 and c0 None": Check(lambda: cases(((23, 3, 3, 3),), states=False)),
          "non-square": Check(lambda: cases(((24, 3, 2, 4), (25, 2, 5, 2)))),
          "float64": Check(lambda: cases(((26, 3, 3, 3),), float32=True), same_dtypes())}
gradients = kit.sequence_gradients("seqlab.labs.lstm", "lstm_forward", ("h0", "c0"))
step_terms = kit.gate_terms("seqlab.labs.lstm", "lstm_forward", "lstm_cell_backward", ("h0", "c0"))
axes = kit.GATE_AXES


# --- mistakes -----------------------------------------------------------------------------------------
def _variant(params, xs, dhs, h0, c0, dcs, *, carry_h=True, carry_c=True, tanh_prime=True):
    xs, h0, c0 = lstm._initial_states(params, xs, h0, c0)
    caches = lstm.lstm_forward(params, xs, h0, c0)["caches"]
    g = {k: np.zeros_like(params[k]) for k in lstm.LSTM_PARAMS}
    g["xs"] = np.zeros_like(xs)
    dh_next, dc_next = np.zeros_like(h0), np.zeros_like(c0)
    for t in reversed(range(len(xs))):
        cache = caches[t]
        dh = dhs[t] + (dh_next if carry_h else 0.0)
        dc = (dc_next if carry_c else 0.0) + (0.0 if dcs is None else dcs[t])
        i, f, gg, o, tc = cache["i"], cache["f"], cache["g"], cache["o"], cache["tanh_c"]
        do = dh * tc
        dct = dc + dh * o * ((1 - tc ** 2) if tanh_prime else 1.0)
        dpre = np.concatenate([dct * gg * i * (1 - i), dct * cache["c_prev"] * f * (1 - f),
                               dct * i * (1 - gg ** 2), do * o * (1 - o)])
        g["Wx"] += np.outer(dpre, cache["x"])
        g["Wh"] += np.outer(dpre, cache["h_prev"])
        g["bx"] += dpre
        g["bh"] += dpre
        g["xs"][t], dh_next, dc_next = params["Wx"].T @ dpre, params["Wh"].T @ dpre, dct * f
    g["h0"], g["c0"] = dh_next, dc_next
    return g


def no_cell_gradient_from_future(params, xs, dhs, h0=None, c0=None, dcs=None):
    return _variant(params, xs, dhs, h0, c0, dcs, carry_c=False)


def no_future_gradient(params, xs, dhs, h0=None, c0=None, dcs=None):
    return _variant(params, xs, dhs, h0, c0, dcs, carry_h=False)


def tanh_derivative_of_cell_missing(params, xs, dhs, h0=None, c0=None, dcs=None):
    return _variant(params, xs, dhs, h0, c0, dcs, tanh_prime=False)


def h0_ignored(params, xs, dhs, h0=None, c0=None, dcs=None):
    return _variant(params, xs, dhs, None, c0, dcs)


MUTANTS = {"no_cell_gradient_from_future": no_cell_gradient_from_future, "no_future_gradient": no_future_gradient,
           "tanh_derivative_of_cell_missing": tanh_derivative_of_cell_missing, "h0_ignored": h0_ignored}
RECOGNISERS = {
    "no_cell_gradient_from_future": D.matches(no_cell_gradient_from_future, ("xs",), "own",
                                              say("no_cell_future")),
    "no_future_gradient": D.matches(no_future_gradient, ("xs",), "own",
                                    say("no_future")),
    "weights_not_summed": kit.weights_not_summed(), "gradient_left_at_zero": kit.left_at_zero(),
    "square_only": square_only(), "dcs_ignored": D.failed_check("dcs"), "states_none_not_handled": states_none("h0 and c0 None"),
    "not_float64": not_float64()}
