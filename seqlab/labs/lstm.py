"""LSTM cell with hand-written BPTT.

    i, f, o = sigmoid(.)    g = tanh(.)    c = f * c_prev + i * g    h = o * tanh(c)

Each gate's pre-activation is the affine map Wx x + bx + Wh h_prev + bh. The four maps are stacked
in PyTorch's order (i, f, g, o): Wx (4H, D), Wh (4H, H), bx (4H,), bh (4H,), so the parameter count
equals torch.nn.LSTMCell's: 4 (H D + H H + 2 H). The cell state path c_prev -> c is multiplied only by
f, which is why f = 1, i = 0 keeps the memory unchanged.
"""

from __future__ import annotations

import numpy as np

from seqlab.labs.rnn import check_sequence

LSTM_PARAMS = ("Wx", "Wh", "bx", "bh")


def sigmoid(x):
    """Element-wise logistic function; any shape."""
    return 1.0 / (1.0 + np.exp(-x))


def lstm_gate_step(c_prev, f, i, g, o) -> dict[str, float]:
    """The cell update with given gate values (scalars or arrays).

    Returns c = f c_prev + i g, h = o tanh(c), retained = f c_prev (old memory kept), written = i g
    (new content). c_prev=1, f=0.8, i=0.25, g=0.4, o=0.5 -> c = 0.9, h = 0.3581489351.
    """
    retained = f * c_prev
    written = i * g
    c = retained + written
    h = o * np.tanh(c)
    as_float = lambda v: float(v) if np.ndim(v) == 0 else v
    return {"c": as_float(c), "h": as_float(h), "retained": as_float(retained), "written": as_float(written)}


def init_gate_maps(num_maps: int, input_size: int, hidden_size: int, rng: np.random.Generator,
                   scale: float = 0.5) -> dict[str, np.ndarray]:
    """`num_maps` affine maps stacked row-wise (4 for the LSTM, 3 for the GRU): Wx (num_maps H, D),
    Wh (num_maps H, H), bx and bh (num_maps H,); Gaussian weights of std scale / sqrt(fan_in)."""
    rows = num_maps * hidden_size
    return {
        "Wx": rng.normal(0.0, scale / np.sqrt(input_size), (rows, input_size)),
        "Wh": rng.normal(0.0, scale / np.sqrt(hidden_size), (rows, hidden_size)),
        "bx": rng.normal(0.0, 0.1, rows),
        "bh": rng.normal(0.0, 0.1, rows),
    }


def init_lstm_params(input_size: int, hidden_size: int, rng: np.random.Generator,
                     scale: float = 0.5) -> dict[str, np.ndarray]:
    return init_gate_maps(4, input_size, hidden_size, rng, scale)


def lstm_parameter_count(input_size: int, hidden_size: int) -> int:
    """Number of scalars in the cell's parameters: 4 affine maps of (D + H) inputs and 2 biases."""
    shapes = init_lstm_params(input_size, hidden_size, np.random.default_rng(0))
    return int(sum(p.size for p in shapes.values()))


def lstm_cell_forward(params, x, h_prev, c_prev):
    """x (D,), h_prev (H,), c_prev (H,) -> (h (H,), c (H,), cache)."""
    H = h_prev.shape[0]
    pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]
    i, f = sigmoid(pre[:H]), sigmoid(pre[H:2 * H])
    g, o = np.tanh(pre[2 * H:3 * H]), sigmoid(pre[3 * H:])
    step = lstm_gate_step(c_prev, f, i, g, o)
    cache = {"x": x, "h_prev": h_prev, "c_prev": c_prev, "i": i, "f": f, "g": g, "o": o,
             "c": step["c"], "tanh_c": np.tanh(step["c"])}
    return step["h"], step["c"], cache


def lstm_cell_backward(params, cache, dh, dc, grads) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward through one cell. dh, dc (H,): gradient arriving at h and c.

    Accumulates parameter gradients into `grads`; returns (dx (D,), dh_prev (H,), dc_prev (H,)).
    """
    i, f, g, o, tanh_c = cache["i"], cache["f"], cache["g"], cache["o"], cache["tanh_c"]
    do = dh * tanh_c
    dc_total = dc + dh * o * (1.0 - tanh_c ** 2)   # c feeds h through tanh, and the next cell directly
    di, df, dg = dc_total * g, dc_total * cache["c_prev"], dc_total * i
    dpre = np.concatenate([di * i * (1 - i), df * f * (1 - f), dg * (1 - g ** 2), do * o * (1 - o)])
    grads["Wx"] += np.outer(dpre, cache["x"])
    grads["Wh"] += np.outer(dpre, cache["h_prev"])
    grads["bx"] += dpre
    grads["bh"] += dpre
    return params["Wx"].T @ dpre, params["Wh"].T @ dpre, dc_total * f


def _initial_states(params, xs, h0, c0):
    return check_sequence("lstm", xs, params["Wx"].shape[1], params["Wh"].shape[1], h0=h0, c0=c0)


def lstm_forward(params, xs, h0=None, c0=None) -> dict:
    """xs (T, D) -> {"hs": (T, H), "cs": (T, H), "caches": per-step caches}."""
    xs, h, c = _initial_states(params, xs, h0, c0)
    hs, cs, caches = [], [], []
    for x in xs:
        h, c, cache = lstm_cell_forward(params, x, h, c)
        hs.append(h)
        cs.append(c)
        caches.append(cache)
    return {"hs": np.array(hs), "cs": np.array(cs), "caches": caches}


def lstm_bptt(params, xs, dhs, h0=None, c0=None, dcs=None) -> dict[str, np.ndarray]:
    """BPTT given dhs (T, H) (and optionally dcs (T, H)) = gradient of the loss at each h_t / c_t.

    Returns gradients for Wx, Wh, bx, bh, xs (T, D), h0 (H,), c0 (H,).
    """
    xs, h0, c0 = _initial_states(params, xs, h0, c0)
    caches = lstm_forward(params, xs, h0, c0)["caches"]
    grads = {name: np.zeros_like(params[name]) for name in LSTM_PARAMS}
    grads["xs"] = np.zeros_like(xs)
    dh_next, dc_next = np.zeros_like(h0), np.zeros_like(c0)
    for t in reversed(range(len(xs))):
        dc = dc_next + (0.0 if dcs is None else dcs[t])
        grads["xs"][t], dh_next, dc_next = lstm_cell_backward(params, caches[t], dhs[t] + dh_next, dc, grads)
    grads["h0"], grads["c0"] = dh_next, dc_next
    return grads
