"""lstm_cell_forward: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import lstm
from seqlab.labs.lstm import sigmoid
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import lstm_params, not_float64, seeded_cases, square_only
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases(settings=((0, 3, 3), (1, 2, 4), (2, 5, 2)), float32=False) -> list[Case]:
    def make(k, rng, D, H):
        x = rng.normal(size=D)
        return (lstm_params(rng, D, H), x.astype(np.float32) if float32 else x, rng.normal(size=H),
                rng.normal(size=H)), {}
    return seeded_cases(make, settings)


def compared(out):
    return out[0], out[1]


CHECKS = {"gate functions": Check(verify=same_values(0, 1)), "cell update": Check(verify=same_values(1)),
          "output": Check(verify=same_values(0)),
          "non-square": Check(lambda: cases(((11, 2, 5), (12, 6, 3)))),
          "float64": Check(lambda: cases(((13, 3, 3),), float32=True), same_dtypes(compared))}


# --- mistakes -----------------------------------------------------------------------------------------
def gate_order_ifog(params, x, h_prev, c_prev):
    H = h_prev.shape[0]
    pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]
    i, f, o, g = sigmoid(pre[:H]), sigmoid(pre[H:2 * H]), sigmoid(pre[2 * H:3 * H]), np.tanh(pre[3 * H:])
    c = f * c_prev + i * g
    return o * np.tanh(c), c, {}


def gate_order_igfo(params, x, h_prev, c_prev):
    H = h_prev.shape[0]
    pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]
    i, g, f, o = sigmoid(pre[:H]), np.tanh(pre[H:2 * H]), sigmoid(pre[2 * H:3 * H]), sigmoid(pre[3 * H:])
    c = f * c_prev + i * g
    return o * np.tanh(c), c, {}


def bh_missing(params, x, h_prev, c_prev):
    return lstm.lstm_cell_forward({**params, "bh": np.zeros_like(params["bh"])}, x, h_prev, c_prev)


def bias_left_out(params, x, h_prev, c_prev):
    return lstm.lstm_cell_forward({**params, "bx": np.zeros_like(params["bx"])}, x, h_prev, c_prev)


def both_biases_left_out(params, x, h_prev, c_prev):
    zeros = np.zeros_like(params["bx"])
    return lstm.lstm_cell_forward({**params, "bx": zeros, "bh": zeros}, x, h_prev, c_prev)


def _squashed(params, x, h_prev, c_prev, *, candidate=np.tanh, output=np.tanh):
    H = h_prev.shape[0]
    pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]
    i, f, g, o = sigmoid(pre[:H]), sigmoid(pre[H:2 * H]), candidate(pre[2 * H:3 * H]), sigmoid(pre[3 * H:])
    c = f * c_prev + i * g
    return o * output(c), c, {}


def sigmoid_instead_of_tanh(params, x, h_prev, c_prev):
    return _squashed(params, x, h_prev, c_prev, candidate=sigmoid)


def sigmoid_of_the_cell(params, x, h_prev, c_prev):
    return _squashed(params, x, h_prev, c_prev, output=sigmoid)


def sigmoid_in_both(params, x, h_prev, c_prev):
    return _squashed(params, x, h_prev, c_prev, candidate=sigmoid, output=sigmoid)


def h_without_tanh(params, x, h_prev, c_prev):
    _, c, cache = lstm.lstm_cell_forward(params, x, h_prev, c_prev)
    return cache["o"] * c, c, cache


def gates_swapped(params, x, h_prev, c_prev):
    _, _, cache = lstm.lstm_cell_forward(params, x, h_prev, c_prev)
    c = cache["i"] * c_prev + cache["f"] * cache["g"]      # forget gate on the new content
    return cache["o"] * np.tanh(c), c, cache


MUTANTS = {"gate_order_ifog": gate_order_ifog, "gate_order_igfo": gate_order_igfo, "h_without_tanh": h_without_tanh,
           "gates_swapped": gates_swapped, "bh_missing": bh_missing, "bias_left_out": bias_left_out,
           "sigmoid_instead_of_tanh": sigmoid_instead_of_tanh}
RECOGNISERS = {"h_without_tanh": D.matches(h_without_tanh, (0,), "own", "h = o * c"),
               "bias_left_out": D.matches(both_biases_left_out, None, "own", say("no_biases")),
               "sigmoid_instead_of_tanh": D.any_of(D.matches(sigmoid_of_the_cell, None, "own", say("sigmoid_of_c")),
                                                   D.matches(sigmoid_in_both, None, "own", say("sigmoid_twice"))),
               "square_only": square_only(), "not_float64": not_float64()}
axes = {0: ("hidden unit",), 1: ("hidden unit",)}
