"""Vanilla RNN with hand-written backpropagation through time (BPTT).

    h_t = tanh(Wh h_{t-1} + Wx x_t + b)        y_t = Wy h_t + by

Column-vector convention as in the lecture: Wx (H, D), Wh (H, H), b (H,), Wy (O, H), by (O,).
A sequence is xs (T, D); states hs (T, H); outputs ys (T, O).

Full BPTT: the gradient reaching h_t is the local term from y_t plus the term arriving from the
future through h_{t+1}; both pass through tanh' before reaching the shared weights, whose gradients
are summed over every time step. Truncated BPTT runs the sequence in chunks: each chunk starts from
the previous chunk's final state VALUE but does not send gradient back into it (history detached).
"""

from __future__ import annotations

import numpy as np

HIDDEN_PARAMS = ("Wx", "Wh", "b")
RNN_PARAMS = ("Wx", "Wh", "b", "Wy", "by")


def init_rnn_params(input_size: int, hidden_size: int, output_size: int | None,
                    rng: np.random.Generator, scale: float = 0.5) -> dict[str, np.ndarray]:
    """Gaussian weights (std scale / sqrt(fan_in)), small random biases. output_size None -> no Wy/by."""
    params = {
        "Wx": rng.normal(0.0, scale / np.sqrt(input_size), (hidden_size, input_size)),
        "Wh": rng.normal(0.0, scale / np.sqrt(hidden_size), (hidden_size, hidden_size)),
        "b": rng.normal(0.0, 0.1, hidden_size),
    }
    if output_size is not None:
        params["Wy"] = rng.normal(0.0, scale / np.sqrt(hidden_size), (output_size, hidden_size))
        params["by"] = rng.normal(0.0, 0.1, output_size)
    return params


def check_sequence(model: str, xs, input_size: int, hidden_size: int, **initial_states) -> tuple:
    """Inputs and initial states of a recurrent layer, as float64, with errors naming the shape.

    xs: (T, input_size). Each initial state (h0=..., c0=...) is (hidden_size,), or None for zeros.
    Returns (xs, *states) in the order given. Shared by the RNN, LSTM and GRU labs.
    """
    xs = np.asarray(xs, dtype=np.float64)
    if xs.ndim != 2 or xs.shape[1] != input_size:
        raise ValueError(f"{model}: xs must have shape (T, {input_size}), got {xs.shape}")
    states = []
    for name, state in initial_states.items():
        state = np.zeros(hidden_size) if state is None else np.asarray(state, dtype=np.float64)
        if state.shape != (hidden_size,):
            raise ValueError(f"{model}: {name} must have shape ({hidden_size},), got {state.shape}")
        states.append(state)
    return (xs, *states)


def _check_sequence(params, xs, h0):
    hidden, inputs = params["Wx"].shape
    return check_sequence("rnn", xs, inputs, hidden, h0=h0)


def rnn_step(params, x: np.ndarray, h_prev: np.ndarray) -> np.ndarray:
    """One step: x (D,), h_prev (H,) -> h (H,)."""
    return np.tanh(params["Wh"] @ h_prev + params["Wx"] @ x + params["b"])


def rnn_hidden_forward(params, xs, h0=None) -> np.ndarray:
    """States only. xs (T, D), h0 (H,) or None (zeros) -> hs (T, H)."""
    xs, h = _check_sequence(params, xs, h0)
    hs = np.empty((len(xs), params["Wh"].shape[0]))
    for t, x in enumerate(xs):
        h = rnn_step(params, x, h)
        hs[t] = h
    return hs


def rnn_hidden_backward(params, xs, h0, hs, dhs, dh_last=None) -> dict[str, np.ndarray]:
    """BPTT through the states.

    dhs (T, H): gradient of the loss arriving at each h_t from outside the recurrence (the local
    output term). dh_last (H,): extra gradient on the final state (e.g. from the layer above or the
    next chunk), default 0. Returns gradients for Wx, Wh, b, xs (T, D) and h0 (H,).
    """
    xs, h0 = _check_sequence(params, xs, h0)
    Wx, Wh = params["Wx"], params["Wh"]
    grads = {"Wx": np.zeros_like(Wx), "Wh": np.zeros_like(Wh), "b": np.zeros_like(params["b"]),
             "xs": np.zeros_like(xs)}
    dh_future = np.zeros(Wh.shape[0]) if dh_last is None else np.asarray(dh_last, dtype=np.float64)
    for t in reversed(range(len(xs))):
        h_prev = hs[t - 1] if t > 0 else h0
        dh = dhs[t] + dh_future                  # local output term + term from the future
        dpre = dh * (1.0 - hs[t] ** 2)           # through tanh'
        grads["Wx"] += np.outer(dpre, xs[t])     # shared weights: summed over time
        grads["Wh"] += np.outer(dpre, h_prev)
        grads["b"] += dpre
        grads["xs"][t] = Wx.T @ dpre
        dh_future = Wh.T @ dpre                  # what h_{t-1} receives from step t
    grads["h0"] = dh_future
    return grads


def rnn_forward(params, xs, h0=None) -> dict[str, np.ndarray]:
    """xs (T, D) -> {"hs": (T, H), "ys": (T, O)}."""
    hs = rnn_hidden_forward(params, xs, h0)
    return {"hs": hs, "ys": hs @ params["Wy"].T + params["by"]}


def rnn_bptt(params, xs, h0, dys, dh_last=None) -> dict[str, np.ndarray]:
    """Full BPTT given dys (T, O) = dLoss/dy_t. Returns gradients for every parameter, xs and h0."""
    xs, h0 = _check_sequence(params, xs, h0)
    hs = rnn_hidden_forward(params, xs, h0)
    dys = np.asarray(dys, dtype=np.float64)
    grads = rnn_hidden_backward(params, xs, h0, hs, dys @ params["Wy"], dh_last)
    grads["Wy"] = dys.T @ hs
    grads["by"] = dys.sum(axis=0)
    return grads


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise stable softmax over the last axis."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_cross_entropy(logits, targets, normalizer: int | None = None):
    """Cross-entropy summed over rows then divided by `normalizer` (default: number of rows).

    logits (T, O), targets (T,) ints -> (loss, dlogits (T, O), probs (T, O)). The loss is finite for any
    finite logits: each target's log-probability is z - max - log(sum exp(z - max)), never the log of
    a probability that underflowed to 0.
    """
    logits = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    if targets.shape != logits.shape[:1]:
        raise ValueError(f"softmax_cross_entropy: targets shape {targets.shape} != ({logits.shape[0]},)")
    n = logits.shape[0] if normalizer is None else normalizer
    probs = softmax(logits)
    rows = np.arange(len(targets))
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_probs = shifted[rows, targets] - np.log(np.exp(shifted).sum(axis=-1))
    loss = -np.sum(log_probs) / n
    dlogits = probs.copy()
    dlogits[rows, targets] -= 1.0
    return float(loss), dlogits / n, probs


def rnn_loss_and_grads(params, xs, targets, h0=None):
    """Mean cross-entropy of ys against integer targets (T,), with full-BPTT gradients."""
    out = rnn_forward(params, xs, h0)
    loss, dys, _ = softmax_cross_entropy(out["ys"], targets)
    return loss, rnn_bptt(params, xs, h0, dys)


def truncated_bptt(params, xs, targets, h0=None, chunk_length: int = 2, carry_state: bool = True,
                   loss_steps=None):
    """Truncated BPTT over chunks of `chunk_length` steps; loss is the mean CE over all T steps.

    carry_state=True: chunk k starts from the final state value of chunk k-1 (the forward pass is
    identical to the full one) but the gradient stops at the chunk boundary - the carried state is a
    constant, its history detached. carry_state=False: every chunk restarts from h0 (a state reset,
    which changes the forward pass too). Gradients of all chunks are summed (one update per sequence).
    loss_steps: only these time steps' losses count (default all; still divided by T) - used to see
    which inputs one step's loss can reach.
    Returns (loss, grads, chunk_start_states).
    """
    xs, h0 = _check_sequence(params, xs, h0)
    if chunk_length < 1:
        raise ValueError(f"truncated_bptt: chunk_length must be >= 1, got {chunk_length}")
    targets = np.asarray(targets)
    T = len(xs)
    counted = np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(np.float64)
    grads = {name: np.zeros_like(params[name]) for name in RNN_PARAMS}
    grads["xs"], grads["h0"] = np.zeros_like(xs), np.zeros_like(h0)
    total_loss = 0.0
    state = h0
    starts = []
    for start in range(0, T, chunk_length):
        stop = min(start + chunk_length, T)
        chunk_h0 = state.copy() if carry_state else h0      # a copy: a value, not a link to the past
        starts.append(chunk_h0)
        out = rnn_forward(params, xs[start:stop], chunk_h0)
        _, dys, probs = softmax_cross_entropy(out["ys"], targets[start:stop], normalizer=T)
        weights = counted[start:stop]
        total_loss += -np.sum(weights * np.log(probs[np.arange(stop - start), targets[start:stop]])) / T
        dys = dys * weights[:, None]
        chunk_grads = rnn_bptt(params, xs[start:stop], chunk_h0, dys)
        for name in RNN_PARAMS:
            grads[name] += chunk_grads[name]
        grads["xs"][start:stop] = chunk_grads["xs"]
        if start == 0:
            grads["h0"] = chunk_grads["h0"]   # only the first chunk starts from the real h0
        state = out["hs"][-1]
    return total_loss, grads, starts


def truncated_bptt_reach(num_steps: int, chunk_length: int, loss_step: int) -> list[int]:
    """Time steps (0-based) whose inputs receive gradient from the loss at `loss_step` under truncated
    BPTT: from the start of its chunk up to the step itself."""
    if not 0 <= loss_step < num_steps:
        raise ValueError(f"truncated_bptt_reach: loss_step {loss_step} outside 0..{num_steps - 1}")
    if chunk_length < 1:
        raise ValueError(f"truncated_bptt_reach: chunk_length must be >= 1, got {chunk_length}")
    chunk_start = (loss_step // chunk_length) * chunk_length
    return list(range(chunk_start, loss_step + 1))
