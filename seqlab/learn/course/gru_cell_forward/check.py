"""gru_cell_forward: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import gru
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import gru_params, not_float64, seeded_cases, square_only
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases(settings=((0, 3, 3), (1, 2, 4), (2, 5, 2)), float32=False) -> list[Case]:
    def make(k, rng, D, H):
        x = rng.normal(size=D)
        return (gru_params(rng, D, H), x.astype(np.float32) if float32 else x, rng.normal(size=H)), {}
    return seeded_cases(make, settings)


def compared(out):
    return out[0]


CHECKS = {"gates": Check(verify=same_values(0)), "reset before the matmul": Check(verify=same_values(0)),
          "update gate": Check(verify=same_values(0)),
          "non-square": Check(lambda: cases(((11, 2, 5), (12, 6, 3)))),
          "float64": Check(lambda: cases(((13, 3, 3),), float32=True), same_dtypes(compared))}
axes = {"": ("hidden unit",)}


# --- mistakes -----------------------------------------------------------------------------------------
def update_gate_other_convention(params, x, h_prev, convention="paper"):
    return gru.gru_cell_forward(params, x, h_prev, gru.GRUConvention("before", False))


def reset_after_matmul(params, x, h_prev, convention="paper"):
    return gru.gru_cell_forward(params, x, h_prev, "pytorch")


def gate_order_zrn(params, x, h_prev, convention="paper"):
    H = h_prev.shape[0]
    swap = np.r_[H:2 * H, 0:H, 2 * H:3 * H]
    return gru.gru_cell_forward({k: params[k][swap] for k in gru.GRU_PARAMS}, x, h_prev)


def bias_left_out(params, x, h_prev, convention="paper"):
    return gru.gru_cell_forward({**params, "bx": np.zeros_like(params["bx"])}, x, h_prev)


def recurrent_bias_left_out(params, x, h_prev, convention="paper"):
    return gru.gru_cell_forward({**params, "bh": np.zeros_like(params["bh"])}, x, h_prev)


def both_biases_left_out(params, x, h_prev, convention="paper"):
    zeros = np.zeros_like(params["bx"])
    return gru.gru_cell_forward({**params, "bx": zeros, "bh": zeros}, x, h_prev)


def sigmoid_instead_of_tanh(params, x, h_prev, convention="paper"):
    H = h_prev.shape[0]
    Wx, Wh, bx, bh = (params[k] for k in gru.GRU_PARAMS)
    r = 1 / (1 + np.exp(-(Wx[:H] @ x + bx[:H] + Wh[:H] @ h_prev + bh[:H])))
    z = 1 / (1 + np.exp(-(Wx[H:2 * H] @ x + bx[H:2 * H] + Wh[H:2 * H] @ h_prev + bh[H:2 * H])))
    n = 1 / (1 + np.exp(-(Wx[2 * H:] @ x + bx[2 * H:] + Wh[2 * H:] @ (r * h_prev) + bh[2 * H:])))
    return z * h_prev + (1 - z) * n, {}


MUTANTS = {"update_gate_other_convention": update_gate_other_convention, "reset_after_matmul": reset_after_matmul,
           "gate_order_zrn": gate_order_zrn, "bias_left_out": bias_left_out,
           "sigmoid_instead_of_tanh": sigmoid_instead_of_tanh}
RECOGNISERS = {"bias_left_out": D.any_of(D.matches(recurrent_bias_left_out, None, "own", say("no_bh")),
                                         D.matches(both_biases_left_out, None, "own", say("no_biases"))),
               "square_only": square_only(), "not_float64": not_float64()}
