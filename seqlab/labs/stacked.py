"""Stacked and bidirectional RNNs, built from the vanilla RNN in `seqlab.labs.rnn`.

Stacked (depth axis): layer l reads the state sequence of layer l-1 as its inputs; every layer also
runs along the time axis. states[l, t] depends on inputs x_1..x_t through every layer below.

Bidirectional: one RNN reads x_1..x_T, a second reads x_T..x_1; the state at t is the concatenation
[forward_t, backward_t], so it depends on the whole sequence.
"""

from __future__ import annotations

import numpy as np

from seqlab.labs.rnn import (
    HIDDEN_PARAMS,
    init_rnn_params,
    rnn_hidden_backward,
    rnn_hidden_forward,
)


def init_stacked_params(input_size: int, hidden_size: int, num_layers: int, rng) -> list[dict]:
    """One RNN layer's Wx, Wh, b per layer; layer 0 reads (T, input_size), the others (T, hidden_size)."""
    return [init_rnn_params(input_size if l == 0 else hidden_size, hidden_size, None, rng)
            for l in range(num_layers)]


def stacked_rnn_forward(layers: list[dict], xs) -> dict[str, np.ndarray]:
    """xs (T, D) -> {"states": (L, T, H)}; all initial states are zero."""
    inputs = np.asarray(xs, dtype=np.float64)
    states = []
    for params in layers:
        hs = rnn_hidden_forward(params, inputs)
        states.append(hs)
        inputs = hs        # the next layer up reads this layer's states
    return {"states": np.array(states)}


def stacked_rnn_backward(layers: list[dict], xs, d_states) -> dict:
    """Gradient of sum(d_states * states) with d_states (L, T, H) (use zeros below the top layer
    to backprop a loss on the top layer only). Returns {"layers": [per-layer Wx, Wh, b], "xs": (T, D)}."""
    xs = np.asarray(xs, dtype=np.float64)
    states = stacked_rnn_forward(layers, xs)["states"]
    d_from_above = np.zeros_like(states[0])
    layer_grads = [None] * len(layers)
    for l in reversed(range(len(layers))):
        inputs = xs if l == 0 else states[l - 1]
        g = rnn_hidden_backward(layers[l], inputs, None, states[l], d_states[l] + d_from_above)
        layer_grads[l] = {name: g[name] for name in HIDDEN_PARAMS}
        d_from_above = g["xs"]    # gradient flowing down the depth axis
    return {"layers": layer_grads, "xs": d_from_above}


def bidirectional_rnn_forward(forward_params: dict, backward_params: dict, xs) -> dict[str, np.ndarray]:
    """xs (T, D) -> {"forward": (T, H), "backward": (T, H) (aligned to time t), "states": (T, 2H)}."""
    xs = np.asarray(xs, dtype=np.float64)
    forward = rnn_hidden_forward(forward_params, xs)
    backward = rnn_hidden_forward(backward_params, xs[::-1])[::-1]   # read right to left, re-align
    return {"forward": forward, "backward": backward, "states": np.concatenate([forward, backward], axis=1)}


def bidirectional_rnn_backward(forward_params: dict, backward_params: dict, xs, d_states) -> dict:
    """Gradient of sum(d_states * states), d_states (T, 2H). Returns {"forward": {...}, "backward":
    {...}, "xs": (T, D)}: the input gradient sums both directions."""
    xs = np.asarray(xs, dtype=np.float64)
    H = forward_params["Wh"].shape[0]
    fwd = bidirectional_rnn_forward(forward_params, backward_params, xs)
    gf = rnn_hidden_backward(forward_params, xs, None, fwd["forward"], d_states[:, :H])
    gb = rnn_hidden_backward(backward_params, xs[::-1], None, fwd["backward"][::-1], d_states[::-1, H:])
    return {"forward": {k: gf[k] for k in HIDDEN_PARAMS}, "backward": {k: gb[k] for k in HIDDEN_PARAMS},
            "xs": gf["xs"] + gb["xs"][::-1]}
