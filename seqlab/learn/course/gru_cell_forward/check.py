"""gru_cell_forward: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import gru
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import gru_params, not_float64, seeded_cases, square_only


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


MUTANTS = {"update_gate_other_convention": update_gate_other_convention, "reset_after_matmul": reset_after_matmul,
           "gate_order_zrn": gate_order_zrn}
RECOGNISERS = {"square_only": square_only(), "not_float64": not_float64()}
