"""Wrong versions of every exercise beyond round 5's (numpy_students.py,
torch_students.py): for each exercise a correct version in another style (a reduction, forward-mode
derivatives, einsum, float64 then cast, masks built with np.fromfunction...) and at least three wrong
ones edited from it, written from the stubs' contracts and independently of the mutants in the
course's check.py files.

CORRECT: {exercise: source}, each passes. WRONG: {exercise: [(label, mistake id or None, source)]}: each
fails, and its diagnosis's title is that mistake's (None: "no catalogued mistake matches", a mistake the
catalogue does not know, said honestly). LOOK_ALIKES: pairs of wrong versions that give the same numbers
on a worked example and must get different titles. test_unseen_wrong_versions checks them in one batch.
"""

from __future__ import annotations

from tests.learn.numpy_students import edit

CORRECT: dict[str, str] = {}
WRONG: dict[str, list[tuple[str, str | None, str]]] = {}


# --- scalar_recurrence: a reduction over the inputs ---------------------------------------------------------------
_SCALAR = """
    import itertools
    import math
    import numpy as np
    def scalar_recurrence(a, xs, h0=0.0):
        steps = itertools.accumulate([float(x) for x in xs], lambda h, x: math.tanh(a * h + x), initial=float(h0))
        return np.fromiter(steps, dtype=np.float64)[1:]
"""
CORRECT["scalar_recurrence"] = _SCALAR
WRONG["scalar_recurrence"] = [
    ("a logistic step", "sigmoid_instead_of_tanh", edit(_SCALAR, ("math.tanh(a * h + x)", "1 / (1 + math.exp(-(a * h + x)))"))),
    ("the reduction started from 0", "h0_ignored", edit(_SCALAR, ("initial=float(h0)", "initial=0.0"))),
    ("the initial value kept, the last dropped", "states_shifted", edit(_SCALAR, ("dtype=np.float64)[1:]", "dtype=np.float64)[:-1]"))),
    ("a linear step", "no_tanh", edit(_SCALAR, ("math.tanh(a * h + x)", "a * h + x"))),
]


# --- rnn_step: einsum -------------------------------------------------------------------------------------------
_STEP = """
    import numpy as np
    def rnn_step(params, x, h_prev):
        x = np.asarray(x, dtype=np.float64)
        h_prev = np.asarray(h_prev, dtype=np.float64)
        pre = np.einsum("hd,d->h", params["Wx"], x) + np.einsum("hk,k->h", params["Wh"], h_prev) + params["b"]
        return np.tanh(pre)
"""
CORRECT["rnn_step"] = _STEP
WRONG["rnn_step"] = [
    ("no bias", "bias_left_out", edit(_STEP, (' + params["b"]', ""))),
    ("a logistic unit", "sigmoid_instead_of_tanh", edit(_STEP, ("return np.tanh(pre)", "return 1 / (1 + np.exp(-pre))"))),
    ("the recurrent sum over the wrong index", "transposed_recurrent_weight", edit(_STEP, ('np.einsum("hk,k->h", params["Wh"], h_prev)',
                                                                                          'np.einsum("kh,k->h", params["Wh"], h_prev)'))),
    ("the bias inside twice", None, edit(_STEP, ('+ params["b"]', '+ 2 * params["b"]'))),
]


# --- rnn_forward: the input projections of every step in one product ------------------------------------------------
_FORWARD = """
    import numpy as np
    def rnn_forward(params, xs, h0=None):
        xs = np.asarray(xs, dtype=np.float64)
        H = params["Wh"].shape[0]
        h = np.zeros(H) if h0 is None else np.array(h0, dtype=np.float64)
        driven = xs @ params["Wx"].T + params["b"]            # (T, H): every step's input term at once
        hs = np.empty((len(xs), H))
        for t, drive in enumerate(driven):
            h = np.tanh(params["Wh"] @ h + drive)
            hs[t] = h
        return {"hs": hs, "ys": hs @ params["Wy"].T + params["by"]}
"""
CORRECT["rnn_forward"] = _FORWARD
WRONG["rnn_forward"] = [
    ("no output bias", "bias_left_out", edit(_FORWARD, (' + params["by"]}', "}"))),
    ("always from zeros", "h0_ignored", edit(_FORWARD, ("h = np.zeros(H) if h0 is None else np.array(h0, dtype=np.float64)", "h = np.zeros(H)"))),
    ("a logistic state", "sigmoid_instead_of_tanh", edit(_FORWARD, ('h = np.tanh(params["Wh"] @ h + drive)',
                                                                     'h = 1 / (1 + np.exp(-(params["Wh"] @ h + drive)))'))),
    ("ys from the state before", "output_from_previous_state", edit(
        _FORWARD, ("h = np.zeros(H) if h0 is None else np.array(h0, dtype=np.float64)",
                   "h = np.zeros(H) if h0 is None else np.array(h0, dtype=np.float64)\nbefore = np.vstack([h[None], np.zeros((len(xs), H))])"),
        ("hs[t] = h", "hs[t] = h\nbefore[t + 1] = h"),
        ('"ys": hs @ params["Wy"].T', '"ys": before[:-1] @ params["Wy"].T'))),
]


# --- softmax_cross_entropy: log-sum-exp by np.logaddexp.reduce ------------------------------------------------------
_SCE = """
    import numpy as np
    def softmax_cross_entropy(logits, targets, normalizer=None):
        z = np.array(logits, dtype=np.float64)
        t = np.asarray(targets, dtype=np.int64)
        n = z.shape[0] if normalizer is None else normalizer
        lse = np.logaddexp.reduce(z, axis=1, keepdims=True)
        log_p = z - lse
        probs = np.exp(log_p)
        loss = -np.take_along_axis(log_p, t[:, None], axis=1).sum() / n
        grad = probs.copy()
        np.add.at(grad, (np.arange(len(t)), t), -1.0)
        return float(loss), grad / n, probs
"""
CORRECT["softmax_cross_entropy"] = _SCE
WRONG["softmax_cross_entropy"] = [
    ("the mean loss with a summed gradient", "gradient_not_divided", edit(_SCE, ("return float(loss), grad / n, probs", "return float(loss), grad, probs"))),
    ("the log of the probabilities", "log_of_rounded_probability", edit(
        _SCE, ("loss = -np.take_along_axis(log_p, t[:, None], axis=1).sum() / n",
               "loss = -np.log(np.take_along_axis(probs, t[:, None], axis=1)).sum() / n"))),
    ("a sum of loss and gradient", "not_averaged", edit(_SCE, ("n = z.shape[0] if normalizer is None else normalizer", "n = 1"))),
    ("the gradient divided by the rows", "normalizer_ignored", edit(_SCE, ("return float(loss), grad / n, probs", "return float(loss), grad / z.shape[0], probs"))),
]


# --- scalar_recurrence_backward: forward-mode derivatives, carried along with the state ------------------------------
_SCALAR_BACK = """
    import numpy as np
    def scalar_recurrence_backward(a, xs, h0=0.0):
        xs = np.asarray(xs, dtype=np.float64)
        h, dh_da, dh_dh0 = float(h0), 0.0, 1.0
        dh_dx = np.zeros(len(xs))                      # d h_t / d x_k for every k, carried forward
        for t, x in enumerate(xs):
            slope = 1.0 - np.tanh(a * h + x) ** 2
            dh_da = slope * (h + a * dh_da)
            dh_dh0 = slope * a * dh_dh0
            dh_dx = slope * a * dh_dx
            dh_dx[t] += slope
            h = np.tanh(a * h + x)
        return {"a": float(dh_da), "xs": dh_dx, "h0": float(dh_dh0)}
"""
CORRECT["scalar_recurrence_backward"] = _SCALAR_BACK
WRONG["scalar_recurrence_backward"] = [
    ("started from 0", "h0_ignored", edit(_SCALAR_BACK, ("h, dh_da, dh_dh0 = float(h0), 0.0, 1.0", "h, dh_da, dh_dh0 = 0.0, 0.0, 1.0"))),
    ("h0's derivative never carried", "gradient_left_at_zero", edit(_SCALAR_BACK, ('"h0": float(dh_dh0)', '"h0": 0.0'))),
    ("the slope of the previous state", "tanh_derivative_of_previous_state", edit(
        _SCALAR_BACK, ("slope = 1.0 - np.tanh(a * h + x) ** 2", "slope = 1.0 - h ** 2"))),
    ("a's own term without the chain", None, edit(_SCALAR_BACK, ("dh_da = slope * (h + a * dh_da)", "dh_da = slope * h + dh_da"))),
]


# --- rnn_bptt: the local gradients of every step kept, the weights' sums by einsum at the end ----------------------
_BPTT = """
    import numpy as np
    def rnn_bptt(params, xs, h0, dys, dh_last=None):
        Wx, Wh, b, Wy = (np.asarray(params[k], dtype=np.float64) for k in ("Wx", "Wh", "b", "Wy"))
        xs, dys = np.asarray(xs, dtype=np.float64), np.asarray(dys, dtype=np.float64)
        start = np.asarray(h0, dtype=np.float64)
        T, H = len(xs), Wh.shape[0]
        states = [start]
        for t in range(T):
            states.append(np.tanh(Wx @ xs[t] + Wh @ states[-1] + b))
        states = np.array(states)                          # (T + 1, H): h0, h_1, ..., h_T
        dz = np.zeros((T, H))
        coming = np.zeros(H) if dh_last is None else np.asarray(dh_last, dtype=np.float64)
        for t in range(T - 1, -1, -1):
            dz[t] = (dys[t] @ Wy + coming) * (1.0 - states[t + 1] ** 2)
            coming = Wh.T @ dz[t]
        return {"Wx": np.einsum("th,td->hd", dz, xs), "Wh": np.einsum("th,tk->hk", dz, states[:-1]),
                "b": dz.sum(axis=0), "Wy": np.einsum("to,th->oh", dys, states[1:]), "by": dys.sum(axis=0),
                "xs": dz @ Wx, "h0": coming}
"""
CORRECT["rnn_bptt"] = _BPTT
WRONG["rnn_bptt"] = [
    ("the future term through Wh", "future_not_transposed", edit(_BPTT, ("coming = Wh.T @ dz[t]", "coming = Wh @ dz[t]"))),
    ("tanh' on the local term only", "future_term_without_tanh_derivative", edit(
        _BPTT, ("dz[t] = (dys[t] @ Wy + coming) * (1.0 - states[t + 1] ** 2)",
                "dz[t] = (dys[t] @ Wy) * (1.0 - states[t + 1] ** 2) + coming"))),
    ("no future term", "no_future_gradient", edit(_BPTT, ("dz[t] = (dys[t] @ Wy + coming) * (1.0 - states[t + 1] ** 2)",
                                                        "dz[t] = (dys[t] @ Wy + (coming if t == T - 1 else 0.0)) * (1.0 - states[t + 1] ** 2)"))),
    ("the forward pass from zeros", "h0_ignored", edit(_BPTT, ("start = np.asarray(h0, dtype=np.float64)", 'start = np.zeros(np.shape(params["Wh"])[0])'))),
    ("no gradient for h0", "gradient_left_at_zero", edit(_BPTT, ('"xs": dz @ Wx, "h0": coming}', '"xs": dz @ Wx, "h0": np.zeros(H)}'))),
]


# --- truncated_bptt: each chunk's forward and backward in one function, the loss by log-sum-exp --------------------
_TRUNC = """
    import numpy as np
    def _chunk(params, xs, targets, start, weights, T):
        Wx, Wh, b, Wy, by = (params[k] for k in ("Wx", "Wh", "b", "Wy", "by"))
        hs = [start]
        for x in xs:
            hs.append(np.tanh(Wx @ x + Wh @ hs[-1] + b))
        hs = np.array(hs)
        ys = hs[1:] @ Wy.T + by
        log_p = ys - np.logaddexp.reduce(ys, axis=1, keepdims=True)
        rows = np.arange(len(xs))
        loss = -(weights * log_p[rows, targets]).sum() / T
        dys = np.exp(log_p)
        dys[rows, targets] -= 1.0
        dys *= weights[:, None] / T
        g = {"Wy": dys.T @ hs[1:], "by": dys.sum(0)}
        dz, back = np.zeros((len(xs), len(start))), np.zeros(len(start))
        for t in range(len(xs) - 1, -1, -1):
            dz[t] = (Wy.T @ dys[t] + back) * (1 - hs[t + 1] ** 2)
            back = Wh.T @ dz[t]
        g.update(Wx=dz.T @ xs, Wh=dz.T @ hs[:-1], b=dz.sum(0), xs=dz @ Wx, h0=back)
        return loss, g, hs[-1]

    def truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
        params = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
        xs, targets = np.asarray(xs, dtype=np.float64), np.asarray(targets)
        T, H = len(xs), params["Wh"].shape[0]
        first = np.zeros(H) if h0 is None else np.array(h0, dtype=np.float64)
        weights = np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(float)
        grads = {k: np.zeros_like(params[k]) for k in ("Wx", "Wh", "b", "Wy", "by")}
        grads["xs"] = np.zeros_like(xs)
        total, state, starts = 0.0, first, []
        for a in range(0, T, chunk_length):
            part = slice(a, min(a + chunk_length, T))
            start = state if carry_state else first
            starts.append(start.copy())
            loss, g, state = _chunk(params, xs[part], targets[part], start, weights[part], T)
            total += loss
            for k in ("Wx", "Wh", "b", "Wy", "by"):
                grads[k] += g[k]
            grads["xs"][part] = g["xs"]
            if a == 0:
                grads["h0"] = g["h0"]
        return float(total), grads, starts
"""
CORRECT["truncated_bptt"] = _TRUNC
WRONG["truncated_bptt"] = [
    ("the first chunk from zeros", "h0_ignored", edit(_TRUNC, ("first = np.zeros(H) if h0 is None else np.array(h0, dtype=np.float64)", "first = np.zeros(H)"))),
    ("h0's gradient never stored", "gradient_left_at_zero", edit(
        _TRUNC, ('grads["xs"] = np.zeros_like(xs)', 'grads["xs"] = np.zeros_like(xs)\ngrads["h0"] = np.zeros(H)'),
        ('            if a == 0:\n                grads["h0"] = g["h0"]\n', ""))),
    ("h0's gradient from the last chunk", None, edit(
        _TRUNC, ('            if a == 0:\n                grads["h0"] = g["h0"]', '            grads["h0"] = g["h0"]'))),
    ("carry_state read the other way", "state_reset_each_chunk", edit(_TRUNC, ("start = state if carry_state else first", "start = first if carry_state else state"))),
]


# --- clip_global_norm: the norm from np.vdot, a factor applied with np.multiply ------------------------------------
_CLIP = """
    import numpy as np
    def clip_global_norm(grads, threshold):
        single = isinstance(grads, np.ndarray)
        arrays = [np.asarray(grads, dtype=np.float64)] if single else [np.asarray(g, dtype=np.float64) for g in grads]
        norm = float(np.sqrt(sum(np.vdot(g, g) for g in arrays)))
        factor = 1.0 if norm <= threshold else threshold / norm
        clipped = [np.multiply(g, factor) for g in arrays]
        return (clipped[0] if single else clipped), norm
"""
CORRECT["clip_global_norm"] = _CLIP
WRONG["clip_global_norm"] = [
    ("each array by its own norm", "each_array_its_own_norm", edit(
        _CLIP, ("clipped = [np.multiply(g, factor) for g in arrays]",
                "clipped = [g * min(1.0, threshold / max(np.linalg.norm(g), 1e-300)) for g in arrays]"))),
    ("always threshold / norm", "always_rescaled", edit(_CLIP, ("factor = 1.0 if norm <= threshold else threshold / norm",
                                                             "factor = threshold / norm if norm else 1.0"))),
    ("the norm reported after clipping", "norm_after_clipping", edit(_CLIP, ("return (clipped[0] if single else clipped), norm",
                                                                          "return (clipped[0] if single else clipped), norm * factor"))),
    ("the squared norm", None, edit(_CLIP, ("norm = float(np.sqrt(sum(np.vdot(g, g) for g in arrays)))",
                                             "norm = float(sum(np.vdot(g, g) for g in arrays))"))),
]


# --- lstm_cell_forward: the gates by np.split, the sigmoid through tanh ----------------------------------------------
_LSTM_CELL = """
    import numpy as np
    def lstm_cell_forward(params, x, h_prev, c_prev):
        x, h_prev, c_prev = (np.asarray(v, dtype=np.float64) for v in (x, h_prev, c_prev))
        pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]
        a_i, a_f, a_g, a_o = np.split(pre, 4)
        gate = lambda v: 0.5 * (1.0 + np.tanh(0.5 * v))      # the sigmoid, written through tanh
        i, f, o = gate(a_i), gate(a_f), gate(a_o)
        g = np.tanh(a_g)
        c = f * c_prev + i * g
        h = o * np.tanh(c)
        return h, c, {"i": i, "f": f, "g": g, "o": o}
"""
CORRECT["lstm_cell_forward"] = _LSTM_CELL
WRONG["lstm_cell_forward"] = [
    ("no input bias", "bias_left_out", edit(_LSTM_CELL, ('pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]',
                                                         'pre = params["Wx"] @ x + params["Wh"] @ h_prev + params["bh"]'))),
    ("the candidate through the gate function", "sigmoid_instead_of_tanh", edit(_LSTM_CELL, ("g = np.tanh(a_g)", "g = gate(a_g)"))),
    ("the cell read through the gate function", "sigmoid_instead_of_tanh", edit(_LSTM_CELL, ("h = o * np.tanh(c)", "h = o * gate(c)"))),
    ("the split in TensorFlow 1's LSTMCell order", "gate_order_igfo", edit(_LSTM_CELL, ("a_i, a_f, a_g, a_o = np.split(pre, 4)", "a_i, a_g, a_f, a_o = np.split(pre, 4)"))),
    ("h from the old cell", None, edit(_LSTM_CELL, ("h = o * np.tanh(c)", "h = o * np.tanh(c_prev)"))),
]


# --- lstm_bptt: the forward pass stores every gate as a row of a (T, 4H) array ---------------------------------------
_LSTM_BPTT = """
    import numpy as np
    def lstm_bptt(params, xs, dhs, h0=None, c0=None, dcs=None):
        Wx, Wh, bx, bh = (np.asarray(params[k], dtype=np.float64) for k in ("Wx", "Wh", "bx", "bh"))
        xs, dhs = np.asarray(xs, dtype=np.float64), np.asarray(dhs, dtype=np.float64)
        T, H = dhs.shape
        h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
        c = np.zeros(H) if c0 is None else np.asarray(c0, dtype=np.float64)
        gates, hs, cs = np.zeros((T, 4 * H)), [h], [c]
        for t in range(T):
            a = Wx @ xs[t] + bx + Wh @ h + bh
            s = 1 / (1 + np.exp(-a))
            gates[t] = np.concatenate([s[:2 * H], np.tanh(a[2 * H:3 * H]), s[3 * H:]])
            i, f, g, o = np.split(gates[t], 4)
            c = f * c + i * g
            h = o * np.tanh(c)
            hs.append(h)
            cs.append(c)
        da = np.zeros((T, 4 * H))
        dh_next, dc_next = np.zeros(H), np.zeros(H)
        for t in reversed(range(T)):
            i, f, g, o = np.split(gates[t], 4)
            tc = np.tanh(cs[t + 1])
            dh = dhs[t] + dh_next
            dc = dc_next + dh * o * (1 - tc ** 2) + (0.0 if dcs is None else dcs[t])
            da[t] = np.concatenate([dc * g * i * (1 - i), dc * cs[t] * f * (1 - f), dc * i * (1 - g ** 2),
                                    dh * tc * o * (1 - o)])
            dh_next, dc_next = Wh.T @ da[t], dc * f
        prev = np.array(hs[:-1])
        return {"Wx": da.T @ xs, "Wh": da.T @ prev, "bx": da.sum(0), "bh": da.sum(0), "xs": da @ Wx,
                "h0": dh_next, "c0": dc_next}
"""
CORRECT["lstm_bptt"] = _LSTM_BPTT
WRONG["lstm_bptt"] = [
    ("the forward pass from a zero h0", "h0_ignored", edit(_LSTM_BPTT, ("h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)", "h = np.zeros(H)"))),
    ("c0's gradient never returned", "gradient_left_at_zero", edit(_LSTM_BPTT, ('"h0": dh_next, "c0": dc_next}', '"h0": dh_next, "c0": np.zeros(H)}'))),
    ("tanh' of the cell dropped", "tanh_derivative_of_cell_missing", edit(_LSTM_BPTT, ("dc = dc_next + dh * o * (1 - tc ** 2)", "dc = dc_next + dh * o"))),
    ("the cell's future term dropped", "no_cell_gradient_from_future", edit(_LSTM_BPTT, ("dc = dc_next + dh * o", "dc = dh * o"))),
    ("the forget gate's derivative at c_t", None, edit(_LSTM_BPTT, ("dc * cs[t] * f * (1 - f)", "dc * cs[t + 1] * f * (1 - f)"))),
]


# --- gru_cell_forward: the three maps as (3, H) rows of one product ---------------------------------------------------
_GRU_CELL = """
    import numpy as np
    def gru_cell_forward(params, x, h_prev, convention="paper"):
        x, h_prev = np.asarray(x, dtype=np.float64), np.asarray(h_prev, dtype=np.float64)
        H = h_prev.shape[0]
        from_x = (params["Wx"] @ x + params["bx"]).reshape(3, H)
        Wh, bh = params["Wh"].reshape(3, H, H), params["bh"].reshape(3, H)
        r = 1 / (1 + np.exp(-(from_x[0] + Wh[0] @ h_prev + bh[0])))
        z = 1 / (1 + np.exp(-(from_x[1] + Wh[1] @ h_prev + bh[1])))
        n = np.tanh(from_x[2] + Wh[2] @ (r * h_prev) + bh[2])
        return z * h_prev + (1 - z) * n, {"r": r, "z": z, "n": n}
"""
CORRECT["gru_cell_forward"] = _GRU_CELL
WRONG["gru_cell_forward"] = [
    ("no recurrent biases", "bias_left_out", edit(_GRU_CELL, ('Wh, bh = params["Wh"].reshape(3, H, H), params["bh"].reshape(3, H)',
                                                             'Wh, bh = params["Wh"].reshape(3, H, H), np.zeros((3, H))'))),
    ("a logistic candidate", "sigmoid_instead_of_tanh", edit(_GRU_CELL, ("n = np.tanh(from_x[2] + Wh[2] @ (r * h_prev) + bh[2])",
                                                                        "n = 1 / (1 + np.exp(-(from_x[2] + Wh[2] @ (r * h_prev) + bh[2])))"))),
    ("z keeps the candidate", "update_gate_other_convention", edit(_GRU_CELL, ("return z * h_prev + (1 - z) * n,", "return (1 - z) * h_prev + z * n,"))),
    ("the reset applied to the product", "reset_after_matmul", edit(_GRU_CELL, ("n = np.tanh(from_x[2] + Wh[2] @ (r * h_prev) + bh[2])",
                                                                              "n = np.tanh(from_x[2] + r * (Wh[2] @ h_prev + bh[2]))"))),
    ("the reset gate on the new state", None, edit(_GRU_CELL, ("n = np.tanh(from_x[2] + Wh[2] @ (r * h_prev) + bh[2])",
                                                                 "n = np.tanh(from_x[2] + Wh[2] @ h_prev + bh[2]) * r"))),
]


# --- gru_bptt: one loop back with the three maps' gradients stacked ----------------------------------------------
_GRU_BPTT = """
    import numpy as np
    def gru_bptt(params, xs, dhs, h0=None, convention="paper"):
        Wx, Wh, bx, bh = (np.asarray(params[k], dtype=np.float64) for k in ("Wx", "Wh", "bx", "bh"))
        xs, dhs = np.asarray(xs, dtype=np.float64), np.asarray(dhs, dtype=np.float64)
        T, H = dhs.shape
        sig = lambda v: 1 / (1 + np.exp(-v))
        h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
        saved = []
        for t in range(T):
            ax = Wx @ xs[t] + bx
            r = sig(ax[:H] + Wh[:H] @ h + bh[:H])
            z = sig(ax[H:2 * H] + Wh[H:2 * H] @ h + bh[H:2 * H])
            n = np.tanh(ax[2 * H:] + Wh[2 * H:] @ (r * h) + bh[2 * H:])
            saved.append((h, r, z, n))
            h = z * h + (1 - z) * n
        g = {"Wx": np.zeros_like(Wx), "Wh": np.zeros_like(Wh), "bx": np.zeros_like(bx), "bh": np.zeros_like(bh),
             "xs": np.zeros_like(xs)}
        later = np.zeros(H)
        for t in range(T - 1, -1, -1):
            hp, r, z, n = saved[t]
            dh = dhs[t] + later
            dan = dh * (1 - z) * (1 - n ** 2)
            daz = dh * (hp - n) * z * (1 - z)
            drh = Wh[2 * H:].T @ dan
            dar = drh * hp * r * (1 - r)
            da = np.concatenate([dar, daz, dan])
            g["Wx"] += np.outer(da, xs[t])
            g["bx"] += da
            g["bh"] += da
            g["Wh"][:2 * H] += np.outer(da[:2 * H], hp)
            g["Wh"][2 * H:] += np.outer(dan, r * hp)
            g["xs"][t] = Wx.T @ da
            later = dh * z + drh * r + Wh[:H].T @ dar + Wh[H:2 * H].T @ daz
        g["h0"] = later
        return g
"""
CORRECT["gru_bptt"] = _GRU_BPTT
WRONG["gru_bptt"] = [
    ("the direct path z * dh dropped", "direct_path_missing", edit(_GRU_BPTT, ("later = dh * z + drh * r", "later = drh * r"))),
    ("the path through r * h_prev dropped", "reset_path_missing", edit(_GRU_BPTT, ("later = dh * z + drh * r + ", "later = dh * z + "))),
    ("nothing carried back", "no_future_gradient", edit(_GRU_BPTT, ("dh = dhs[t] + later", "dh = dhs[t]"))),
    ("the forward pass from zeros", "h0_ignored", edit(_GRU_BPTT, ("h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)", "h = np.zeros(H)"))),
    ("bh's gradient never added", "gradient_left_at_zero", edit(_GRU_BPTT, ('g["bh"] += da\n', ""))),
]


# --- attention: einsum, the mask as an additive -inf ----------------------------------------------------------------
_ATTENTION = """
    import numpy as np
    def attention(q, keys, values, mask=None):
        one = np.ndim(q) == 1
        Q = np.atleast_2d(np.asarray(q, dtype=np.float64))
        K, V = np.asarray(keys, dtype=np.float64), np.asarray(values, dtype=np.float64)
        scores = np.einsum("nd,md->nm", Q, K) / np.sqrt(Q.shape[-1])
        visible = np.ones(scores.shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
        blocked = np.where(visible, 0.0, -np.inf)
        shifted = scores + blocked
        top = np.max(shifted, axis=-1, keepdims=True)
        top[~np.isfinite(top)] = 0.0
        e = np.exp(shifted - top)
        total = e.sum(axis=-1, keepdims=True)
        weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        output = np.einsum("nm,m...->n...", weights, V)
        empty = [int(r) for r in np.flatnonzero(~visible.any(axis=-1))]
        if one:
            out = output[0]
            return {"scores": scores[0], "weights": weights[0], "output": float(out) if np.ndim(out) == 0 else out,
                    "fully_masked_rows": empty}
        return {"scores": scores, "weights": weights, "output": output, "fully_masked_rows": empty}
"""
CORRECT["attention"] = _ATTENTION
WRONG["attention"] = [
    ("each column normalised", "softmax_over_queries", edit(_ATTENTION, ("top = np.max(shifted, axis=-1, keepdims=True)", "top = np.max(shifted, axis=0, keepdims=True)"),
                                                            ("total = e.sum(axis=-1, keepdims=True)", "total = e.sum(axis=0, keepdims=True)"))),
    ("scaled by d", "divided_by_d", edit(_ATTENTION, ("/ np.sqrt(Q.shape[-1])", "/ Q.shape[-1]"))),
    ("True read as blocked", "mask_inverted", edit(_ATTENTION, ("blocked = np.where(visible, 0.0, -np.inf)", "blocked = np.where(visible, -np.inf, 0.0)"),
                                                   ("empty = [int(r) for r in np.flatnonzero(~visible.any(axis=-1))]",
                                                    "empty = [int(r) for r in np.flatnonzero(visible.all(axis=-1))]"))),
    ("the mask added to the weights", "mask_after_softmax", edit(_ATTENTION, ("shifted = scores + blocked", "shifted = scores"),
                                                                  ("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)",
                                                                   "weights = np.where(visible, e / total, 0.0)"))),
    ("scores not scaled", "missing_scale", edit(_ATTENTION, ("/ np.sqrt(Q.shape[-1])", ""))),
]


# --- attention_backward: the softmax Jacobian as a matrix per row -----------------------------------------------
_ATT_BACK = """
    import numpy as np
    def attention_backward(q, keys, values, d_output, mask=None):
        Q, K, V, dO = (np.asarray(a, dtype=np.float64) for a in (q, keys, values, d_output))
        s = Q @ K.T / np.sqrt(Q.shape[1])
        visible = np.ones(s.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), s.shape)
        P = np.zeros_like(s)
        for r in range(len(s)):
            if visible[r].any():
                row = np.where(visible[r], s[r], -np.inf)
                e = np.exp(row - row[visible[r]].max())
                P[r] = e / e.sum()
        dP = dO @ V.T
        dS = np.zeros_like(s)
        for r in range(len(s)):
            J = np.diag(P[r]) - np.outer(P[r], P[r])             # the softmax's Jacobian for row r
            dS[r] = J @ dP[r]
        scale = 1 / np.sqrt(Q.shape[1])
        return {"q": dS @ K * scale, "keys": dS.T @ Q * scale, "values": P.T @ dO}
"""
CORRECT["attention_backward"] = _ATT_BACK
WRONG["attention_backward"] = [
    ("the keys' gradient left out", "gradient_left_at_zero", edit(_ATT_BACK, ('"keys": dS.T @ Q * scale', '"keys": np.zeros_like(K)'))),
    ("the diagonal of the Jacobian", "softmax_jacobian_diagonal_only", edit(_ATT_BACK, ("J = np.diag(P[r]) - np.outer(P[r], P[r])",
                                                                                        "J = np.diag(P[r] * (1 - P[r]))"))),
    ("no scale in the gradients", "missing_scale", edit(_ATT_BACK, ("scale = 1 / np.sqrt(Q.shape[1])", "scale = 1.0"))),
    ("the values' gradient as P times dO", "values_gradient_not_transposed", edit(_ATT_BACK, ('"values": P.T @ dO', '"values": P @ dO'))),
]


# --- causal_mask: np.fromfunction ---------------------------------------------------------------------------------
_CAUSAL = """
    import numpy as np
    def causal_mask(n):
        return np.fromfunction(lambda i, j: j <= i, (n, n), dtype=int)
"""
CORRECT["causal_mask"] = _CAUSAL
WRONG["causal_mask"] = [
    ("strictly before", "current_position_excluded", edit(_CAUSAL, ("j <= i", "j < i"))),
    ("the keys' index first", "transposed", edit(_CAUSAL, ("j <= i", "i <= j"))),
    ("as integers", "numbers_not_bool", edit(_CAUSAL, ("lambda i, j: j <= i", "lambda i, j: (j <= i).astype(int)"))),
    ("two steps ahead", None, edit(_CAUSAL, ("j <= i", "j <= i + 2"))),
]


# --- multihead_attention: the heads as a (heads, n, w) array, einsum throughout ----------------------------------------
_MHA = """
    import numpy as np
    def multihead_attention(x_q, x_kv, params, num_heads, mask=None):
        x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
        n, d = x_q.shape
        m, w = x_kv.shape[0], d // num_heads
        Q = (x_q @ params["Wq"]).reshape(n, num_heads, w).transpose(1, 0, 2)
        K = (x_kv @ params["Wk"]).reshape(m, num_heads, w).transpose(1, 0, 2)
        V = (x_kv @ params["Wv"]).reshape(m, num_heads, w).transpose(1, 0, 2)
        s = np.einsum("hnw,hmw->hnm", Q, K) / np.sqrt(w)
        if mask is not None:
            s = np.where(np.broadcast_to(mask, (n, m)), s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        heads = np.einsum("hnm,hmw->hnw", p, V)
        concat = heads.transpose(1, 0, 2).reshape(n, d)
        return {"concat": concat, "output": concat @ params["Wo"]}
"""
CORRECT["multihead_attention"] = _MHA
WRONG["multihead_attention"] = [
    ("interleaved columns, blocks side by side", "heads_split_interleaved", edit(
        _MHA, ('Q = (x_q @ params["Wq"]).reshape(n, num_heads, w).transpose(1, 0, 2)', 'Q = (x_q @ params["Wq"]).reshape(n, w, num_heads).transpose(2, 0, 1)'),
        ('K = (x_kv @ params["Wk"]).reshape(m, num_heads, w).transpose(1, 0, 2)', 'K = (x_kv @ params["Wk"]).reshape(m, w, num_heads).transpose(2, 0, 1)'),
        ('V = (x_kv @ params["Wv"]).reshape(m, num_heads, w).transpose(1, 0, 2)', 'V = (x_kv @ params["Wv"]).reshape(m, w, num_heads).transpose(2, 0, 1)'))),
    ("the softmax down each column", "softmax_over_queries", edit(_MHA, ("s = s - s.max(axis=-1, keepdims=True)", "s = s - s.max(axis=-2, keepdims=True)"),
                                                                 ("p /= p.sum(axis=-1, keepdims=True)", "p /= p.sum(axis=-2, keepdims=True)"))),
    ("x @ W.T as in torch", "weights_transposed", edit(_MHA, ('x_q @ params["Wq"]', 'x_q @ params["Wq"].T'), ('x_kv @ params["Wk"]', 'x_kv @ params["Wk"].T'),
                                                       ('x_kv @ params["Wv"]', 'x_kv @ params["Wv"].T'), ('concat @ params["Wo"]', 'concat @ params["Wo"].T'))),
    ("the heads rolled by one", "heads_in_another_order", edit(_MHA, ("concat = heads.transpose(1, 0, 2).reshape(n, d)",
                                                                      "concat = np.roll(heads, 1, axis=0).transpose(1, 0, 2).reshape(n, d)"))),
    ("the heads last first", "heads_reversed", edit(_MHA, ("concat = heads.transpose(1, 0, 2).reshape(n, d)",
                                                           "concat = heads[::-1].transpose(1, 0, 2).reshape(n, d)"))),
    ("the heads' outputs merged column-wise", None, edit(_MHA, ("concat = heads.transpose(1, 0, 2).reshape(n, d)",
                                                                "concat = heads.transpose(1, 2, 0).reshape(n, d)"))),
]


# --- choose_merge: sorted by a key, the last one taken -------------------------------------------------------------
_CHOOSE = """
    def choose_merge(pair_counts, token_bytes):
        ranked = sorted(pair_counts, key=lambda p: (pair_counts[p], bytes(token_bytes[p[0]]), bytes(token_bytes[p[1]])))
        left, right = ranked[-1]
        return (int(left), int(right))
"""
CORRECT["choose_merge"] = _CHOOSE
WRONG["choose_merge"] = [
    ("the joined bytes compared", "concatenation_compared", edit(_CHOOSE, ("bytes(token_bytes[p[0]]), bytes(token_bytes[p[1]]))",
                                                                        "bytes(token_bytes[p[0]]) + bytes(token_bytes[p[1]]))"))),
    ("the ids compared", "ids_compared", edit(_CHOOSE, ("(pair_counts[p], bytes(token_bytes[p[0]]), bytes(token_bytes[p[1]]))", "(pair_counts[p], p)"))),
    ("the first of the ranking", "tie_to_smaller_pair", edit(_CHOOSE, ("key=lambda p: (pair_counts[p], ", "key=lambda p: (-pair_counts[p], "),
                                                                     ("left, right = ranked[-1]", "left, right = ranked[0]"))),
    ("a list returned", "not_a_tuple", edit(_CHOOSE, ("return (int(left), int(right))", "return [int(left), int(right)]"))),
]


# --- train_bpe: regex pre-tokens, a Counter of byte tuples, the merge applied word by word -------------------------
_BPE = r'''
    import regex
    from collections import Counter
    PATTERN = regex.compile(r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

    def _merge(word, pair):
        out, i = [], 0
        while i < len(word):
            if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
                out.append(pair[0] + pair[1])
                i += 2
            else:
                out.append(word[i])
                i += 1
        return tuple(out)

    def train_bpe(input_path, vocab_size, special_tokens):
        with open(input_path, encoding="utf-8") as f:
            text = f.read()
        pieces = regex.split("|".join(regex.escape(s) for s in special_tokens), text) if special_tokens else [text]
        words = Counter(tuple(bytes([b]) for b in m.group().encode("utf-8")) for piece in pieces
                        for m in PATTERN.finditer(piece))
        vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
        vocab.update({len(special_tokens) + b: bytes([b]) for b in range(256)})
        merges = []
        while len(vocab) < vocab_size:
            pairs = Counter()
            for word, count in words.items():
                for pair in zip(word, word[1:]):
                    pairs[pair] += count
            if not pairs:
                break
            best = max(pairs, key=lambda p: (pairs[p], p))
            merges.append(best)
            vocab[len(vocab)] = best[0] + best[1]
            words = Counter({_merge(word, best): count for word, count in words.items()})
        return vocab, merges
'''
CORRECT["train_bpe"] = _BPE
WRONG["train_bpe"] = [
    ("ties by the joined bytes", "ties_by_joined_bytes", edit(_BPE, ("best = max(pairs, key=lambda p: (pairs[p], p))",
                                                                  "best = max(pairs, key=lambda p: (pairs[p], p[0] + p[1], p))"))),
    ("each word counted once", "counts_not_weighted", edit(_BPE, ("pairs[pair] += count", "pairs[pair] += 1"))),
    ("ties by the smaller pair", "ties_to_smaller", edit(_BPE, ("best = max(pairs, key=lambda p: (pairs[p], p))",
                                                             "best = min(pairs, key=lambda p: (-pairs[p], p))"))),
    ("special tokens after the bytes", "special_tokens_after_bytes", edit(
        _BPE, ('vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}\n'
               'vocab.update({len(special_tokens) + b: bytes([b]) for b in range(256)})',
               'vocab = {b: bytes([b]) for b in range(256)}\nvocab.update({256 + i: s.encode("utf-8") for i, s in enumerate(special_tokens)})'))),
]


# === the PyTorch exercises ==========================================================================================

# --- softmax: computed in float64, cast back ------------------------------------------------------------------------
_SOFTMAX = """
    import torch
    def softmax(x, dim=-1):
        wide = x.to(torch.float64)
        e = torch.exp(wide - wide.amax(dim=dim, keepdim=True))
        return (e / e.sum(dim=dim, keepdim=True)).to(x.dtype)
"""
CORRECT["softmax"] = _SOFTMAX
WRONG["softmax"] = [
    ("one maximum for everything", "max_of_the_whole_tensor", edit(_SOFTMAX, ("wide.amax(dim=dim, keepdim=True)", "wide.max()"))),
    ("normalised by the total", "normalised_over_everything", edit(_SOFTMAX, ("e / e.sum(dim=dim, keepdim=True)", "e / e.sum()"))),
    ("no shift", "max_not_subtracted", edit(_SOFTMAX, ("torch.exp(wide - wide.amax(dim=dim, keepdim=True))", "torch.exp(wide)"))),
    ("the last axis whatever dim says", "wrong_axis", edit(_SOFTMAX, ("wide.amax(dim=dim, keepdim=True)", "wide.amax(dim=-1, keepdim=True)"),
                                                          ("e.sum(dim=dim, keepdim=True)", "e.sum(dim=-1, keepdim=True)"))),
]


# --- rms_norm: torch.rsqrt ------------------------------------------------------------------------------------------
_RMS = """
    import torch
    def rms_norm(x, weight, eps=1e-5):
        return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight
"""
CORRECT["rms_norm"] = _RMS
WRONG["rms_norm"] = [
    ("eps after the root", "eps_outside_the_root", edit(_RMS, ("x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)",
                                                            "x / (x.pow(2).mean(dim=-1, keepdim=True).sqrt() + eps)"))),
    ("no gain", "weight_missing", edit(_RMS, (" * weight", ""))),
    ("the mean of every entry", "mean_over_every_dimension", edit(_RMS, ("x.pow(2).mean(dim=-1, keepdim=True)", "x.pow(2).mean()"))),
    ("centred first", "mean_subtracted", edit(_RMS, ("return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight",
                                                     "c = x - x.mean(dim=-1, keepdim=True)\n"
                                                     "return c * torch.rsqrt(c.pow(2).mean(dim=-1, keepdim=True) + eps) * weight"))),
]


# --- swiglu: einsum over the (out, in) weights ---------------------------------------------------------------------
_SWIGLU = """
    import torch
    def swiglu(x, w1_weight, w2_weight, w3_weight):
        a = torch.einsum("...i,fi->...f", x, w1_weight)
        b = torch.einsum("...i,fi->...f", x, w3_weight)
        return torch.einsum("...f,of->...o", a * torch.sigmoid(a) * b, w2_weight)
"""
CORRECT["swiglu"] = _SWIGLU
WRONG["swiglu"] = [
    ("a relu gate", "relu_instead_of_silu", edit(_SWIGLU, ("a * torch.sigmoid(a) * b", "torch.relu(a) * b"))),
    ("the weights read as (in, out)", "weights_transposed", edit(_SWIGLU, ('torch.einsum("...i,fi->...f", x, w1_weight)', 'torch.einsum("...i,if->...f", x, w1_weight)'),
                                                                ('torch.einsum("...i,fi->...f", x, w3_weight)', 'torch.einsum("...i,if->...f", x, w3_weight)'),
                                                                ('torch.einsum("...f,of->...o",', 'torch.einsum("...f,fo->...o",'))),
    ("w1 read as (in, out)", "weights_transposed", edit(_SWIGLU, ('torch.einsum("...i,fi->...f", x, w1_weight)', 'torch.einsum("...i,if->...f", x, w1_weight)'))),
    ("the sigmoid alone as the gate", "sigmoid_instead_of_silu", edit(_SWIGLU, ("a * torch.sigmoid(a) * b", "torch.sigmoid(a) * b"))),
    ("the gate on the other branch", "gate_on_the_other_branch", edit(_SWIGLU, ("a * torch.sigmoid(a) * b", "a * b * torch.sigmoid(b)"))),
]


# --- rotate_pairs: the pairs as complex numbers ---------------------------------------------------------------------
_ROTATE = """
    import torch
    def rotate_pairs(x, cos, sin):
        pairs = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], -1, 2).contiguous())
        turn = torch.complex(cos.to(torch.float64), sin.to(torch.float64))
        return torch.view_as_real(pairs * turn).reshape(x.shape).to(x.dtype)
"""
CORRECT["rotate_pairs"] = _ROTATE
WRONG["rotate_pairs"] = [
    ("the conjugate turn", "rotated_backwards", edit(_ROTATE, ("pairs * turn", "pairs * turn.conj()"))),
    ("cos as the imaginary part", "cos_and_sin_swapped", edit(_ROTATE, ("torch.complex(cos.to(torch.float64), sin.to(torch.float64))",
                                                                       "torch.complex(sin.to(torch.float64), cos.to(torch.float64))"))),
    ("the first half with the second", "half_split_pairs", edit(
        _ROTATE, ("pairs = torch.view_as_complex(x.to(torch.float64).reshape(*x.shape[:-1], -1, 2).contiguous())",
                  "half = x.shape[-1] // 2\n"
                  "wide = x.to(torch.float64)\n"
                  "pairs = torch.complex(wide[..., :half], wide[..., half:])"),
        ("return torch.view_as_real(pairs * turn).reshape(x.shape).to(x.dtype)",
         "out = pairs * turn\nreturn torch.cat((out.real, out.imag), dim=-1).to(x.dtype)"))),
    ("the angle doubled", None, edit(_ROTATE, ("pairs * turn", "pairs * turn * turn"))),
]


# --- scaled_dot_product_attention: the visible keys as a boolean table, torch.where -----------------------------------
_SDPA = """
    import math
    import torch
    def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
        n, m = Q.shape[-2], K.shape[-2]
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.shape[-1])
        visible = torch.ones(n, m, dtype=torch.bool)
        if causal:
            query_at = torch.arange(n)[:, None] + (m - n)
            visible = torch.arange(m)[None, :] <= query_at
        if mask is not None:
            visible = visible & mask
        visible = visible.expand(scores.shape)
        scores = torch.where(visible, scores, torch.full_like(scores, float("-inf")))
        top = scores.amax(dim=-1, keepdim=True).nan_to_num(neginf=0.0)
        e = torch.where(visible, torch.exp(scores - top), torch.zeros_like(scores))
        total = e.sum(dim=-1, keepdim=True)
        weights = e / torch.where(total > 0, total, torch.ones_like(total))
        return torch.matmul(weights, V).to(V.dtype)
"""
CORRECT["scaled_dot_product_attention"] = _SDPA
WRONG["scaled_dot_product_attention"] = [
    ("divided by sqrt(d_v)", "wrong_scale", edit(_SDPA, ("/ math.sqrt(Q.shape[-1])", "/ math.sqrt(V.shape[-1])"))),
    ("the causal window from key 0", "causal_from_the_first_key", edit(_SDPA, ("query_at = torch.arange(n)[:, None] + (m - n)", "query_at = torch.arange(n)[:, None]"))),
    ("the softmax down each column", "softmax_over_queries", edit(_SDPA, ("top = scores.amax(dim=-1, keepdim=True).nan_to_num(neginf=0.0)",
                                                                         "top = scores.amax(dim=-2, keepdim=True).nan_to_num(neginf=0.0)"),
                                                                        ("total = e.sum(dim=-1, keepdim=True)", "total = e.sum(dim=-2, keepdim=True)"))),
    ("the diagonal hidden too", "causal_mask_excludes_current", edit(_SDPA, ("visible = torch.arange(m)[None, :] <= query_at",
                                                                          "visible = torch.arange(m)[None, :] < query_at"))),
    ("the mask replaced by the causal window", "mask_ignored_when_causal", edit(_SDPA, ("if mask is not None:", "elif mask is not None:"))),
    ("no scale", "missing_scale", edit(_SDPA, (" / math.sqrt(Q.shape[-1])", ""))),
    ("exp of the raw scores", "max_not_subtracted", edit(_SDPA, ("torch.exp(scores - top)", "torch.exp(scores)"))),
    ("one maximum for every row", None, edit(_SDPA, ("top = scores.amax(dim=-1, keepdim=True).nan_to_num(neginf=0.0)",
                                                     "top = scores.max().nan_to_num(neginf=0.0)"))),
]


# --- causal_multihead_self_attention: unflatten and movedim ----------------------------------------------------------
_MHSA = """
    import math
    import torch
    def causal_multihead_self_attention(x, q_weight, k_weight, v_weight, o_weight, num_heads):
        seq, d_model = x.shape[-2], x.shape[-1]
        w = d_model // num_heads
        def split(t):
            return t.unflatten(-1, (num_heads, w)).movedim(-2, -3)        # (..., heads, seq, w)
        q, k, v = split(x @ q_weight.T), split(x @ k_weight.T), split(x @ v_weight.T)
        scores = q @ k.transpose(-1, -2) / math.sqrt(w)
        future = torch.triu(torch.ones(seq, seq, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
        scores = scores - scores.amax(dim=-1, keepdim=True)
        p = scores.exp()
        p = p / p.sum(dim=-1, keepdim=True)
        heads = (p @ v).movedim(-3, -2).flatten(-2)
        return heads @ o_weight.T
"""
CORRECT["causal_multihead_self_attention"] = _MHSA
WRONG["causal_multihead_self_attention"] = [
    ("no mask on the future", "no_causal_mask", edit(_MHSA, ('scores = scores.masked_fill(future, float("-inf"))\n', ""))),
    ("the weights as (in, out)", "weights_not_transposed", edit(_MHSA, ("split(x @ q_weight.T), split(x @ k_weight.T), split(x @ v_weight.T)",
                                                                       "split(x @ q_weight), split(x @ k_weight), split(x @ v_weight)"),
                                                                      ("return heads @ o_weight.T", "return heads @ o_weight"))),
    ("the heads merged the other way", "heads_merged_interleaved", edit(_MHSA, ("heads = (p @ v).movedim(-3, -2).flatten(-2)",
                                                                              "heads = (p @ v).movedim(-3, -1).flatten(-2)"))),
    ("the diagonal masked too", "causal_mask_excludes_current", edit(_MHSA, ("diagonal=1)", "diagonal=0)"))),
    ("scaled by the model width", "scaled_by_d_model", edit(_MHSA, ("/ math.sqrt(w)", "/ math.sqrt(d_model)"))),
]


# --- transformer_block: every part written in the file, RoPE by cos/sin tables of the head width -------------------------
_BLOCK = """
    import math
    import torch

    def _norm(h, gain, eps):
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * gain

    def _rope(t, theta):
        seq, w = t.shape[-2], t.shape[-1]
        freq = theta ** (-torch.arange(0, w, 2, dtype=torch.float64) / w)
        angle = torch.arange(seq, dtype=torch.float64)[:, None] * freq
        cos, sin = angle.cos().to(t.dtype), angle.sin().to(t.dtype)
        a, b = t[..., 0::2], t[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)

    def _attend(h, weights, num_heads, theta):
        seq, d = h.shape[-2], h.shape[-1]
        w = d // num_heads
        q, k, v = ((h @ weights[f"attn.{n}_proj.weight"].T).unflatten(-1, (num_heads, w)).transpose(-3, -2) for n in "qkv")
        q, k = _rope(q, theta), _rope(k, theta)
        s = (q @ k.transpose(-1, -2) / math.sqrt(w)).masked_fill(torch.ones(seq, seq, dtype=torch.bool).triu(1), float("-inf"))
        p = (s - s.amax(-1, keepdim=True)).exp()
        p = p / p.sum(-1, keepdim=True)
        return (p @ v).transpose(-3, -2).flatten(-2) @ weights["attn.output_proj.weight"].T

    def _ffn(h, weights):
        a = h @ weights["ffn.w1.weight"].T
        return (a * torch.sigmoid(a) * (h @ weights["ffn.w3.weight"].T)) @ weights["ffn.w2.weight"].T

    def transformer_block(x, weights, num_heads, theta=10000.0, eps=1e-5):
        z = x + _attend(_norm(x, weights["ln1.weight"], eps), weights, num_heads, theta)
        return z + _ffn(_norm(z, weights["ln2.weight"], eps), weights)
"""
CORRECT["transformer_block"] = _BLOCK
WRONG["transformer_block"] = [
    ("no rotation", "rope_not_applied", edit(_BLOCK, ("q, k = _rope(q, theta), _rope(k, theta)\n", ""))),
    ("a relu gate", "relu_instead_of_silu", edit(_BLOCK, ("a * torch.sigmoid(a) * ", "torch.relu(a) * "))),
    ("normalised after each residual", "post_norm", edit(_BLOCK, ('z = x + _attend(_norm(x, weights["ln1.weight"], eps), weights, num_heads, theta)',
                                                                  'z = _norm(x + _attend(x, weights, num_heads, theta), weights["ln1.weight"], eps)'),
                                                                 ('return z + _ffn(_norm(z, weights["ln2.weight"], eps), weights)',
                                                                  'return _norm(z + _ffn(z, weights), weights["ln2.weight"], eps)'))),
    ("no residual around the feed-forward", "no_ffn_residual", edit(_BLOCK, ("return z + _ffn(", "return _ffn("))),
    ("RoPE on the values too", None, edit(_BLOCK, ("q, k = _rope(q, theta), _rope(k, theta)", "q, k, v = _rope(q, theta), _rope(k, theta), _rope(v, theta)"))),
]


# --- transformer_lm: the same block, the layers folded with functools.reduce -------------------------------------------
_LM = _BLOCK.replace("    def transformer_block(", "    def _block(") + """
    import functools

    def transformer_lm(ids, weights, num_layers, num_heads, theta=10000.0, eps=1e-5):
        h = weights["token_embeddings.weight"][ids]
        def layer(h, i):
            prefix = f"layers.{i}."
            return _block(h, {k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)}, num_heads, theta, eps)
        h = functools.reduce(layer, range(num_layers), h)
        return _norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T
"""
CORRECT["transformer_lm"] = _LM
WRONG["transformer_lm"] = [
    ("no final norm", "no_final_norm", edit(_LM, ('return _norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T',
                                                  'return h @ weights["lm_head.weight"].T'))),
    ("the embeddings as the output layer", "tied_output", edit(_LM, ('@ weights["lm_head.weight"].T', '@ weights["token_embeddings.weight"].T'))),
    ("the layers from the top", "layers_in_reverse_order", edit(_LM, ("range(num_layers), h)", "reversed(range(num_layers)), h)"))),
    ("probabilities returned", "softmax_applied", edit(_LM, ('return _norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T',
                                                          'logits = _norm(h, weights["ln_final.weight"], eps) @ weights["lm_head.weight"].T\n'
                                                          'e = (logits - logits.amax(-1, keepdim=True)).exp()\n'
                                                          'return e / e.sum(-1, keepdim=True)'))),
]


# --- cross_entropy: torch.logsumexp written out, the targets gathered from a flattened view ----------------------------
_CE = """
    import torch
    def cross_entropy(logits, targets):
        flat = logits.reshape(-1, logits.shape[-1])
        picked = flat.gather(-1, targets.reshape(-1, 1).long()).squeeze(-1)
        top = flat.amax(dim=-1)
        lse = top + (flat - top[:, None]).exp().sum(dim=-1).log()
        return (lse - picked).mean()
"""
CORRECT["cross_entropy"] = _CE
WRONG["cross_entropy"] = [
    ("the log of the softmax", "log_of_softmax", edit(_CE, ("lse = top + (flat - top[:, None]).exp().sum(dim=-1).log()\nreturn (lse - picked).mean()",
                                                         "e = (flat - top[:, None]).exp()\n"
                                                         "p = e.gather(-1, targets.reshape(-1, 1).long()).squeeze(-1) / e.sum(dim=-1)\n"
                                                         "return -p.log().mean()"))),
    ("a sum over the positions", "summed_not_averaged", edit(_CE, ("return (lse - picked).mean()", "return (lse - picked).sum()"))),
    ("no shift in the log-sum-exp", "max_not_subtracted", edit(_CE, ("lse = top + (flat - top[:, None]).exp().sum(dim=-1).log()",
                                                                    "lse = flat.exp().sum(dim=-1).log()"))),
    ("the mean over every logit", "averaged_over_the_vocabulary_too", edit(_CE, ("return (lse - picked).mean()",
                                                                               "return (lse - picked).sum() / flat.numel()"))),
    ("one maximum for every row", None, edit(_CE, ("top = flat.amax(dim=-1)", "top = flat.max().expand(flat.shape[0])"))),
]


# --- lr_cosine_schedule: one expression per phase, the cosine as sin^2 -----------------------------------------------
_LR = """
    import math
    def lr_cosine_schedule(it, max_learning_rate, min_learning_rate, warmup_iters, cosine_cycle_iters):
        if it < warmup_iters:
            return float(max_learning_rate * it / warmup_iters)
        if it > cosine_cycle_iters:
            return float(min_learning_rate)
        progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
        # (1 + cos(pi p)) / 2 = cos(pi p / 2) ** 2
        return float(min_learning_rate + (max_learning_rate - min_learning_rate) * math.cos(math.pi * progress / 2) ** 2)
"""
CORRECT["lr_cosine_schedule"] = _LR
WRONG["lr_cosine_schedule"] = [
    ("the warm-up a step ahead", "warmup_off_by_one", edit(_LR, ("max_learning_rate * it / warmup_iters", "max_learning_rate * (it + 1) / warmup_iters"))),
    ("progress over the whole cycle", "cosine_over_the_whole_run", edit(_LR, ("progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)",
                                                                            "progress = it / cosine_cycle_iters"))),
    ("the cosine goes on", "no_floor_after_the_cycle", edit(_LR, ("if it > cosine_cycle_iters:\n    return float(min_learning_rate)", ""))),
    ("the half angle forgotten", "full_cosine_period", edit(_LR, ("math.cos(math.pi * progress / 2) ** 2", "math.cos(math.pi * progress) ** 2"))),
]


# --- adamw_step: torch.addcdiv_ on clones, the bias corrections folded into the step size --------------------------
_ADAM = """
    import math
    import torch
    def adamw_step(p, grad, m, v, step, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        b1, b2 = betas
        p, m, v = p.clone(), m.clone(), v.clone()
        p.mul_(1 - lr * weight_decay)
        m.mul_(b1).add_(grad, alpha=1 - b1)
        v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        m_hat = m / (1 - b1 ** step)
        v_hat = v / (1 - b2 ** step)
        p.addcdiv_(m_hat, v_hat.sqrt().add_(eps), value=-lr)
        return p, m, v
"""
CORRECT["adamw_step"] = _ADAM
WRONG["adamw_step"] = [
    ("no bias corrections", "no_bias_correction", edit(_ADAM, ("m_hat = m / (1 - b1 ** step)", "m_hat = m"), ("v_hat = v / (1 - b2 ** step)", "v_hat = v"))),
    ("eps under the root", "eps_inside_the_root", edit(_ADAM, ("v_hat.sqrt().add_(eps)", "v_hat.add(eps).sqrt()"))),
    ("the decay without lr", "decay_without_the_learning_rate", edit(_ADAM, ("p.mul_(1 - lr * weight_decay)", "p.mul_(1 - weight_decay)"))),
    ("the decay added to the gradient", "decay_on_the_moment", edit(_ADAM, ("p.mul_(1 - lr * weight_decay)\n", "grad = grad + weight_decay * p\n"))),
]


# --- get_batch: the windows by torch.as_strided over the whole dataset -------------------------------------------------
_BATCH = """
    import numpy as np
    import torch
    def get_batch(dataset, batch_size, context_length, device, *, generator=None):
        data = torch.from_numpy(np.asarray(dataset).astype(np.int64))
        starts = torch.from_numpy(generator.integers(0, len(data) - context_length, size=batch_size))
        windows = data.unfold(0, context_length + 1, 1)[starts]          # (batch, context_length + 1)
        return windows[:, :-1].to(device), windows[:, 1:].to(device)
"""
CORRECT["get_batch"] = _BATCH
WRONG["get_batch"] = [
    ("targets two tokens ahead", "targets_shifted_too_far", edit(_BATCH, ("data.unfold(0, context_length + 1, 1)", "data.unfold(0, context_length + 2, 1)"),
                                                                 ("return windows[:, :-1].to(device), windows[:, 1:].to(device)",
                                                                  "return windows[:, :context_length].to(device), windows[:, 2:].to(device)"))),
    ("the targets are the inputs", "targets_not_shifted", edit(_BATCH, ("windows[:, 1:].to(device)", "windows[:, :-1].to(device)"))),
    ("starts from torch's generator", "starts_drawn_otherwise", edit(
        _BATCH, ("torch.from_numpy(generator.integers(0, len(data) - context_length, size=batch_size))",
                 "torch.randint(0, len(data) - context_length, (batch_size,), generator=torch.Generator().manual_seed(int(generator.integers(1 << 30))))"))),
    ("inputs and targets the other way", "inputs_and_targets_swapped", edit(_BATCH, ("return windows[:, :-1].to(device), windows[:, 1:].to(device)",
                                                                                    "return windows[:, 1:].to(device), windows[:, :-1].to(device)"))),
]


# --- a catalogued mistake and a slip of the student's own: the mistake explains most values, not all ----------------------
WRONG["rnn_forward"].append(("no b, and every y nudged", None, edit(
    _FORWARD, ('driven = xs @ params["Wx"].T + params["b"]', 'driven = xs @ params["Wx"].T'),
    ('return {"hs": hs, "ys": hs @ params["Wy"].T + params["by"]}', 'return {"hs": hs, "ys": hs @ params["Wy"].T + params["by"] + 0.01}'))))
WRONG["lstm_cell_forward"].append(("no input bias, and h nudged", None, edit(
    _LSTM_CELL, ('pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]',
                 'pre = params["Wx"] @ x + params["Wh"] @ h_prev + params["bh"]'),
    ("h = o * np.tanh(c)", "h = o * np.tanh(c) + 0.01"))))
# (exercise, label, the mistake that explains part of the values: never the title, only the closest)
PARTIAL = [("rnn_forward", "no b, and every y nudged", "bias_left_out"),
           ("lstm_cell_forward", "no input bias, and h nudged", "bias_left_out")]


# Pairs that look alike (the same numbers on a worked example, or the same wrong name once): each must
# get its own title.
LOOK_ALIKES = [
    (("rnn_bptt", "the future term through Wh"), ("rnn_bptt", "no future term")),
    (("rnn_bptt", "tanh' on the local term only"), ("rnn_bptt", "no future term")),
    (("rnn_bptt", "the future term through Wh"), ("rnn_bptt", "tanh' on the local term only")),
    (("gru_bptt", "the direct path z * dh dropped"), ("gru_bptt", "nothing carried back")),
    (("multihead_attention", "interleaved columns, blocks side by side"), ("multihead_attention", "the heads last first")),
    (("multihead_attention", "the softmax down each column"), ("multihead_attention", "the heads last first")),
    (("multihead_attention", "x @ W.T as in torch"), ("multihead_attention", "the heads last first")),
    (("multihead_attention", "the heads rolled by one"), ("multihead_attention", "the heads last first")),
    (("scaled_dot_product_attention", "divided by sqrt(d_v)"), ("scaled_dot_product_attention", "the causal window from key 0")),
    (("softmax", "one maximum for everything"), ("softmax", "no shift")),
    (("get_batch", "targets two tokens ahead"), ("get_batch", "the targets are the inputs")),
    (("softmax_cross_entropy", "the mean loss with a summed gradient"), ("softmax_cross_entropy", "a sum of loss and gradient")),
    (("cross_entropy", "the log of the softmax"), ("cross_entropy", "no shift in the log-sum-exp")),
    (("scaled_dot_product_attention", "exp of the raw scores"), ("scaled_dot_product_attention", "the diagonal hidden too")),
    (("train_bpe", "ties by the joined bytes"), ("train_bpe", "ties by the smaller pair")),
]
