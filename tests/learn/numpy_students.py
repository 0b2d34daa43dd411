"""Student versions of the NumPy exercises, written here from the stubs' docstrings, not from seqlab's
code: for each exercise correct ones in several styles (loops, vectorised, einsum, another valid
formula) and wrong ones, each named by the mistake its diagnosis must give. A wrong version is often an
edit of a correct one (``edit``), the slip a student makes in that style.

CORRECT: {exercise: {style: source}}; WRONG: {exercise: [(label, expected mistake id, source)]}.
test_numpy_exercises checks them all in its one batch.
"""

from __future__ import annotations

import textwrap


def edit(source: str, *pairs: tuple[str, str]) -> str:
    """``source`` (dedented) with each (old, new) replaced; old must occur exactly once. A pair of
    several lines is indented like the line of the source that old's first line matches."""
    source = textwrap.dedent(source)
    for old, new in pairs:
        if "\n" in old.strip("\n") or "\n" in new.strip("\n"):
            old, new = textwrap.dedent(old.strip("\n")), textwrap.dedent(new.strip("\n"))
            first = old.splitlines()[0].strip()
            line = next(row for row in source.splitlines() if first in row)
            indent = line[:len(line) - len(line.lstrip())]
            old, new = (textwrap.indent(text, indent).lstrip() for text in (old, new))
        assert source.count(old) == 1, (old, source)
        source = source.replace(old, new)
    return source


CORRECT: dict[str, dict[str, str]] = {}
WRONG: dict[str, list[tuple[str, str, str]]] = {}


# --- scalar_recurrence ---------------------------------------------------------------------------------------
_REC = """
    import numpy as np
    def scalar_recurrence(a, xs, h0=0.0):
        xs = np.asarray(xs, dtype=np.float64)
        out = np.zeros(len(xs))
        h = h0
        for t in range(len(xs)):
            h = np.tanh(a * h + xs[t])
            out[t] = h
        return out
"""
_REC_ACCUMULATE = """
    import itertools
    import math
    import numpy as np
    def scalar_recurrence(a, xs, h0=0.0):
        steps = itertools.accumulate([float(x) for x in xs], lambda h, x: math.tanh(a * h + x), initial=float(h0))
        return np.fromiter(steps, dtype=np.float64)[1:]
"""
CORRECT["scalar_recurrence"] = {"preallocated": _REC, "accumulate": _REC_ACCUMULATE}
WRONG["scalar_recurrence"] = [
    ("no tanh", "no_tanh", edit(_REC, ("h = np.tanh(a * h + xs[t])", "h = a * h + xs[t]"))),
    ("records the state before the update", "states_shifted", edit(
        _REC, ("""
            h = np.tanh(a * h + xs[t])
            out[t] = h
        """.strip("\n"), """
            out[t] = h
            h = np.tanh(a * h + xs[t])
        """.strip("\n")))),
    ("h0 kept in front", "includes_h0", edit(_REC_ACCUMULATE, ("[1:]", ""))),
    ("starts from zero", "h0_ignored", edit(_REC, ("h = h0", "h = 0.0"))),
    ("states made like xs", "not_float64", edit(
        _REC, ("xs = np.asarray(xs, dtype=np.float64)\n", "xs = np.asarray(xs)\n"),
        ("out = np.zeros(len(xs))", "out = np.zeros_like(xs)"))),
    ("first step taken apart", "empty_sequence_fails", """
        import numpy as np
        def scalar_recurrence(a, xs, h0=0.0):
            xs = np.asarray(xs, dtype=np.float64)
            states = [np.tanh(a * h0 + xs[0])]
            for x in xs[1:]:
                states.append(np.tanh(a * states[-1] + x))
            return np.array(states)
    """),
    ("no default for h0", "h0_default", edit(_REC, ("h0=0.0", "h0=None"))),
    ("the states written over xs", "inputs_changed_in_place", """
        import numpy as np
        def scalar_recurrence(a, xs, h0=0.0):
            out = np.asarray(xs, dtype=np.float64)      # no copy when xs is float64 already
            h = h0
            for t in range(len(out)):
                h = np.tanh(a * h + out[t])
                out[t] = h
            return out
    """),
]


# --- scalar_recurrence_backward --------------------------------------------------------------------------------
_RECB = """
    import numpy as np
    def scalar_recurrence_backward(a, xs, h0=0.0):
        xs = np.asarray(xs, dtype=np.float64)
        T = len(xs)
        hs = np.zeros(T + 1)
        hs[0] = h0
        for t in range(T):
            hs[t + 1] = np.tanh(a * hs[t] + xs[t])
        dxs = np.zeros(T)
        dh, da = 1.0, 0.0
        for t in range(T, 0, -1):
            dpre = dh * (1 - hs[t] ** 2)
            dxs[t - 1] = dpre
            da += dpre * hs[t - 1]
            dh = dpre * a
        return {"a": float(da), "xs": dxs, "h0": float(dh)}
"""
_RECB_PRODUCTS = """
    import numpy as np
    def scalar_recurrence_backward(a, xs, h0=0.0):
        # d h_T / d pre_t = prod_{s > t} (a (1 - h_s^2)) * (1 - h_t^2): the products, right to left
        xs = np.array(xs, dtype=np.float64)
        hs = []
        h = float(h0)
        for x in xs:
            h = float(np.tanh(a * h + x))
            hs.append(h)
        hs = np.array(hs)
        prev = np.concatenate([[h0], hs[:-1]])
        local = 1 - hs ** 2
        factors = np.append(a * local[1:], 1.0)
        after = np.cumprod(factors[::-1])[::-1]
        dpre = after * local
        return {"a": float(np.dot(dpre, prev)), "xs": dpre.astype(np.float64), "h0": float(a * dpre[0]) if len(xs) else 1.0}
"""
CORRECT["scalar_recurrence_backward"] = {"loop": _RECB, "products": _RECB_PRODUCTS}
WRONG["scalar_recurrence_backward"] = [
    ("a overwritten", "a_not_summed", edit(_RECB, ("da += dpre * hs[t - 1]", "da = dpre * hs[t - 1]"))),
    ("a from the last step only", "a_not_summed", edit(_RECB, ("da += dpre * hs[t - 1]",
                                                               "da += dpre * hs[t - 1] if t == T else 0.0"))),
    ("no tanh'", "no_tanh_derivative", edit(_RECB, ("dpre = dh * (1 - hs[t] ** 2)", "dpre = dh"))),
    ("tanh' of the state before", "tanh_derivative_of_previous_state",
     edit(_RECB, ("dpre = dh * (1 - hs[t] ** 2)", "dpre = dh * (1 - hs[t - 1] ** 2)"))),
    ("a times the new state", "a_term_uses_h_t", edit(_RECB, ("da += dpre * hs[t - 1]", "da += dpre * hs[t]"))),
    ("h0 without the last a", "h0_without_last_factor", edit(
        _RECB, ('return {"a": float(da), "xs": dxs, "h0": float(dh)}',
                'return {"a": float(da), "xs": dxs, "h0": float(dh / a)}'))),
    ("dxs like xs", "not_float64", edit(_RECB, ("xs = np.asarray(xs, dtype=np.float64)\n", "xs = np.asarray(xs)\n"),
                                        ("dxs = np.zeros(T)", "dxs = np.zeros_like(xs)"))),
    ("dxs written over xs", "inputs_changed_in_place", edit(_RECB, ("dxs = np.zeros(T)", "dxs = xs      # xs is not needed any more"))),
]


# --- rnn_step ----------------------------------------------------------------------------------------------------
_STEP = """
    import numpy as np
    def rnn_step(params, x, h_prev):
        return np.tanh(params["Wh"] @ h_prev + params["Wx"] @ x + params["b"])
"""
_STEP_EINSUM = """
    import numpy as np
    def rnn_step(params, x, h_prev):
        pre = np.einsum("hd,d->h", params["Wx"], x) + np.einsum("hk,k->h", params["Wh"], h_prev) + params["b"]
        return np.tanh(pre.astype(np.float64))
"""
_STEP_LOOPS = """
    import math
    import numpy as np
    def rnn_step(params, x, h_prev):
        Wx, Wh, b = params["Wx"], params["Wh"], params["b"]
        H, D = Wx.shape
        h = np.zeros(H)
        for i in range(H):
            s = b[i] + sum(Wx[i, j] * x[j] for j in range(D)) + sum(Wh[i, k] * h_prev[k] for k in range(H))
            h[i] = math.tanh(s)
        return h
"""
CORRECT["rnn_step"] = {"einsum": _STEP_EINSUM, "row vectors": """
    import numpy as np
    def rnn_step(params, x, h_prev):
        # the same map written with row vectors: x W^T
        return np.tanh(x @ params["Wx"].T + h_prev @ params["Wh"].T + params["b"])
"""}
WRONG["rnn_step"] = [
    ("no tanh", "no_tanh", edit(_STEP, ("np.tanh(params[\"Wh\"] @ h_prev + params[\"Wx\"] @ x + params[\"b\"])",
                                        "params[\"Wh\"] @ h_prev + params[\"Wx\"] @ x + params[\"b\"]"))),
    ("Wh read as rows", "transposed_recurrent_weight", edit(_STEP, ('params["Wh"] @ h_prev', 'h_prev @ params["Wh"]'))),
    ("Wx read as rows", "input_weight_transposed", edit(_STEP, ('params["Wx"] @ x', 'x @ params["Wx"]'))),
    ("H taken from x", "square_only", edit(_STEP_LOOPS, ("H, D = Wx.shape", "H = D = len(x)"))),
    ("params unpacked by position", "other_entries", """
        import numpy as np
        def rnn_step(params, x, h_prev):
            Wx, Wh, b = list(params.values())[:3]
            return np.tanh(Wh @ h_prev + Wx @ x + b)
    """),
    ("h made like x", "not_float64", edit(_STEP_LOOPS, ("h = np.zeros(H)", "h = np.zeros(H, dtype=np.asarray(x).dtype)"))),
    ("the new state written into h_prev", "inputs_changed_in_place", """
        import numpy as np
        def rnn_step(params, x, h_prev):
            h_prev[:] = np.tanh(params["Wh"] @ h_prev + params["Wx"] @ x + params["b"])
            return h_prev.copy()
    """),
]


# --- rnn_forward ---------------------------------------------------------------------------------------------
_FWD = """
    import numpy as np
    def rnn_forward(params, xs, h0=None):
        Wx, Wh, b, Wy, by = params["Wx"], params["Wh"], params["b"], params["Wy"], params["by"]
        T, H = len(xs), Wh.shape[0]
        h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
        hs = np.zeros((T, H))
        for t in range(T):
            h = np.tanh(Wh @ h + Wx @ xs[t] + b)
            hs[t] = h
        ys = hs @ Wy.T + by
        return {"hs": hs, "ys": ys}
"""
_FWD_ROWS = """
    import numpy as np
    def rnn_forward(params, xs, h0=None):
        # row-vector style: the input projections of all steps at once, then the recurrence
        xs = np.asarray(xs, dtype=np.float64)
        Wh = params["Wh"]
        inputs = xs @ params["Wx"].T + params["b"]
        h = np.zeros(Wh.shape[0]) if h0 is None else np.array(h0, dtype=np.float64)
        states = []
        for row in inputs:
            h = np.tanh(row + h @ Wh.T)
            states.append(h)
        hs = np.stack(states) if states else np.zeros((0, Wh.shape[0]))
        return {"hs": hs, "ys": np.einsum("th,oh->to", hs, params["Wy"]) + params["by"]}
"""
CORRECT["rnn_forward"] = {"loop": _FWD, "row vectors": _FWD_ROWS}
WRONG["rnn_forward"] = [
    ("every step from h0", "state_not_carried", edit(
        _FWD, ("h = np.tanh(Wh @ h + Wx @ xs[t] + b)\nhs[t] = h",
               "hs[t] = np.tanh(Wh @ h + Wx @ xs[t] + b)"))),
    ("y from the state before", "output_from_previous_state", """
        import numpy as np
        def rnn_forward(params, xs, h0=None):
            H = params["Wh"].shape[0]
            h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
            hs, ys = [], []
            for x in xs:
                ys.append(params["Wy"] @ h + params["by"])
                h = np.tanh(params["Wh"] @ h + params["Wx"] @ x + params["b"])
                hs.append(h)
            return {"hs": np.array(hs), "ys": np.array(ys)}
    """),
    ("h @ Wh", "recurrent_weight_transposed", edit(_FWD_ROWS, ("h @ Wh.T", "h @ Wh"))),
    ("h0 kept in hs", "states_include_h0", edit(
        _FWD_ROWS, ("states = []", "states = [h]"),
        ("hs = np.stack(states) if states else np.zeros((0, Wh.shape[0]))", "hs = np.stack(states)"),
        ('return {"hs": hs, "ys": np.einsum("th,oh->to", hs, params["Wy"]) + params["by"]}',
         'return {"hs": hs, "ys": np.einsum("th,oh->to", hs[1:], params["Wy"]) + params["by"]}'))),
    ("h0 copied without a None check", "h0_none_not_handled", edit(
        _FWD, ("h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)", "h = h0.copy()"))),
    ("ys with O taken as H", "square_only", edit(_FWD, ("ys = hs @ Wy.T + by", """
        ys = np.zeros((T, H))
        for t in range(T):
            ys[t] = Wy @ hs[t] + by
    """.strip("\n")))),
    ("hs made like xs", "not_float64", edit(_FWD, ("hs = np.zeros((T, H))", "hs = np.zeros((T, H), dtype=xs.dtype)"))),
    ("the state updated inside h0", "inputs_changed_in_place", edit(
        _FWD, ("h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)",
               "h = np.zeros(H) if h0 is None else h0"),
        ("h = np.tanh(Wh @ h + Wx @ xs[t] + b)", "h[:] = np.tanh(Wh @ h + Wx @ xs[t] + b)"))),
]


# --- rnn_bptt ----------------------------------------------------------------------------------------------------
_BPTT = """
    import numpy as np
    def rnn_bptt(params, xs, h0, dys, dh_last=None):
        Wx, Wh, b, Wy = params["Wx"], params["Wh"], params["b"], params["Wy"]
        xs = np.asarray(xs, dtype=np.float64)
        T, H = len(xs), Wh.shape[0]
        hs = np.zeros((T + 1, H))
        hs[0] = h0
        for t in range(T):
            hs[t + 1] = np.tanh(Wh @ hs[t] + Wx @ xs[t] + b)
        g = {"Wx": np.zeros(Wx.shape), "Wh": np.zeros(Wh.shape), "b": np.zeros(H), "Wy": np.zeros(Wy.shape),
             "by": np.zeros(Wy.shape[0]), "xs": np.zeros(xs.shape)}
        dh_next = np.zeros(H) if dh_last is None else np.array(dh_last, dtype=np.float64)
        for t in reversed(range(T)):
            g["Wy"] += np.outer(dys[t], hs[t + 1])
            g["by"] += dys[t]
            dh = Wy.T @ dys[t] + dh_next
            dpre = dh * (1 - hs[t + 1] ** 2)
            g["Wx"] += np.outer(dpre, xs[t])
            g["Wh"] += np.outer(dpre, hs[t])
            g["b"] += dpre
            g["xs"][t] = Wx.T @ dpre
            dh_next = Wh.T @ dpre
        g["h0"] = dh_next
        return g
"""
_BPTT_MATRIX = """
    import numpy as np
    def rnn_bptt(params, xs, h0, dys, dh_last=None):
        # the per-step pre-activation gradients first, then every weight gradient as one product
        xs, dys = np.asarray(xs, dtype=np.float64), np.asarray(dys, dtype=np.float64)
        h0 = np.asarray(h0, dtype=np.float64)
        T, H = xs.shape[0], params["Wh"].shape[0]
        states = [h0]
        for x in xs:
            states.append(np.tanh(params["Wh"] @ states[-1] + params["Wx"] @ x + params["b"]))
        hs = np.array(states[1:]).reshape(T, H)
        prev = np.array(states[:-1]).reshape(T, H)
        dpre = np.zeros((T, H))
        carry = np.zeros(H) if dh_last is None else np.asarray(dh_last, dtype=np.float64)
        for t in range(T - 1, -1, -1):
            dpre[t] = (dys[t] @ params["Wy"] + carry) * (1 - hs[t] ** 2)
            carry = dpre[t] @ params["Wh"]
        return {"Wx": np.einsum("th,td->hd", dpre, xs), "Wh": dpre.T @ prev, "b": dpre.sum(0),
                "Wy": dys.T @ hs, "by": dys.sum(0), "xs": dpre @ params["Wx"], "h0": carry}
"""
CORRECT["rnn_bptt"] = {"loop": _BPTT, "matrices": _BPTT_MATRIX}
WRONG["rnn_bptt"] = [
    ("no future term", "no_future_gradient", edit(_BPTT, ("dh = Wy.T @ dys[t] + dh_next",
                                                           "dh = Wy.T @ dys[t] + (dh_next if t == T - 1 else 0.0)"))),
    ("only the local term", "no_future_gradient", edit(_BPTT_MATRIX, ("dpre[t] = (dys[t] @ params[\"Wy\"] + carry)",
                                                                       "dpre[t] = (dys[t] @ params[\"Wy\"])"),
                                                        ("carry = dpre[t] @ params[\"Wh\"]", "carry = dpre[t] @ params[\"Wh\"] + 0.0"))),
    ("weights overwritten", "shared_weights_not_summed", edit(
        _BPTT, ('g["Wx"] += np.outer(dpre, xs[t])', 'g["Wx"] = np.outer(dpre, xs[t])'),
        ('g["Wh"] += np.outer(dpre, hs[t])', 'g["Wh"] = np.outer(dpre, hs[t])'),
        ('g["b"] += dpre', 'g["b"] = dpre'))),
    ("weights from the last step only", "shared_weights_not_summed", edit(
        _BPTT_MATRIX, ('return {"Wx": np.einsum("th,td->hd", dpre, xs), "Wh": dpre.T @ prev, "b": dpre.sum(0),',
                       'return {"Wx": np.outer(dpre[-1], xs[-1]), "Wh": np.outer(dpre[-1], prev[-1]), "b": dpre[-1],'),
        ('"Wy": dys.T @ hs, "by": dys.sum(0)', '"Wy": np.outer(dys[-1], hs[-1]), "by": dys[-1]'))),
    ("tanh' of the state before", "tanh_derivative_of_previous_state",
     edit(_BPTT, ("dpre = dh * (1 - hs[t + 1] ** 2)", "dpre = dh * (1 - hs[t] ** 2)"))),
    ("dh_last dropped", "dh_last_ignored", edit(
        _BPTT, ("dh_next = np.zeros(H) if dh_last is None else np.array(dh_last, dtype=np.float64)",
                "dh_next = np.zeros(H)"))),
    ("dWy = hs^T dys", "Wy_gradient_transposed", edit(_BPTT_MATRIX, ('"Wy": dys.T @ hs', '"Wy": hs.T @ dys'))),
    ("dWx made like Wh", "square_only", edit(_BPTT, ('g = {"Wx": np.zeros(Wx.shape),', 'g = {"Wx": np.zeros(Wh.shape),'))),
    ("dxs like xs", "not_float64", edit(_BPTT, ("xs = np.asarray(xs, dtype=np.float64)\n", "xs = np.asarray(xs)\n"),
                                        ('"xs": np.zeros(xs.shape)}', '"xs": np.zeros_like(xs)}'))),
    ("dxs written over xs", "inputs_changed_in_place", edit(_BPTT, ('"xs": np.zeros(xs.shape)}', '"xs": xs}'))),
]


# --- softmax_cross_entropy -----------------------------------------------------------------------------------------
_CE = """
    import numpy as np
    def softmax_cross_entropy(logits, targets, normalizer=None):
        logits = np.asarray(logits, dtype=np.float64)
        T = logits.shape[0]
        n = T if normalizer is None else normalizer
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted)
        probs /= probs.sum(axis=1, keepdims=True)
        rows = np.arange(T)
        loss = -np.log(probs[rows, targets]).sum() / n
        dlogits = probs.copy()
        dlogits[rows, targets] -= 1
        return float(loss), dlogits / n, probs
"""
_CE_LOGSUMEXP = """
    import numpy as np
    def softmax_cross_entropy(logits, targets, normalizer=None):
        # log-softmax through log-sum-exp; the loss read from it directly
        x = np.array(logits, dtype=np.float64)
        top = np.max(x, axis=-1, keepdims=True)
        log_probs = x - top - np.log(np.sum(np.exp(x - top), axis=-1, keepdims=True))
        onehot = np.eye(x.shape[1])[np.asarray(targets)]
        n = len(x) if normalizer is None else normalizer
        probs = np.exp(log_probs)
        return float(-(onehot * log_probs).sum() / n), (probs - onehot) / n, probs
"""
CORRECT["softmax_cross_entropy"] = {"vectorised": _CE, "log-sum-exp": _CE_LOGSUMEXP}
WRONG["softmax_cross_entropy"] = [
    ("mean gradient divided again", "divided_twice", edit(_CE, ("return float(loss), dlogits / n, probs",
                                                              "return float(loss), dlogits / n / n, probs"))),
    ("softmax down the columns", "wrong_softmax_axis", edit(
        _CE, ("shifted = logits - logits.max(axis=1, keepdims=True)", "shifted = logits - logits.max(axis=0, keepdims=True)"),
        ("probs /= probs.sum(axis=1, keepdims=True)", "probs /= probs.sum(axis=0, keepdims=True)"))),
    ("summed, not averaged", "not_averaged", edit(_CE_LOGSUMEXP, ("n = len(x) if normalizer is None else normalizer", "n = 1"))),
    ("onehot minus probs", "gradient_sign", edit(_CE_LOGSUMEXP, ("(probs - onehot) / n", "(onehot - probs) / n"))),
    ("always the mean", "normalizer_ignored", edit(_CE, ("n = T if normalizer is None else normalizer", "n = T"))),
    ("no shift", "max_not_subtracted", edit(_CE, ("shifted = logits - logits.max(axis=1, keepdims=True)", "shifted = logits"))),
    ("no probs returned", "output_form", edit(_CE_LOGSUMEXP, ("return float(-(onehot * log_probs).sum() / n), (probs - onehot) / n, probs",
                                                              "return float(-(onehot * log_probs).sum() / n), (probs - onehot) / n"))),
    ("made like the logits", "not_float64", edit(_CE, ("logits = np.asarray(logits, dtype=np.float64)", "logits = np.asarray(logits)"))),
    ("the maximum subtracted in place", "inputs_changed_in_place", edit(
        _CE, ("logits = np.asarray(logits, dtype=np.float64)", "logits = np.asarray(logits)"),
        ("shifted = logits - logits.max(axis=1, keepdims=True)", "logits -= logits.max(axis=1, keepdims=True)\nshifted = logits"))),
]


# --- truncated_bptt ----------------------------------------------------------------------------------------------
_TB = """
    import numpy as np
    def truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
        Wx, Wh, b, Wy, by = (params[k] for k in ("Wx", "Wh", "b", "Wy", "by"))
        xs = np.asarray(xs, dtype=np.float64)
        T, H = len(xs), Wh.shape[0]
        first = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
        counts = np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(float)
        grads = {k: np.zeros(np.shape(params[k])) for k in ("Wx", "Wh", "b", "Wy", "by")}
        grads["xs"], grads["h0"] = np.zeros(xs.shape), np.zeros(H)
        loss, state, starts = 0.0, first, []
        for s in range(0, T, chunk_length):
            e = min(s + chunk_length, T)
            start = state.copy() if carry_state else first.copy()
            starts.append(start)
            hs = [start]
            for t in range(s, e):
                hs.append(np.tanh(Wx @ xs[t] + Wh @ hs[-1] + b))
            dh = np.zeros(H)
            for t in range(e - 1, s - 1, -1):
                h, prev = hs[t - s + 1], hs[t - s]
                y = Wy @ h + by
                p = np.exp(y - y.max())
                p /= p.sum()
                loss -= counts[t] * np.log(p[targets[t]]) / T
                dy = p.copy()
                dy[targets[t]] -= 1
                dy *= counts[t] / T
                grads["Wy"] += np.outer(dy, h)
                grads["by"] += dy
                dpre = (Wy.T @ dy + dh) * (1 - h ** 2)
                grads["Wx"] += np.outer(dpre, xs[t])
                grads["Wh"] += np.outer(dpre, prev)
                grads["b"] += dpre
                grads["xs"][t] = Wx.T @ dpre
                dh = Wh.T @ dpre
            if s == 0:
                grads["h0"] = dh
            state = hs[-1]
        return float(loss), grads, starts
"""
CORRECT["truncated_bptt"] = {"one loop": _TB, "from rnn pieces": """
    import numpy as np
    from seqlab.labs.rnn import rnn_bptt, rnn_forward, softmax_cross_entropy
    def truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
        xs, targets = np.asarray(xs, dtype=np.float64), np.asarray(targets)
        T, H = len(xs), params["Wh"].shape[0]
        h0 = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
        weight = np.array([loss_steps is None or t in loss_steps for t in range(T)], dtype=np.float64)
        total, grads, starts, state = 0.0, None, [], h0
        bounds = list(range(0, T, chunk_length))
        for k, s in enumerate(bounds):
            piece = slice(s, min(s + chunk_length, T))
            start = state if carry_state else h0
            starts.append(np.array(start))
            out = rnn_forward(params, xs[piece], start)
            _, dys, probs = softmax_cross_entropy(out["ys"], targets[piece], normalizer=T)
            picked = probs[np.arange(len(probs)), targets[piece]]
            total += float(-(weight[piece] * np.log(picked)).sum() / T)
            g = rnn_bptt(params, xs[piece], start, dys * weight[piece][:, None])
            if grads is None:
                grads = {key: np.zeros_like(value) for key, value in g.items() if key not in ("xs", "h0")}
                grads["xs"], grads["h0"] = np.zeros_like(xs), g["h0"]
            for key in ("Wx", "Wh", "b", "Wy", "by"):
                grads[key] += g[key]
            grads["xs"][piece] = g["xs"]
            state = out["hs"][-1]
        return total, grads, starts
"""}
WRONG["truncated_bptt"] = [
    ("divided by T twice", "divided_by_T_twice", edit(
        _TB, ("return float(loss), grads, starts", "return float(loss) / T, {k: v / T for k, v in grads.items()}, starts"))),
    ("one backward pass over the whole sequence", "gradient_crosses_chunks", """
        import numpy as np
        def truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
            Wx, Wh, b, Wy, by = (params[k] for k in ("Wx", "Wh", "b", "Wy", "by"))
            T, H = len(xs), Wh.shape[0]
            h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=float)
            hs, starts, loss = [h], [], 0.0
            for t in range(T):
                if t % chunk_length == 0:
                    starts.append(hs[-1].copy())
                hs.append(np.tanh(Wx @ xs[t] + Wh @ hs[-1] + b))
            grads = {k: np.zeros_like(params[k], dtype=float) for k in ("Wx", "Wh", "b", "Wy", "by")}
            grads["xs"] = np.zeros((T, Wx.shape[1]))
            dh = np.zeros(H)
            for t in range(T - 1, -1, -1):           # the chunks are only for the starts
                y = Wy @ hs[t + 1] + by
                p = np.exp(y - y.max()) / np.exp(y - y.max()).sum()
                counted = loss_steps is None or t in loss_steps
                loss -= np.log(p[targets[t]]) / T if counted else 0.0
                dy = (p - np.eye(len(p))[targets[t]]) / T if counted else np.zeros_like(p)
                grads["Wy"] += np.outer(dy, hs[t + 1])
                grads["by"] += dy
                dpre = (Wy.T @ dy + dh) * (1 - hs[t + 1] ** 2)
                grads["Wx"] += np.outer(dpre, xs[t])
                grads["Wh"] += np.outer(dpre, hs[t])
                grads["b"] += dpre
                grads["xs"][t] = Wx.T @ dpre
                dh = Wh.T @ dpre
            grads["h0"] = dh
            return float(loss), grads, starts
    """),
    ("every chunk from h0", "state_reset_each_chunk", edit(_TB, ("start = state.copy() if carry_state else first.copy()",
                                                                  "start = first.copy()"))),
    ("h0's gradient from every chunk", "h0_gradient_from_every_chunk", edit(
        _TB, ('if s == 0:\n    grads["h0"] = dh', 'grads["h0"] += dh'))),
    ("carry_state not read", "carry_state_ignored", edit(_TB, ("start = state.copy() if carry_state else first.copy()",
                                                                "start = state.copy()"))),
    ("whole chunks only", "uneven_chunks", edit(_TB, ("for s in range(0, T, chunk_length):",
                                                       "for s in range(0, T - chunk_length + 1, chunk_length):"))),
    ("every step counted", "loss_steps_ignored", edit(_TB, ("counts = np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(float)",
                                                             "counts = np.ones(T)"))),
    ("h0 copied without a None check", "h0_none_not_handled", edit(
        _TB, ("first = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)", "first = np.array(h0, dtype=np.float64)"))),
    ("starts as one array", "output_form", edit(_TB, ("return float(loss), grads, starts", "return float(loss), grads, np.stack(starts)[:, :, None]"))),
    ("the state updated in place", "inputs_changed_in_place", edit(_TB, ("state = hs[-1]", "state[:] = hs[-1]"))),
]


# --- clip_global_norm ----------------------------------------------------------------------------------------------
_CLIP = """
    import numpy as np
    def clip_global_norm(grads, threshold):
        single = isinstance(grads, np.ndarray)
        arrays = [grads] if single else list(grads)
        norm = float(np.sqrt(sum(np.sum(np.square(a, dtype=np.float64)) for a in arrays)))
        factor = threshold / norm if norm > threshold else 1.0
        clipped = [np.asarray(a, dtype=np.float64) * factor for a in arrays]
        return (clipped[0] if single else clipped), norm
"""
_CLIP_CONCAT = """
    import numpy as np
    def clip_global_norm(grads, threshold):
        # everything in one vector, then cut back into the input's shapes
        pieces = [np.asarray(grads)] if isinstance(grads, np.ndarray) else [np.asarray(g) for g in grads]
        flat = np.concatenate([p.ravel() for p in pieces]).astype(np.float64)
        norm = float(np.linalg.norm(flat))
        flat = flat * min(1.0, threshold / max(norm, 1e-300))
        out, at = [], 0
        for p in pieces:
            out.append(flat[at:at + p.size].reshape(p.shape))
            at += p.size
        return (out[0] if isinstance(grads, np.ndarray) else out), norm
"""
CORRECT["clip_global_norm"] = {"factor": _CLIP, "one vector": _CLIP_CONCAT}
WRONG["clip_global_norm"] = [
    ("np.clip", "coordinatewise", edit(_CLIP, ("clipped = [np.asarray(a, dtype=np.float64) * factor for a in arrays]",
                                               "clipped = [np.clip(np.asarray(a, dtype=np.float64), -threshold, threshold) for a in arrays]"))),
    ("each array on its own", "each_array_its_own_norm", """
        import numpy as np
        def clip_global_norm(grads, threshold):
            single = isinstance(grads, np.ndarray)
            arrays = [grads] if single else list(grads)
            clipped = []
            for a in arrays:
                n = np.linalg.norm(a)
                clipped.append(np.asarray(a, dtype=np.float64) * (threshold / n if n > threshold else 1.0))
            norm = float(np.sqrt(sum(np.sum(np.asarray(a, dtype=np.float64) ** 2) for a in arrays)))
            return (clipped[0] if single else clipped), norm
    """),
    ("always to the threshold", "always_rescaled", edit(_CLIP, ("factor = threshold / norm if norm > threshold else 1.0",
                                                                "factor = threshold / norm"))),
    ("the norm after clipping", "norm_after_clipping", edit(_CLIP, ("return (clipped[0] if single else clipped), norm",
                                                                    "return (clipped[0] if single else clipped), min(norm, threshold)"))),
    ("0 / 0", "nan_for_zero_gradients", edit(_CLIP, ("factor = threshold / norm if norm > threshold else 1.0",
                                                      "factor = min(norm, threshold) / norm"))),
    ("a list of one is an array", "form_changed", edit(_CLIP_CONCAT, ("return (out[0] if isinstance(grads, np.ndarray) else out), norm",
                                                                      "return (out[0] if len(out) == 1 else out), norm"))),
    ("scaled in place", "inputs_changed_in_place", """
        import numpy as np
        def clip_global_norm(grads, threshold):
            arrays = [grads] if isinstance(grads, np.ndarray) else list(grads)
            norm = float(np.sqrt(sum((np.asarray(a, dtype=float) ** 2).sum() for a in arrays)))
            if norm > threshold:
                for a in arrays:
                    a *= threshold / norm
            return (arrays[0] if isinstance(grads, np.ndarray) else arrays), norm
    """),
]
