"""rnn_forward: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import rnn as _rnn
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import not_float64, one_more_row, rnn_sequence_cases, square_only, states_none
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return rnn_sequence_cases()


def _h0_none_cases() -> list[Case]:
    return [*rnn_sequence_cases(settings=((23, 3, 3, 4, 2),), h0=False),
            *[Case(say("h0_none"), c.args, {"h0": None})
              for c in rnn_sequence_cases(settings=((24, 2, 2, 3, 2),), h0=False)]]


CHECKS = {"state carried": Check(verify=same_values("hs")),
          "output from the new state": Check(verify=same_values("ys")),
          "non-square": Check(lambda: rnn_sequence_cases(settings=((21, 4, 2, 5, 3), (22, 3, 6, 2, 4)))),
          "h0 None": Check(_h0_none_cases),
          "float64": Check(lambda: rnn_sequence_cases(settings=((25, 3, 3, 4, 2),), float32=True), same_dtypes())}


# --- mistakes -----------------------------------------------------------------------------------------
def state_not_carried(params, xs, h0=None):
    xs = np.asarray(xs, dtype=np.float64)
    h0 = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    hs = np.array([_rnn.rnn_step(params, x, h0) for x in xs])   # every step from h0
    return {"hs": hs, "ys": hs @ params["Wy"].T + params["by"]}


def output_from_previous_state(params, xs, h0=None):
    out = _rnn.rnn_forward(params, xs, h0)
    h0 = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    previous = np.vstack([h0[None], out["hs"][:-1]])
    return {"hs": out["hs"], "ys": previous @ params["Wy"].T + params["by"]}


def recurrent_weight_transposed(params, xs, h0=None):
    flipped = {**params, "Wh": params["Wh"].T}
    return _rnn.rnn_forward(flipped, xs, h0)


def _run(params, xs, h0, *, hidden_bias=True, output_bias=True, squash=np.tanh):
    """The forward pass written plainly, with the slips of the mutants below as options."""
    xs = np.asarray(xs, dtype=np.float64)
    h = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    hs = []
    for x in xs:
        h = squash(params["Wh"] @ h + params["Wx"] @ x + (params["b"] if hidden_bias else 0.0))
        hs.append(h)
    hs = np.array(hs)
    return {"hs": hs, "ys": hs @ params["Wy"].T + (params["by"] if output_bias else 0.0)}


def bias_left_out(params, xs, h0=None):
    return _run(params, xs, h0, hidden_bias=False)


def output_bias_left_out(params, xs, h0=None):
    return _run(params, xs, h0, output_bias=False)


def both_biases_left_out(params, xs, h0=None):
    return _run(params, xs, h0, hidden_bias=False, output_bias=False)


def sigmoid_instead_of_tanh(params, xs, h0=None):
    return _run(params, xs, h0, squash=lambda z: 1 / (1 + np.exp(-z)))


def h0_ignored(params, xs, h0=None):
    return _run(params, xs, None)


MUTANTS = {"state_not_carried": state_not_carried, "output_from_previous_state": output_from_previous_state,
           "recurrent_weight_transposed": recurrent_weight_transposed, "bias_left_out": bias_left_out,
           "sigmoid_instead_of_tanh": sigmoid_instead_of_tanh, "h0_ignored": h0_ignored}
RECOGNISERS = {"state_not_carried": D.matches(state_not_carried, ("hs",), "own", say("from_h0")),
               "bias_left_out": D.any_of(D.matches(output_bias_left_out, None, "own", say("no_by")),
                                         D.matches(both_biases_left_out, None, "own", say("no_b_nor_by"))),
               "output_from_previous_state": D.shifted("ys", axis_name="time step", text=say("ys_late")),
               "states_include_h0": one_more_row("hs"),
               "square_only": square_only(), "h0_none_not_handled": states_none(), "not_float64": not_float64()}
axes = {"hs": ("time step", "hidden unit"), "ys": ("time step", "output")}
