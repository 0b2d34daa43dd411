"""gru_bptt: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import gru
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn import kit
from seqlab.learn.kit import gru_params, not_float64, seeded_cases, square_only, states_none
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases(settings=((0, 3, 3, 3), (1, 4, 2, 3), (2, 5, 4, 2)), state=True, float32=False) -> list[Case]:
    def make(k, rng, T, D, H):
        xs = rng.normal(size=(T, D))
        return ((gru_params(rng, D, H), xs.astype(np.float32) if float32 else xs, rng.normal(size=(T, H))),
                {"h0": rng.normal(size=H) * 0.5} if state else {})
    return seeded_cases(make, settings, gradcheck=True)


CHECKS = {"three ways": Check(verify=same_values("h0", "Wh")), "future term": Check(verify=same_values("xs")),
          "summed over time": Check(verify=same_values("Wx", "Wh", "bx", "bh")),
          "h0 None": Check(lambda: cases(((21, 3, 3, 3),), state=False)),
          "non-square": Check(lambda: cases(((22, 3, 2, 4), (23, 2, 5, 2)))),
          "float64": Check(lambda: cases(((24, 3, 3, 3),), float32=True), same_dtypes())}
gradients = kit.sequence_gradients("seqlab.labs.gru", "gru_forward", ("h0",))
step_terms = kit.gate_terms("seqlab.labs.gru", "gru_forward", "gru_cell_backward", ("h0",))
axes = kit.GATE_AXES


# --- mistakes -----------------------------------------------------------------------------------------
def update_gate_other_convention(params, xs, dhs, h0=None, convention="paper"):
    return gru.gru_bptt(params, xs, dhs, h0, gru.GRUConvention("before", False))


def _walk_back(params, xs, dhs, h0, *, future=True, dropped=None):
    """The lab's backward pass step by step; ``future=False``: what step t+1 sends back is not added;
    ``dropped(params, cache, dh)``: a term taken out of each step's dh_prev (one path h_prev takes)."""
    xs, h0 = gru._initial_state(params, xs, h0)
    caches = gru.gru_forward(params, xs, h0)["caches"]
    g = {k: np.zeros_like(params[k]) for k in gru.GRU_PARAMS}
    g["xs"] = np.zeros_like(xs)
    dh_next = np.zeros_like(h0)
    for t in reversed(range(len(xs))):
        dh = dhs[t] + (dh_next if future else 0.0)
        g["xs"][t], dh_next = gru.gru_cell_backward(params, caches[t], dh, g)
        if dropped is not None:
            dh_next = dh_next - dropped(params, caches[t], dh)
    g["h0"] = dh_next
    return g


def no_future_gradient(params, xs, dhs, h0=None, convention="paper"):
    return _walk_back(params, xs, dhs, h0, future=False)


def _through_reset(params, cache, dh):
    """The r * h_prev path: (Wh_n^T dn) * r."""
    H = cache["r"].shape[0]
    dn = dh * (1 - cache["z"]) * (1 - cache["n"] ** 2)
    return (params["Wh"][2 * H:].T @ dn) * cache["r"]


def reset_path_missing(params, xs, dhs, h0=None, convention="paper"):
    return _walk_back(params, xs, dhs, h0, dropped=_through_reset)


def direct_path_missing(params, xs, dhs, h0=None, convention="paper"):
    return _walk_back(params, xs, dhs, h0, dropped=lambda params, cache, dh: dh * cache["z"])


def h0_ignored(params, xs, dhs, h0=None, convention="paper"):
    return gru.gru_bptt(params, xs, dhs, None)


MUTANTS = {"update_gate_other_convention": update_gate_other_convention, "no_future_gradient": no_future_gradient,
           "reset_path_missing": reset_path_missing, "direct_path_missing": direct_path_missing, "h0_ignored": h0_ignored}
RECOGNISERS = {
    # each family by the input gradient its mutant gives on every case (the others may hold other slips)
    "no_future_gradient": D.matches(no_future_gradient, ("xs",), "own", say("no_future")),
    "reset_path_missing": D.matches(reset_path_missing, ("xs",), "own", say("no_reset_path")),
    "direct_path_missing": D.matches(direct_path_missing, ("xs",), "own", say("no_direct_path")),
    "weights_not_summed": kit.weights_not_summed(), "gradient_left_at_zero": kit.left_at_zero(),
    "square_only": square_only(), "h0_none_not_handled": states_none(),
    "not_float64": not_float64()}
