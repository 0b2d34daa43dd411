"""rnn_step: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes
from seqlab.learn.kit import not_float64, rnn_params, seeded_cases, square_only
from seqlab.learn.kit import rng as seeded
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return seeded_cases(lambda k, rng, D, H: ((rnn_params(rng, D, H), rng.normal(size=D), rng.normal(size=H)), {}),
                        ((0, 4, 4), (5, 3, 4), (6, 5, 2)))


def _non_square() -> list[Case]:
    return seeded_cases(lambda k, rng, D, H: ((rnn_params(rng, D, H, 3), rng.normal(size=D), rng.normal(size=H)), {}),
                        ((11, 2, 5), (12, 6, 3)))


def _other_entries() -> list[Case]:
    rng = seeded(13)
    p = rnn_params(rng, 3, 3, 3)
    return [Case(say("other_entries"), ({k: p[k] for k in ("by", "Wy", "b", "Wh", "Wx")},
                                                         rng.normal(size=3), rng.normal(size=3)))]


def _integer_input() -> list[Case]:
    rng = seeded(14)
    return [Case(say("one_hot"), (rnn_params(rng, 4, 3), np.array([0, 0, 1, 0]), rng.normal(size=3)))]


CHECKS = {"other entries": Check(_other_entries), "non-square": Check(_non_square),
          "float64": Check(_integer_input, same_dtypes())}


# --- mistakes -----------------------------------------------------------------------------------------
def no_tanh(params, x, h_prev):
    return params["Wh"] @ h_prev + params["Wx"] @ x + params["b"]


def bias_left_out(params, x, h_prev):
    return np.tanh(params["Wh"] @ h_prev + params["Wx"] @ x)


def sigmoid_instead_of_tanh(params, x, h_prev):
    return 1 / (1 + np.exp(-(params["Wh"] @ h_prev + params["Wx"] @ x + params["b"])))


def transposed_recurrent_weight(params, x, h_prev):
    return np.tanh(params["Wh"].T @ h_prev + params["Wx"] @ x + params["b"])


def input_weight_transposed(params, x, h_prev):
    return np.tanh(params["Wh"] @ h_prev + params["Wx"].T @ x + params["b"])


MUTANTS = {"no_tanh": no_tanh, "bias_left_out": bias_left_out, "sigmoid_instead_of_tanh": sigmoid_instead_of_tanh,
           "transposed_recurrent_weight": transposed_recurrent_weight,
           "input_weight_transposed": input_weight_transposed}
RECOGNISERS = {"square_only": square_only(), "other_entries": D.failed_check("other entries", raises=True),
               "not_float64": not_float64()}
axes = {"": ("hidden unit",)}
