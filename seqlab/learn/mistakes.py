"""Common mistakes, each written as the implementation a student would write with that mistake.

A failed check runs these on the same inputs as the student's code; the one whose outputs match
names the diagnosis. Each function has the exercise's exact signature. Names: EXERCISE__MISTAKE.
"""

from __future__ import annotations

import numpy as np

from seqlab.labs import rnn as _rnn


# --- the one-number recurrence --------------------------------------------------------------------------
def scalar_recurrence__no_tanh(a, xs, h0=0.0):
    states, h = [], float(h0)
    for x in np.asarray(xs, dtype=np.float64):
        h = a * h + x
        states.append(h)
    return np.array(states)


def scalar_recurrence__states_shifted(a, xs, h0=0.0):
    states, h = [], float(h0)
    for x in np.asarray(xs, dtype=np.float64):
        states.append(h)                 # records h_{t-1}, not h_t
        h = np.tanh(a * h + x)
    return np.array(states)


def scalar_recurrence__h0_ignored(a, xs, h0=0.0):
    return _rec().scalar_recurrence(a, xs, 0.0)


def _recurrence_backward_variant(a, xs, h0, *, summed=True, tanh_prime="h", a_term="h_prev", last_factor=True):
    xs = np.asarray(xs, dtype=np.float64)
    hs = _rec().scalar_recurrence(a, xs, h0)
    prev = np.concatenate([[float(h0)], hs[:-1]])
    dh, dxs, da = 1.0, np.zeros_like(xs), 0.0
    for t in reversed(range(len(xs))):
        derivative = {"h": 1 - hs[t] ** 2, "h_prev": 1 - prev[t] ** 2, "none": 1.0}[tanh_prime]
        dpre = dh * derivative
        term = dpre * (prev[t] if a_term == "h_prev" else hs[t])
        da = da + term if summed else term          # overwritten each step instead of summed
        dxs[t] = dpre
        dh = dpre * a if (last_factor or t > 0) else dpre
    return {"a": da, "xs": dxs, "h0": dh}


def scalar_recurrence_backward__a_not_summed(a, xs, h0=0.0):
    return _recurrence_backward_variant(a, xs, h0, summed=False)


def scalar_recurrence_backward__no_tanh_derivative(a, xs, h0=0.0):
    return _recurrence_backward_variant(a, xs, h0, tanh_prime="none")


def scalar_recurrence_backward__tanh_derivative_of_previous_state(a, xs, h0=0.0):
    return _recurrence_backward_variant(a, xs, h0, tanh_prime="h_prev")


def scalar_recurrence_backward__a_term_uses_h_t(a, xs, h0=0.0):
    return _recurrence_backward_variant(a, xs, h0, a_term="h")


def scalar_recurrence_backward__h0_without_last_factor(a, xs, h0=0.0):
    return _recurrence_backward_variant(a, xs, h0, last_factor=False)


def _rec():
    from seqlab.labs import recurrence
    return recurrence


# --- the RNN ------------------------------------------------------------------------------------------------




def rnn_forward__state_not_carried(params, xs, h0=None):
    xs = np.asarray(xs, dtype=np.float64)
    h0 = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    hs = np.array([_rnn.rnn_step(params, x, h0) for x in xs])   # every step from h0
    return {"hs": hs, "ys": hs @ params["Wy"].T + params["by"]}




def rnn_forward__recurrent_weight_transposed(params, xs, h0=None):
    flipped = {**params, "Wh": params["Wh"].T}
    return _rnn.rnn_forward(flipped, xs, h0)


def rnn_forward__output_from_previous_state(params, xs, h0=None):
    out = _rnn.rnn_forward(params, xs, h0)
    h0 = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    previous = np.vstack([h0[None], out["hs"][:-1]])
    return {"hs": out["hs"], "ys": previous @ params["Wy"].T + params["by"]}


def _rnn_bptt_variant(params, xs, h0, dys, dh_last, *, future=True, summed=True, tanh_of="h"):
    xs = np.asarray(xs, dtype=np.float64)
    h0 = np.zeros(params["Wh"].shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
    dys = np.asarray(dys, dtype=np.float64)
    hs = _rnn.rnn_hidden_forward(params, xs, h0)
    Wx, Wh = params["Wx"], params["Wh"]
    g = {"Wx": np.zeros_like(Wx), "Wh": np.zeros_like(Wh), "b": np.zeros_like(params["b"]),
         "xs": np.zeros_like(xs)}
    dh_future = np.zeros(Wh.shape[0]) if dh_last is None else np.asarray(dh_last, dtype=np.float64)
    for t in reversed(range(len(xs))):
        h_prev = hs[t - 1] if t > 0 else h0
        dh = dys[t] @ params["Wy"] + (dh_future if future or t == len(xs) - 1 else 0.0)
        dpre = dh * (1 - (hs[t] if tanh_of == "h" else h_prev) ** 2)
        for name, value in (("Wx", np.outer(dpre, xs[t])), ("Wh", np.outer(dpre, h_prev)), ("b", dpre)):
            g[name] = g[name] + value if summed else value
        g["xs"][t] = Wx.T @ dpre
        dh_future = Wh.T @ dpre
    g["h0"] = dh_future
    g["Wy"] = dys.T @ hs if summed else np.outer(dys[0], hs[0])
    g["by"] = dys.sum(axis=0) if summed else dys[0].copy()
    return g


def rnn_bptt__no_future_gradient(params, xs, h0, dys, dh_last=None):
    return _rnn_bptt_variant(params, xs, h0, dys, dh_last, future=False)


def rnn_bptt__shared_weights_not_summed(params, xs, h0, dys, dh_last=None):
    return _rnn_bptt_variant(params, xs, h0, dys, dh_last, summed=False)


def rnn_bptt__tanh_derivative_of_previous_state(params, xs, h0, dys, dh_last=None):
    return _rnn_bptt_variant(params, xs, h0, dys, dh_last, tanh_of="h_prev")


def rnn_bptt__dh_last_ignored(params, xs, h0, dys, dh_last=None):
    return _rnn.rnn_bptt(params, xs, h0, dys, None)


def rnn_bptt__Wy_gradient_transposed(params, xs, h0, dys, dh_last=None):
    grads = _rnn.rnn_bptt(params, xs, h0, dys, dh_last)
    return {**grads, "Wy": grads["Wy"].T}


# --- cross-entropy -----------------------------------------------------------------------------------------
def softmax_cross_entropy__divided_twice(logits, targets, normalizer=None):
    loss, dlogits, probs = _rnn.softmax_cross_entropy(logits, targets, normalizer)
    n = len(logits) if normalizer is None else normalizer
    return loss, dlogits / n, probs


def softmax_cross_entropy__wrong_softmax_axis(logits, targets, normalizer=None):
    logits = np.asarray(logits, dtype=np.float64)
    e = np.exp(logits - logits.max(axis=0, keepdims=True))
    probs = e / e.sum(axis=0, keepdims=True)           # over the rows instead of the classes
    n = len(logits) if normalizer is None else normalizer
    rows = np.arange(len(targets))
    d = probs.copy()
    d[rows, targets] -= 1
    return float(-np.log(probs[rows, targets]).sum() / n), d / n, probs


def softmax_cross_entropy__not_averaged(logits, targets, normalizer=None):
    return _rnn.softmax_cross_entropy(logits, targets, 1)


def softmax_cross_entropy__gradient_sign(logits, targets, normalizer=None):
    loss, dlogits, probs = _rnn.softmax_cross_entropy(logits, targets, normalizer)
    return loss, -dlogits, probs


# --- truncated BPTT ----------------------------------------------------------------------------------------
def truncated_bptt__divided_by_T_twice(params, xs, targets, h0=None, chunk_length=2, carry_state=True,
                                       loss_steps=None):
    loss, grads, starts = _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, carry_state, loss_steps)
    T = len(xs)
    return loss / T, {k: v / T for k, v in grads.items()}, starts


def truncated_bptt__gradient_crosses_chunks(params, xs, targets, h0=None, chunk_length=2, carry_state=True,
                                            loss_steps=None):
    loss, _, starts = _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, carry_state, loss_steps)
    T = len(xs)
    counted = np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(float)
    out = _rnn.rnn_forward(params, xs, h0)
    _, dys, _ = _rnn.softmax_cross_entropy(out["ys"], targets)
    return loss, _rnn.rnn_bptt(params, xs, h0, dys * counted[:, None]), starts


def truncated_bptt__state_reset_each_chunk(params, xs, targets, h0=None, chunk_length=2, carry_state=True,
                                           loss_steps=None):
    return _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, False, loss_steps)


def truncated_bptt__h0_gradient_from_every_chunk(params, xs, targets, h0=None, chunk_length=2, carry_state=True,
                                                loss_steps=None):
    loss, grads, starts = _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, carry_state, loss_steps)
    T = len(xs)
    counted = np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(float)
    total = np.zeros_like(grads["h0"])
    for k, start in enumerate(range(0, T, chunk_length)):
        stop = min(start + chunk_length, T)
        out = _rnn.rnn_forward(params, xs[start:stop], starts[k])
        _, dys, _ = _rnn.softmax_cross_entropy(out["ys"], np.asarray(targets)[start:stop], normalizer=T)
        total += _rnn.rnn_bptt(params, xs[start:stop], starts[k], dys * counted[start:stop, None])["h0"]
    return loss, {**grads, "h0": total}, starts


# --- clipping ------------------------------------------------------------------------------------------------
def clip_global_norm__coordinatewise(grads, threshold):
    from seqlab.labs.clipping import clip_coordinatewise, global_norm
    norm = global_norm(grads)
    if isinstance(grads, np.ndarray):
        return clip_coordinatewise(grads, threshold), norm
    return [clip_coordinatewise(g, threshold) for g in grads], norm


def clip_global_norm__each_array_its_own_norm(grads, threshold):
    from seqlab.labs.clipping import clip_global_norm, global_norm
    if isinstance(grads, np.ndarray):
        return clip_global_norm(grads, threshold)
    return [clip_global_norm(np.asarray(g, dtype=np.float64), threshold)[0] for g in grads], global_norm(grads)


def clip_global_norm__always_rescaled(grads, threshold):
    from seqlab.labs.clipping import global_norm
    norm = global_norm(grads)
    if isinstance(grads, np.ndarray):
        return grads * (threshold / norm), norm
    return [np.asarray(g, dtype=np.float64) * (threshold / norm) for g in grads], norm


def clip_global_norm__norm_after_clipping(grads, threshold):
    from seqlab.labs.clipping import clip_global_norm, global_norm
    clipped, _ = clip_global_norm(grads, threshold)
    return clipped, global_norm(clipped)
