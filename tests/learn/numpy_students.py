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
        if not new and old.endswith("\n"):     # a deleted line goes with its indentation
            start = source.index(old)
            old = source[source.rindex("\n", 0, start) + 1:start] + old
        source = source.replace(old, new)
    return source


CORRECT: dict[str, dict[str, str]] = {}
WRONG: dict[str, list[tuple[str, str, str]]] = {}


# Loop-style implementations, written independently of seqlab's vectorised ones.
LOOPS = {
    "scalar_recurrence": """
        import math
        import numpy as np
        def scalar_recurrence(a, xs, h0=0.0):
            out, h = [], h0
            for x in xs:
                h = math.tanh(a * h + float(x))
                out.append(h)
            return np.array(out)
    """,
    "rnn_step": """
        import math
        import numpy as np
        def rnn_step(params, x, h_prev):
            Wx, Wh, b = params["Wx"], params["Wh"], params["b"]
            H, D = Wx.shape
            h = np.zeros(H)
            for i in range(H):
                s = b[i]
                for j in range(D):
                    s += Wx[i, j] * x[j]
                for j in range(H):
                    s += Wh[i, j] * h_prev[j]
                h[i] = math.tanh(s)
            return h
    """,
    "rnn_bptt": """
        import numpy as np
        def rnn_bptt(params, xs, h0, dys, dh_last=None):
            Wx, Wh, b, Wy = params["Wx"], params["Wh"], params["b"], params["Wy"]
            T, H = len(xs), Wh.shape[0]
            hs, h = [], np.array(h0, dtype=float)
            for t in range(T):
                h = np.tanh(Wx.dot(xs[t]) + Wh.dot(h) + b)
                hs.append(h)
            g = {k: np.zeros_like(v) for k, v in params.items()}
            g["xs"] = np.zeros((T, Wx.shape[1]))
            carry = np.zeros(H) if dh_last is None else np.array(dh_last, dtype=float)
            for t in range(T - 1, -1, -1):
                prev = hs[t - 1] if t else np.array(h0, dtype=float)
                g["Wy"] += np.outer(dys[t], hs[t])
                g["by"] += dys[t]
                total = Wy.T.dot(dys[t]) + carry
                local = np.array([total[i] * (1 - hs[t][i] ** 2) for i in range(H)])
                for i in range(H):
                    g["b"][i] += local[i]
                    for j in range(Wx.shape[1]):
                        g["Wx"][i, j] += local[i] * xs[t][j]
                    for j in range(H):
                        g["Wh"][i, j] += local[i] * prev[j]
                g["xs"][t] = Wx.T.dot(local)
                carry = Wh.T.dot(local)
            g["h0"] = carry
            return g
    """,
    "softmax_cross_entropy": """
        import math
        import numpy as np
        def softmax_cross_entropy(logits, targets, normalizer=None):
            n = len(logits) if normalizer is None else normalizer
            probs = np.zeros_like(logits, dtype=float)
            loss = 0.0
            for r, row in enumerate(logits):
                top = max(row)
                exps = [math.exp(v - top) for v in row]
                total = sum(exps)
                for c in range(len(row)):
                    probs[r, c] = exps[c] / total
                loss -= float(row[targets[r]] - top) - math.log(total)
            d = probs.copy()
            for r in range(len(targets)):
                d[r, targets[r]] -= 1.0
            return loss / n, d / n, probs
    """,
    "clip_global_norm": """
        import math
        import numpy as np
        def clip_global_norm(grads, threshold):
            arrays = [grads] if isinstance(grads, np.ndarray) else list(grads)
            total = 0.0
            for a in arrays:
                for v in np.ravel(a):
                    total += float(v) * float(v)
            norm = math.sqrt(total)
            factor = threshold / norm if norm > threshold else 1.0
            scaled = [np.asarray(a, dtype=float) * factor for a in arrays]
            return (scaled[0] if isinstance(grads, np.ndarray) else scaled), norm
    """,
    "causal_mask": """
        import numpy as np
        def causal_mask(n):
            m = np.zeros((n, n), dtype=bool)
            for i in range(n):
                for j in range(i + 1):
                    m[i, j] = True
            return m
    """,
    "attention": """
        import math
        import numpy as np
        def attention(q, keys, values, mask=None):
            single = np.ndim(q) == 1
            q = np.asarray(q, dtype=float)
            Q = [q] if single else list(q)
            d = len(Q[0])
            vals = np.asarray(values, dtype=float)
            scores, weights, outputs, empty = [], [], [], []
            for i, qi in enumerate(Q):
                row = [sum(qi[c] * k[c] for c in range(d)) / math.sqrt(d) for k in keys]
                if mask is None:
                    vis = [True] * len(keys)
                else:
                    m = np.asarray(mask)
                    vis = list(m if m.ndim == 1 else m[i])
                top = max([s for s, v in zip(row, vis) if v], default=0.0)
                e = [math.exp(s - top) if v else 0.0 for s, v in zip(row, vis)]
                total = sum(e)
                w = [x / total if total > 0 else 0.0 for x in e]
                if total == 0:
                    empty.append(i)
                out = sum(wj * vals[j] for j, wj in enumerate(w))
                scores.append(row); weights.append(w); outputs.append(out)
            scores, weights = np.array(scores), np.array(weights)
            outputs = np.array(outputs, dtype=float)
            if single:
                o = outputs[0]
                return {"scores": scores[0], "weights": weights[0], "output": float(o) if np.ndim(o) == 0 else o,
                        "fully_masked_rows": empty}
            return {"scores": scores, "weights": weights, "output": outputs, "fully_masked_rows": empty}
    """,
    "choose_merge": """
        def choose_merge(pair_counts, token_bytes):
            best = None
            for pair, count in pair_counts.items():
                key = (count, token_bytes[pair[0]], token_bytes[pair[1]])
                if best is None or key > best[0]:
                    best = (key, pair)
            return best[1]
    """,
    "gru_cell_forward": """
        import math
        import numpy as np
        def gru_cell_forward(params, x, h_prev, convention="paper"):
            sig = lambda v: 1 / (1 + math.exp(-v))
            H = len(h_prev)
            Wx, Wh, bx, bh = params["Wx"], params["Wh"], params["bx"], params["bh"]
            r = [sig(Wx[i] @ x + bx[i] + Wh[i] @ h_prev + bh[i]) for i in range(H)]
            z = [sig(Wx[H + i] @ x + bx[H + i] + Wh[H + i] @ h_prev + bh[H + i]) for i in range(H)]
            reset = np.array([r[j] * h_prev[j] for j in range(H)])
            n = [math.tanh(Wx[2 * H + i] @ x + bx[2 * H + i] + Wh[2 * H + i] @ reset + bh[2 * H + i]) for i in range(H)]
            return np.array([z[i] * h_prev[i] + (1 - z[i]) * n[i] for i in range(H)]), None
    """,
}


# The exercises above have loop-style versions in LOOPS; these are the rest, written the same way
# (one step, one row, one head at a time), from the exercises' docstrings, not from seqlab's code.
LOOPS.update({
    "scalar_recurrence_backward": """
        import math
        import numpy as np
        def scalar_recurrence_backward(a, xs, h0=0.0):
            hs = [float(h0)]
            for x in xs:
                hs.append(math.tanh(a * hs[-1] + float(x)))
            dxs = np.zeros(len(xs))
            dh, da = 1.0, 0.0                       # dh = d h_T / d h_t, walking back from t = T
            for t in range(len(xs), 0, -1):
                dpre = dh * (1.0 - hs[t] ** 2)
                dxs[t - 1] = dpre
                da += dpre * hs[t - 1]
                dh = dpre * a
            return {"a": da, "xs": dxs, "h0": dh}
    """,
    "rnn_forward": """
        import math
        import numpy as np
        def rnn_forward(params, xs, h0=None):
            Wx, Wh, b, Wy, by = (params[k] for k in ("Wx", "Wh", "b", "Wy", "by"))
            H, D, O = Wh.shape[0], Wx.shape[1], Wy.shape[0]
            h = [0.0] * H if h0 is None else [float(v) for v in h0]
            hs, ys = [], []
            for x in xs:
                h = [math.tanh(b[i] + sum(Wx[i, j] * x[j] for j in range(D)) + sum(Wh[i, j] * h[j] for j in range(H)))
                     for i in range(H)]
                hs.append(h)
                ys.append([by[o] + sum(Wy[o, i] * h[i] for i in range(H)) for o in range(O)])
            return {"hs": np.array(hs), "ys": np.array(ys)}
    """,
    "truncated_bptt": """
        import math
        import numpy as np
        def truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
            Wx, Wh, b, Wy, by = (params[k] for k in ("Wx", "Wh", "b", "Wy", "by"))
            T, H = len(xs), Wh.shape[0]
            first = np.zeros(H) if h0 is None else np.array(h0, dtype=float)
            grads = {k: np.zeros_like(params[k], dtype=float) for k in ("Wx", "Wh", "b", "Wy", "by")}
            grads["xs"], grads["h0"] = np.zeros((T, Wx.shape[1])), np.zeros(H)
            loss, state, starts = 0.0, first, []
            for s in range(0, T, chunk_length):
                steps = list(range(s, min(s + chunk_length, T)))
                start = state.copy() if carry_state else first.copy()
                starts.append(start)
                hs, h, dys = [], start, []
                for t in steps:
                    h = np.tanh(Wx @ xs[t] + Wh @ h + b)
                    hs.append(h)
                    y = Wy @ h + by
                    p = np.exp(y - y.max())
                    p /= p.sum()
                    counts = loss_steps is None or t in list(loss_steps)
                    if counts:
                        loss -= math.log(p[targets[t]]) / T
                    dy = p.copy()
                    dy[targets[t]] -= 1.0
                    dys.append(dy / T if counts else np.zeros_like(dy))
                carry = np.zeros(H)                 # nothing flows in from after the chunk
                for n in range(len(steps) - 1, -1, -1):
                    t = steps[n]
                    prev = hs[n - 1] if n else start
                    grads["Wy"] += np.outer(dys[n], hs[n])
                    grads["by"] += dys[n]
                    dpre = (Wy.T @ dys[n] + carry) * (1 - hs[n] ** 2)
                    grads["Wx"] += np.outer(dpre, xs[t])
                    grads["Wh"] += np.outer(dpre, prev)
                    grads["b"] += dpre
                    grads["xs"][t] = Wx.T @ dpre
                    carry = Wh.T @ dpre
                if s == 0:
                    grads["h0"] = carry
                state = hs[-1]
            return loss, grads, starts
    """,
    "lstm_cell_forward": """
        import math
        import numpy as np
        def lstm_cell_forward(params, x, h_prev, c_prev):
            sig = lambda v: 1.0 / (1.0 + math.exp(-v))
            H = len(h_prev)
            pre = [params["Wx"][r] @ x + params["bx"][r] + params["Wh"][r] @ h_prev + params["bh"][r] for r in range(4 * H)]
            h, c = np.zeros(H), np.zeros(H)
            for u in range(H):
                i, f, g, o = sig(pre[u]), sig(pre[H + u]), math.tanh(pre[2 * H + u]), sig(pre[3 * H + u])
                c[u] = f * c_prev[u] + i * g
                h[u] = o * math.tanh(c[u])
            return h, c, None
    """,
    "lstm_bptt": """
        import math
        import numpy as np
        def lstm_bptt(params, xs, dhs, h0=None, c0=None, dcs=None):
            Wx, Wh, bx, bh = params["Wx"], params["Wh"], params["bx"], params["bh"]
            H = Wh.shape[1]
            sig = lambda v: 1.0 / (1.0 + np.exp(-v))
            h = np.zeros(H) if h0 is None else np.array(h0, dtype=float)
            c = np.zeros(H) if c0 is None else np.array(c0, dtype=float)
            steps = []
            for x in xs:
                a = Wx @ x + bx + Wh @ h + bh
                i, f, g, o = sig(a[:H]), sig(a[H:2 * H]), np.tanh(a[2 * H:3 * H]), sig(a[3 * H:])
                c_new = f * c + i * g
                steps.append((x, h, c, i, f, g, o, c_new))
                h, c = o * np.tanh(c_new), c_new
            grads = {k: np.zeros_like(params[k], dtype=float) for k in ("Wx", "Wh", "bx", "bh")}
            grads["xs"] = np.zeros((len(xs), Wx.shape[1]))
            dh_next, dc_next = np.zeros(H), np.zeros(H)
            for t in range(len(xs) - 1, -1, -1):
                x, h_prev, c_prev, i, f, g, o, c_t = steps[t]
                dh = dhs[t] + dh_next
                dc = dc_next + dh * o * (1 - np.tanh(c_t) ** 2) + (0.0 if dcs is None else dcs[t])
                da = np.zeros(4 * H)
                for u in range(H):
                    da[u] = dc[u] * g[u] * i[u] * (1 - i[u])
                    da[H + u] = dc[u] * c_prev[u] * f[u] * (1 - f[u])
                    da[2 * H + u] = dc[u] * i[u] * (1 - g[u] ** 2)
                    da[3 * H + u] = dh[u] * math.tanh(c_t[u]) * o[u] * (1 - o[u])
                grads["Wx"] += np.outer(da, x)
                grads["Wh"] += np.outer(da, h_prev)
                grads["bx"] += da
                grads["bh"] += da
                grads["xs"][t] = Wx.T @ da
                dh_next, dc_next = Wh.T @ da, dc * f
            grads["h0"], grads["c0"] = dh_next, dc_next
            return grads
    """,
    "gru_bptt": """
        import numpy as np
        def gru_bptt(params, xs, dhs, h0=None, convention="paper"):
            Wx, Wh, bx, bh = params["Wx"], params["Wh"], params["bx"], params["bh"]
            H = Wh.shape[1]
            R, Z, N = slice(0, H), slice(H, 2 * H), slice(2 * H, 3 * H)
            sig = lambda v: 1.0 / (1.0 + np.exp(-v))
            h = np.zeros(H) if h0 is None else np.array(h0, dtype=float)
            steps = []
            for x in xs:
                r = sig(Wx[R] @ x + bx[R] + Wh[R] @ h + bh[R])
                z = sig(Wx[Z] @ x + bx[Z] + Wh[Z] @ h + bh[Z])
                n = np.tanh(Wx[N] @ x + bx[N] + Wh[N] @ (r * h) + bh[N])
                steps.append((x, h, r, z, n))
                h = z * h + (1 - z) * n
            grads = {k: np.zeros_like(params[k], dtype=float) for k in ("Wx", "Wh", "bx", "bh")}
            grads["xs"] = np.zeros((len(xs), Wx.shape[1]))
            dh_next = np.zeros(H)
            for t in range(len(xs) - 1, -1, -1):
                x, h_prev, r, z, n = steps[t]
                dh = dhs[t] + dh_next
                dan = dh * (1 - z) * (1 - n ** 2)
                daz = dh * (h_prev - n) * z * (1 - z)
                d_reset = Wh[N].T @ dan                   # gradient of r * h_prev
                dar = d_reset * h_prev * r * (1 - r)
                for rows, da, h_in in ((R, dar, h_prev), (Z, daz, h_prev), (N, dan, r * h_prev)):
                    grads["Wx"][rows] += np.outer(da, x)
                    grads["Wh"][rows] += np.outer(da, h_in)
                    grads["bx"][rows] += da
                    grads["bh"][rows] += da
                grads["xs"][t] = Wx[R].T @ dar + Wx[Z].T @ daz + Wx[N].T @ dan
                dh_next = dh * z + d_reset * r + Wh[R].T @ dar + Wh[Z].T @ daz
            grads["h0"] = dh_next
            return grads
    """,
    "attention_backward": """
        import math
        import numpy as np
        def attention_backward(q, keys, values, d_output, mask=None):
            n, d = q.shape
            m = keys.shape[0]
            visible = np.ones((n, m), bool) if mask is None else np.broadcast_to(mask, (n, m))
            dq, dk, dv = np.zeros(q.shape), np.zeros(keys.shape), np.zeros(values.shape)
            for i in range(n):
                scores = [float(q[i] @ keys[j]) / math.sqrt(d) for j in range(m)]
                seen = [j for j in range(m) if visible[i, j]]
                p = [0.0] * m
                if seen:
                    top = max(scores[j] for j in seen)
                    total = sum(math.exp(scores[j] - top) for j in seen)
                    for j in seen:
                        p[j] = math.exp(scores[j] - top) / total
                dp = [float(d_output[i] @ values[j]) for j in range(m)]
                mean = sum(p[j] * dp[j] for j in range(m))
                for j in range(m):
                    ds = p[j] * (dp[j] - mean) / math.sqrt(d)
                    dv[j] += p[j] * d_output[i]
                    dq[i] += ds * keys[j]
                    dk[j] += ds * q[i]
            return {"q": dq, "keys": dk, "values": dv}
    """,
    "multihead_attention": """
        import math
        import numpy as np
        def multihead_attention(x_q, x_kv, params, num_heads, mask=None):
            Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]
            n, m, d_model = Q.shape[0], K.shape[0], Q.shape[1]
            w = d_model // num_heads
            visible = np.ones((n, m), bool) if mask is None else np.broadcast_to(mask, (n, m))
            concat = np.zeros((n, d_model))
            for h in range(num_heads):
                cols = slice(h * w, (h + 1) * w)
                for i in range(n):
                    seen = [j for j in range(m) if visible[i, j]]
                    if not seen:
                        continue
                    scores = [float(Q[i, cols] @ K[j, cols]) / math.sqrt(w) for j in seen]
                    top = max(scores)
                    e = [math.exp(s - top) for s in scores]
                    for j, ej in zip(seen, e):
                        concat[i, cols] += ej / sum(e) * V[j, cols]
            return {"concat": concat, "output": concat @ params["Wo"]}
    """,
    "train_bpe": r'''
        import collections
        import regex
        PATTERN = regex.compile(r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
        def train_bpe(input_path, vocab_size, special_tokens):
            text = open(input_path, encoding="utf-8").read()
            pieces = [text]
            for special in special_tokens:                 # never count across a special token
                pieces = [part for piece in pieces for part in piece.split(special)]
            words = collections.Counter()
            for piece in pieces:
                for token in PATTERN.findall(piece):
                    words[tuple(bytes([c]) for c in token.encode("utf-8"))] += 1
            vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
            for c in range(256):
                vocab[len(vocab)] = bytes([c])
            merges = []
            while len(vocab) < vocab_size:
                pairs = collections.Counter()
                for word, count in words.items():
                    for a, b in zip(word, word[1:]):
                        pairs[a, b] += count
                if not pairs:
                    break
                best = max(pairs, key=lambda p: (pairs[p], p))
                merges.append(best)
                vocab[len(vocab)] = best[0] + best[1]
                merged = collections.Counter()
                for word, count in words.items():
                    out, k = [], 0
                    while k < len(word):
                        if k + 1 < len(word) and (word[k], word[k + 1]) == best:
                            out.append(word[k] + word[k + 1])
                            k += 2
                        else:
                            out.append(word[k])
                            k += 1
                    merged[tuple(out)] += count
                words = merged
            return vocab, merges
    ''',
})


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
        log_total = np.log(probs.sum(axis=1))
        probs /= probs.sum(axis=1, keepdims=True)
        rows = np.arange(T)
        loss = -(shifted[rows, targets] - log_total).sum() / n
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
    from rnn_bptt import rnn_bptt                       # the student's own earlier files, beside this one
    from rnn_forward import rnn_forward
    from softmax_cross_entropy import softmax_cross_entropy
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


# --- lstm_cell_forward ---------------------------------------------------------------------------------------
_LSTM = """
    import numpy as np
    def lstm_cell_forward(params, x, h_prev, c_prev):
        pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]
        a_i, a_f, a_g, a_o = np.split(pre, 4)
        sig = lambda v: 1 / (1 + np.exp(-v))
        i, f, g, o = sig(a_i), sig(a_f), np.tanh(a_g), sig(a_o)
        c = f * c_prev + i * g
        h = o * np.tanh(c)
        return h, c, (x, h_prev, c_prev, i, f, g, o, c)
"""
_LSTM_EINSUM = """
    import numpy as np
    def lstm_cell_forward(params, x, h_prev, c_prev):
        H = len(h_prev)
        pre = np.einsum("rd,d->r", params["Wx"], x) + np.einsum("rk,k->r", params["Wh"], h_prev) + params["bx"] + params["bh"]
        gates = pre.reshape(4, H)                        # one row per gate: i, f, g, o
        i, f, o = 0.5 * (1 + np.tanh(0.5 * gates[[0, 1, 3]]))   # sigmoid written through tanh
        g = np.tanh(gates[2])
        c = f * c_prev + i * g
        return (o * np.tanh(c)).astype(np.float64), c.astype(np.float64), {"i": i, "f": f, "g": g, "o": o}
"""
CORRECT["lstm_cell_forward"] = {"split": _LSTM, "einsum": _LSTM_EINSUM}
WRONG["lstm_cell_forward"] = [
    ("CS231n's order", "gate_order_ifog", edit(_LSTM, ("a_i, a_f, a_g, a_o = np.split(pre, 4)", "a_i, a_f, a_o, a_g = np.split(pre, 4)"))),
    ("TensorFlow 1's LSTMCell order", "gate_order_igfo", edit(_LSTM, ("a_i, a_f, a_g, a_o = np.split(pre, 4)", "a_i, a_g, a_f, a_o = np.split(pre, 4)"))),
    ("h without tanh", "h_without_tanh", edit(_LSTM, ("h = o * np.tanh(c)", "h = o * c"))),
    ("f and i swapped", "gates_swapped", edit(_LSTM_EINSUM, ("c = f * c_prev + i * g", "c = i * c_prev + f * g"))),
    ("one bias", "bh_missing", edit(_LSTM, ('pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev + params["bh"]',
                                           'pre = params["Wx"] @ x + params["bx"] + params["Wh"] @ h_prev'))),
    ("H taken from x", "square_only", edit(_LSTM_EINSUM, ("H = len(h_prev)", "H = len(x)"))),
    ("state made like x", "not_float64", """
        import math
        import numpy as np
        def lstm_cell_forward(params, x, h_prev, c_prev):
            H = len(h_prev)
            h, c = np.zeros(H, dtype=x.dtype), np.zeros(H, dtype=x.dtype)
            for u in range(H):
                a = [params["Wx"][k * H + u] @ x + params["bx"][k * H + u] + params["Wh"][k * H + u] @ h_prev
                     + params["bh"][k * H + u] for k in range(4)]
                sig = [1 / (1 + math.exp(-v)) for v in a]
                c[u] = sig[1] * c_prev[u] + sig[0] * math.tanh(a[2])
                h[u] = sig[3] * math.tanh(c[u])
            return h, c, None
    """),
    ("the cell state updated in place", "inputs_changed_in_place", edit(
        _LSTM, ("c = f * c_prev + i * g", "c_prev *= f\nc_prev += i * g\nc = c_prev.copy()"))),
    ("c returned as cache", "output_form", edit(_LSTM, ("return h, c, (x, h_prev, c_prev, i, f, g, o, c)", "return h, (x, h_prev, c_prev, i, f, g, o, c)"))),
]


# --- lstm_bptt ---------------------------------------------------------------------------------------------------
_LSTMB = LOOPS["lstm_bptt"]
_LSTMB_STACKED = """
    import numpy as np
    def lstm_bptt(params, xs, dhs, h0=None, c0=None, dcs=None):
        # the forward pass keeps every step's gates in arrays; the weight gradients are one product each
        xs, dhs = np.array(xs, dtype=np.float64), np.asarray(dhs, dtype=np.float64)
        T, H = len(xs), params["Wh"].shape[1]
        hs, cs = np.zeros((T + 1, H)), np.zeros((T + 1, H))
        if h0 is not None:
            hs[0] = h0
        if c0 is not None:
            cs[0] = c0
        gates = np.zeros((T, 4, H))
        for t in range(T):
            a = (params["Wx"] @ xs[t] + params["bx"] + params["Wh"] @ hs[t] + params["bh"]).reshape(4, H)
            gates[t] = 1 / (1 + np.exp(-a))
            gates[t, 2] = np.tanh(a[2])
            i, f, g, o = gates[t]
            cs[t + 1] = f * cs[t] + i * g
            hs[t + 1] = o * np.tanh(cs[t + 1])
        da = np.zeros((T, 4, H))
        dh_next, dc_next = np.zeros(H), np.zeros(H)
        extra = np.zeros((T, H)) if dcs is None else np.asarray(dcs, dtype=np.float64)
        for t in reversed(range(T)):
            i, f, g, o = gates[t]
            tc = np.tanh(cs[t + 1])
            dh = dhs[t] + dh_next
            dc = dc_next + extra[t] + dh * o * (1 - tc * tc)
            da[t] = [dc * g * i * (1 - i), dc * cs[t] * f * (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)]
            flat = da[t].reshape(-1)
            dh_next, dc_next = params["Wh"].T @ flat, dc * f
        flat = da.reshape(T, 4 * H)
        return {"Wx": flat.T @ xs, "Wh": flat.T @ hs[:-1], "bx": flat.sum(0), "bh": flat.sum(0),
                "xs": flat @ params["Wx"], "h0": dh_next, "c0": dc_next}
"""
CORRECT["lstm_bptt"] = {"stacked arrays": _LSTMB_STACKED}
WRONG["lstm_bptt"] = [
    ("no cell path", "no_cell_gradient_from_future", edit(_LSTMB, ("dh_next, dc_next = Wh.T @ da, dc * f", "dh_next, dc_next = Wh.T @ da, 0.0 * dc"))),
    ("no hidden path", "no_future_gradient", edit(_LSTMB_STACKED, ("dh = dhs[t] + dh_next", "dh = dhs[t]"))),
    ("no tanh' on the way to c", "tanh_derivative_of_cell_missing", edit(_LSTMB, ("dh * o * (1 - np.tanh(c_t) ** 2)", "dh * o"))),
    ("weights overwritten", "weights_not_summed", edit(
        _LSTMB, ('grads["Wx"] += np.outer(da, x)', 'grads["Wx"] = np.outer(da, x)'), ('grads["Wh"] += np.outer(da, h_prev)', 'grads["Wh"] = np.outer(da, h_prev)'),
        ('grads["bx"] += da', 'grads["bx"] = da'), ('grads["bh"] += da', 'grads["bh"] = da'))),
    ("weights from the last step", "weights_not_summed", edit(
        _LSTMB_STACKED, ('return {"Wx": flat.T @ xs, "Wh": flat.T @ hs[:-1], "bx": flat.sum(0), "bh": flat.sum(0),',
                         'return {"Wx": np.outer(flat[-1], xs[-1]), "Wh": np.outer(flat[-1], hs[-2]), "bx": flat[-1], "bh": flat[-1],'))),
    ("dcs not read", "dcs_ignored", edit(_LSTMB, (" + (0.0 if dcs is None else dcs[t])", ""))),
    ("states copied without a None check", "states_none_not_handled", edit(
        _LSTMB, ("h = np.zeros(H) if h0 is None else np.array(h0, dtype=float)", "h = np.array(h0, dtype=float)"),
        ("c = np.zeros(H) if c0 is None else np.array(c0, dtype=float)", "c = np.array(c0, dtype=float)"))),
    ("H taken from xs", "square_only", edit(_LSTMB_STACKED, ("T, H = len(xs), params[\"Wh\"].shape[1]", "T, H = xs.shape"))),
    ("dxs like xs", "not_float64", edit(_LSTMB, ('grads["xs"] = np.zeros((len(xs), Wx.shape[1]))', 'grads["xs"] = np.zeros_like(xs)'))),
    ("dhs accumulated in place", "inputs_changed_in_place", edit(_LSTMB, ("dh = dhs[t] + dh_next", "dhs[t] += dh_next\ndh = dhs[t]"))),
]


# --- gru_cell_forward -----------------------------------------------------------------------------------------------
_GRU = """
    import numpy as np
    def gru_cell_forward(params, x, h_prev, convention="paper"):
        H = len(h_prev)
        Wx, Wh, bx, bh = params["Wx"], params["Wh"], params["bx"], params["bh"]
        sig = lambda v: 1 / (1 + np.exp(-v))
        r = sig(Wx[:H] @ x + bx[:H] + Wh[:H] @ h_prev + bh[:H])
        z = sig(Wx[H:2 * H] @ x + bx[H:2 * H] + Wh[H:2 * H] @ h_prev + bh[H:2 * H])
        n = np.tanh(Wx[2 * H:] @ x + bx[2 * H:] + Wh[2 * H:] @ (r * h_prev) + bh[2 * H:])
        h = z * h_prev + (1 - z) * n
        return h, {"r": r, "z": z, "n": n}
"""
_GRU_BLOCKS = """
    import numpy as np
    def gru_cell_forward(params, x, h_prev, convention="paper"):
        H = len(h_prev)
        blocks = lambda W: W.reshape(3, H, -1) if W.ndim == 2 else W.reshape(3, H)
        Wx, Wh, bx, bh = (blocks(params[k]) for k in ("Wx", "Wh", "bx", "bh"))
        r, z = (1 / (1 + np.exp(-(Wx[k] @ x + bx[k] + Wh[k] @ h_prev + bh[k]))) for k in (0, 1))
        n = np.tanh(Wx[2] @ x + bx[2] + Wh[2] @ (r * h_prev) + bh[2])
        return n + z * (h_prev - n), None                 # z h_prev + (1 - z) n, rearranged
"""
CORRECT["gru_cell_forward"] = {"slices": _GRU, "blocks": _GRU_BLOCKS}
WRONG["gru_cell_forward"] = [
    ("z for the new state", "update_gate_other_convention", edit(_GRU, ("h = z * h_prev + (1 - z) * n", "h = (1 - z) * h_prev + z * n"))),
    ("PyTorch's reset", "reset_after_matmul", edit(_GRU, ("Wh[2 * H:] @ (r * h_prev) + bh[2 * H:]", "r * (Wh[2 * H:] @ h_prev + bh[2 * H:])"))),
    ("z read first", "gate_order_zrn", edit(_GRU_BLOCKS, ("for k in (0, 1))", "for k in (1, 0))"))),
    ("H taken from x", "square_only", edit(_GRU, ("H = len(h_prev)", "H = len(x)"))),
    ("h made like x", "not_float64", edit(_GRU, ("h = z * h_prev + (1 - z) * n", "h = (z * h_prev + (1 - z) * n).astype(x.dtype)"))),
    ("h_prev reset in place", "inputs_changed_in_place", edit(_GRU, ("n = np.tanh(Wx[2 * H:] @ x + bx[2 * H:] + Wh[2 * H:] @ (r * h_prev) + bh[2 * H:])\nh = z * h_prev + (1 - z) * n",
                                                                      "old = h_prev.copy()\nh_prev *= r\nn = np.tanh(Wx[2 * H:] @ x + bx[2 * H:] + Wh[2 * H:] @ h_prev + bh[2 * H:])\nh = z * old + (1 - z) * n"))),
    ("h alone, no cache", "output_form", edit(_GRU, ('return h, {"r": r, "z": z, "n": n}', "return h"))),
]


# --- gru_bptt ------------------------------------------------------------------------------------------------------
_GRUB = LOOPS["gru_bptt"]
CORRECT["gru_bptt"] = {"stacked gates": """
    import numpy as np
    def gru_bptt(params, xs, dhs, h0=None, convention="paper"):
        xs = np.array(xs, dtype=np.float64)
        T, H = len(xs), params["Wh"].shape[1]
        Wx, Wh, bx, bh = params["Wx"], params["Wh"], params["bx"], params["bh"]
        hs = np.zeros((T + 1, H))
        hs[0] = 0.0 if h0 is None else h0
        r, z, n = np.zeros((T, H)), np.zeros((T, H)), np.zeros((T, H))
        for t in range(T):
            ax, ah = Wx @ xs[t] + bx, Wh[:2 * H] @ hs[t] + bh[:2 * H]
            r[t], z[t] = np.split(1 / (1 + np.exp(-(ax[:2 * H] + ah))), 2)
            n[t] = np.tanh(ax[2 * H:] + Wh[2 * H:] @ (r[t] * hs[t]) + bh[2 * H:])
            hs[t + 1] = z[t] * hs[t] + (1 - z[t]) * n[t]
        dax, dah = np.zeros((T, 3 * H)), np.zeros((T, 3 * H))   # pre-activation grads: input side, hidden side
        dh_next = np.zeros(H)
        for t in reversed(range(T)):
            dh = dhs[t] + dh_next
            dn = dh * (1 - z[t]) * (1 - n[t] ** 2)
            dz = dh * (hs[t] - n[t]) * z[t] * (1 - z[t])
            d_rh = Wh[2 * H:].T @ dn
            dr = d_rh * hs[t] * r[t] * (1 - r[t])
            dax[t] = np.concatenate([dr, dz, dn])
            dah[t] = dax[t]
            dh_next = dh * z[t] + d_rh * r[t] + Wh[:2 * H].T @ np.concatenate([dr, dz])
        inputs_h = np.concatenate([hs[:-1], hs[:-1], r * hs[:-1]], axis=1).reshape(T, 3, H)
        dWh = np.einsum("tgh,tgk->ghk", dah.reshape(T, 3, H), inputs_h).reshape(3 * H, H)
        return {"Wx": dax.T @ xs, "Wh": dWh, "bx": dax.sum(0), "bh": dah.sum(0), "xs": dax @ Wx, "h0": dh_next}
"""}
WRONG["gru_bptt"] = [
    ("z for the new state", "update_gate_other_convention", edit(
        _GRUB, ("h = z * h + (1 - z) * n", "h = (1 - z) * h + z * n"),
        ("dan = dh * (1 - z) * (1 - n ** 2)", "dan = dh * z * (1 - n ** 2)"),
        ("daz = dh * (h_prev - n) * z * (1 - z)", "daz = dh * (n - h_prev) * z * (1 - z)"),
        ("dh_next = dh * z + d_reset * r", "dh_next = dh * (1 - z) + d_reset * r"))),
    ("no future term", "no_future_gradient", edit(_GRUB, ("dh = dhs[t] + dh_next", "dh = dhs[t]"))),
    ("no path through r * h_prev", "reset_path_missing", edit(_GRUB, ("dh_next = dh * z + d_reset * r + ", "dh_next = dh * z + "))),
    ("weights overwritten", "weights_not_summed", edit(
        _GRUB, ('grads["Wx"][rows] += np.outer(da, x)', 'grads["Wx"][rows] = np.outer(da, x)'),
        ('grads["Wh"][rows] += np.outer(da, h_in)', 'grads["Wh"][rows] = np.outer(da, h_in)'),
        ('grads["bx"][rows] += da', 'grads["bx"][rows] = da'), ('grads["bh"][rows] += da', 'grads["bh"][rows] = da'))),
    ("h0 copied without a None check", "h0_none_not_handled", edit(_GRUB, ("h = np.zeros(H) if h0 is None else np.array(h0, dtype=float)", "h = np.array(h0, dtype=float)"))),
    ("dWx made like Wh", "square_only", edit(_GRUB, ('grads = {k: np.zeros_like(params[k], dtype=float) for k in ("Wx", "Wh", "bx", "bh")}',
                                                     'grads = {k: np.zeros_like(params["Wh" if k == "Wx" else k], dtype=float) for k in ("Wx", "Wh", "bx", "bh")}'))),
    ("dxs like xs", "not_float64", edit(_GRUB, ('grads["xs"] = np.zeros((len(xs), Wx.shape[1]))', 'grads["xs"] = np.zeros_like(xs)'))),
    ("dhs accumulated in place", "inputs_changed_in_place", edit(_GRUB, ("dh = dhs[t] + dh_next", "dhs[t] += dh_next\ndh = dhs[t]"))),
]


# --- causal_mask ---------------------------------------------------------------------------------------------------
_MASK = """
    import numpy as np
    def causal_mask(n):
        i = np.arange(n)
        return i[None, :] <= i[:, None]
"""
CORRECT["causal_mask"] = {"comparison": _MASK, "tri": """
    import numpy as np
    def causal_mask(n):
        return np.tri(n, n, dtype=bool)
"""}
WRONG["causal_mask"] = [
    ("strict inequality", "current_position_excluded", edit(_MASK, ("i[None, :] <= i[:, None]", "i[None, :] < i[:, None]"))),
    ("one step ahead", "one_future_position_included", edit(_MASK, ("i[None, :] <= i[:, None]", "i[None, :] <= i[:, None] + 1"))),
    ("upper triangle", "transposed", edit(_MASK, ("i[None, :] <= i[:, None]", "i[:, None] <= i[None, :]"))),
    ("ones and zeros", "numbers_not_bool", """
        import numpy as np
        def causal_mask(n):
            return np.tril(np.ones((n, n)))
    """),
    ("cut from a fixed table", "fixed_size", """
        import numpy as np
        TABLE = np.tril(np.ones((8, 8), dtype=bool))
        def causal_mask(n):
            return TABLE[:n, :n] if n > 1 else np.zeros((n, n), dtype=bool)
    """),
]


# --- attention ---------------------------------------------------------------------------------------------------
_ATT = """
    import numpy as np
    def attention(q, keys, values, mask=None):
        single = np.ndim(q) == 1
        Q = np.atleast_2d(np.asarray(q, dtype=np.float64))
        K = np.asarray(keys, dtype=np.float64)
        V = np.asarray(values, dtype=np.float64)
        scores = Q @ K.T / np.sqrt(Q.shape[1])
        visible = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), scores.shape)
        s = np.where(visible, scores, -np.inf)
        top = s.max(axis=1, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(s - top)
        total = e.sum(axis=1, keepdims=True)
        weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        output = weights @ V
        empty = [int(r) for r in np.flatnonzero(~visible.any(axis=1))]
        if single:
            out = output[0]
            return {"scores": scores[0], "weights": weights[0], "output": float(out) if out.ndim == 0 else out,
                    "fully_masked_rows": empty}
        return {"scores": scores, "weights": weights, "output": output, "fully_masked_rows": empty}
"""
_ATT_EINSUM = """
    import numpy as np
    def attention(q, keys, values, mask=None):
        # einsum, masked scores returned as -inf (the stub allows it), a row at a time for the softmax
        q2 = np.array(q, dtype=np.float64, ndmin=2)
        scores = np.einsum("nd,md->nm", q2, np.asarray(keys, dtype=np.float64)) / np.sqrt(q2.shape[-1])
        if mask is not None:
            scores = np.where(np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape), scores, -np.inf)
        weights = np.zeros_like(scores)
        empty = []
        for r, row in enumerate(scores):
            if np.isneginf(row).all():
                empty.append(r)
                continue
            e = np.exp(row - row.max())
            weights[r] = e / e.sum()
        out = np.tensordot(weights, np.asarray(values, dtype=np.float64), axes=(1, 0))
        if np.ndim(q) == 1:
            return {"scores": scores[0], "weights": weights[0], "output": out[0] if np.ndim(out[0]) else float(out[0]),
                    "fully_masked_rows": empty}
        return {"scores": scores, "weights": weights, "output": out, "fully_masked_rows": empty}
"""
CORRECT["attention"] = {"vectorised": _ATT, "einsum with -inf scores": _ATT_EINSUM}
WRONG["attention"] = [
    ("softmax down the columns", "softmax_over_queries", edit(
        _ATT, ("top = s.max(axis=1, keepdims=True)", "top = s.max(axis=0, keepdims=True)"),
        ("total = e.sum(axis=1, keepdims=True)", "total = e.sum(axis=0, keepdims=True)"))),
    ("no scale", "missing_scale", edit(_ATT, ("scores = Q @ K.T / np.sqrt(Q.shape[1])", "scores = Q @ K.T"))),
    ("divided by d", "divided_by_d", edit(_ATT_EINSUM, ("/ np.sqrt(q2.shape[-1])", "/ q2.shape[-1]"))),
    ("mask after the softmax", "mask_after_softmax", edit(
        _ATT, ("s = np.where(visible, scores, -np.inf)", "s = scores"),
        ("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)",
         "weights = np.where(visible, e / total, 0.0)"))),
    ("True read as masked", "mask_inverted", edit(_ATT, ("s = np.where(visible, scores, -np.inf)", "s = np.where(visible, -np.inf, scores)"),
                                                  ("empty = [int(r) for r in np.flatnonzero(~visible.any(axis=1))]",
                                                   "empty = [int(r) for r in np.flatnonzero(visible.all(axis=1))]"))),
    ("mask never used", "mask_ignored", edit(_ATT, ("s = np.where(visible, scores, -np.inf)", "s = scores"))),
    ("0 / 0 on empty rows", "nan_for_fully_masked_rows", edit(
        _ATT, ("top = np.where(np.isfinite(top), top, 0.0)\n", ""),
        ("weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)", "weights = e / total"))),
    ("-1e9 for masked scores", "finite_mask_fill", edit(_ATT, ("s = np.where(visible, scores, -np.inf)", "s = np.where(visible, scores, -1e9)"))),
    ("empty rows not listed", "fully_masked_rows_not_listed", edit(_ATT, ("empty = [int(r) for r in np.flatnonzero(~visible.any(axis=1))]", "empty = []"))),
    ("no shift before exp", "max_not_subtracted", edit(_ATT_EINSUM, ("e = np.exp(row - row.max())", "e = np.exp(row)"))),
    ("mask indexed per query", "key_mask_not_broadcast", edit(
        _ATT_EINSUM, ("scores = np.where(np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape), scores, -np.inf)",
                      "scores = np.array([np.where(mask[r], row, -np.inf) for r, row in enumerate(scores)])"))),
    ("always 2-D", "one_query_not_handled", edit(
        _ATT, ('if single:\n    out = output[0]\n    return {"scores": scores[0], "weights": weights[0], "output": float(out) if out.ndim == 0 else out,\n            "fully_masked_rows": empty}\n', ""))),
    ("keys not transposed", "square_only", edit(_ATT, ("scores = Q @ K.T / np.sqrt(Q.shape[1])", "scores = Q @ K / np.sqrt(Q.shape[1])"))),
    ("cast back to the inputs' dtype", "not_float64", edit(
        _ATT, ("output = weights @ V", "dtype = np.result_type(q, keys, values)\nscores, weights, output = (a.astype(dtype) for a in (scores, weights, weights @ V))"))),
    ("queries scaled in place", "inputs_changed_in_place", edit(
        _ATT, ("Q = np.atleast_2d(np.asarray(q, dtype=np.float64))", "Q = np.atleast_2d(np.asarray(q, dtype=np.float64))\nQ /= np.sqrt(Q.shape[1])"),
        ("scores = Q @ K.T / np.sqrt(Q.shape[1])", "scores = Q @ K.T"))),
    ("weights and output only", "output_form", edit(_ATT_EINSUM, ('return {"scores": scores, "weights": weights, "output": out, "fully_masked_rows": empty}',
                                                                 'return {"weights": weights, "output": out}'))),
]


# --- attention_backward ------------------------------------------------------------------------------------------
_ATTB = """
    import numpy as np
    def attention_backward(q, keys, values, d_output, mask=None):
        Q, K, V, dO = (np.asarray(a, dtype=np.float64) for a in (q, keys, values, d_output))
        s = 1 / np.sqrt(Q.shape[1])
        scores = Q @ K.T * s
        visible = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
        masked = np.where(visible, scores, -np.inf)
        top = masked.max(axis=1, keepdims=True)
        e = np.where(visible, np.exp(masked - np.where(np.isfinite(top), top, 0)), 0.0)
        total = e.sum(axis=1, keepdims=True)
        P = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        dP = dO @ V.T
        dS = P * (dP - (dP * P).sum(axis=1, keepdims=True))
        return {"q": dS @ K * s, "keys": dS.T @ Q * s, "values": P.T @ dO}
"""
_ATTB_EINSUM = """
    import numpy as np
    def attention_backward(q, keys, values, d_output, mask=None):
        # the softmax Jacobian built per row, einsum for the products
        q, keys, values, d_output = (np.array(a, dtype=np.float64) for a in (q, keys, values, d_output))
        n, d = q.shape
        scale = d ** -0.5
        scores = np.einsum("nd,md->nm", q, keys) * scale
        allowed = np.ones_like(scores, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), scores.shape)
        P = np.zeros_like(scores)
        for r in range(n):
            if allowed[r].any():
                z = np.exp(scores[r][allowed[r]] - scores[r][allowed[r]].max())
                P[r, allowed[r]] = z / z.sum()
        dP = np.einsum("nv,mv->nm", d_output, values)
        dS = np.stack([(np.diag(P[r]) - np.outer(P[r], P[r])) @ dP[r] for r in range(n)]) if n else dP
        return {"q": np.einsum("nm,md->nd", dS, keys) * scale, "keys": np.einsum("nm,nd->md", dS, q) * scale,
                "values": np.einsum("nm,nv->mv", P, d_output)}
"""
CORRECT["attention_backward"] = {"vectorised": _ATTB, "jacobian": _ATTB_EINSUM}
WRONG["attention_backward"] = [
    ("no scale on dq and dk", "missing_scale", edit(_ATTB, ('return {"q": dS @ K * s, "keys": dS.T @ Q * s, "values": P.T @ dO}',
                                                           'return {"q": dS @ K, "keys": dS.T @ Q, "values": P.T @ dO}'))),
    ("scale twice", "scaled_twice", edit(_ATTB, ("dS = P * (dP - (dP * P).sum(axis=1, keepdims=True))",
                                                 "dS = P * (dP - (dP * P).sum(axis=1, keepdims=True)) * s"))),
    ("only the diagonal of the Jacobian", "softmax_jacobian_diagonal_only", edit(
        _ATTB_EINSUM, ("(np.diag(P[r]) - np.outer(P[r], P[r])) @ dP[r]", "np.diag(P[r]) @ dP[r]"))),
    ("dV = P dO", "values_gradient_not_transposed", edit(_ATTB, ('"values": P.T @ dO}', '"values": P @ dO}'))),
    ("mask not used", "mask_ignored", edit(_ATTB, ("visible = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)",
                                                   "visible = np.ones(scores.shape, bool)"))),
    ("0 / 0 on empty rows", "nan_for_fully_masked_rows", edit(_ATTB, ("P = np.divide(e, total, out=np.zeros_like(e), where=total > 0)", "P = e / total"))),
    ("a tuple of gradients", "output_form", edit(_ATTB, ('return {"q": dS @ K * s, "keys": dS.T @ Q * s, "values": P.T @ dO}',
                                                          'return dS @ K * s, dS.T @ Q * s, P.T @ dO'))),
    ("n used for m", "square_only", edit(_ATTB_EINSUM, ("P = np.zeros_like(scores)", "P = np.zeros((n, n))"),
                                         ("P[r, allowed[r]] = z / z.sum()", "P[r, :len(z)][allowed[r][:n]] = (z / z.sum())[:n]"))),
    ("cast back to the inputs' dtypes", "not_float64", edit(
        _ATTB, ('return {"q": dS @ K * s, "keys": dS.T @ Q * s, "values": P.T @ dO}',
                'return {"q": (dS @ K * s).astype(q.dtype), "keys": (dS.T @ Q * s).astype(keys.dtype), "values": (P.T @ dO).astype(values.dtype)}'))),
    ("d_output reused as a buffer", "inputs_changed_in_place", edit(
        _ATTB, ("Q, K, V, dO = (np.asarray(a, dtype=np.float64) for a in (q, keys, values, d_output))",
                "Q, K, V, dO = (np.asarray(a, dtype=np.float64) for a in (q, keys, values, d_output))\nd_out_copy = dO.copy()"),
        ('return {"q": dS @ K * s, "keys": dS.T @ Q * s, "values": P.T @ dO}',
         'dO *= 0.0\nreturn {"q": dS @ K * s, "keys": dS.T @ Q * s, "values": P.T @ d_out_copy}'))),
]


# --- multihead_attention ----------------------------------------------------------------------------------------------
_MHA = """
    import numpy as np
    def multihead_attention(x_q, x_kv, params, num_heads, mask=None):
        Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]
        n, m, d_model = Q.shape[0], K.shape[0], Q.shape[1]
        w = d_model // num_heads
        split = lambda X: X.reshape(len(X), num_heads, w).transpose(1, 0, 2)     # (heads, rows, w)
        q, k, v = split(Q), split(K), split(V)
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(w)
        if mask is not None:
            scores = np.where(np.broadcast_to(mask, (n, m)), scores, -np.inf)
        top = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        weights = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        heads = weights @ v
        concat = heads.transpose(1, 0, 2).reshape(n, d_model).astype(np.float64)
        return {"concat": concat, "output": concat @ params["Wo"]}
"""
CORRECT["multihead_attention"] = {"reshaped": _MHA, "per head with their own attention": """
    import numpy as np
    from attention import attention                     # the student's own attention.py
    def multihead_attention(x_q, x_kv, params, num_heads, mask=None):
        x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
        Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]
        blocks = lambda X: np.split(X, num_heads, axis=1)
        outs = [attention(q, k, v, mask)["output"] for q, k, v in zip(blocks(Q), blocks(K), blocks(V))]
        concat = np.hstack(outs)
        return {"concat": concat, "output": np.einsum("nd,de->ne", concat, params["Wo"])}
"""}
WRONG["multihead_attention"] = [
    ("heads as strided columns", "heads_split_interleaved", edit(_MHA, ("split = lambda X: X.reshape(len(X), num_heads, w).transpose(1, 0, 2)",
                                                                      "split = lambda X: X.reshape(len(X), w, num_heads).transpose(2, 0, 1)"),
                                                                 ("concat = heads.transpose(1, 0, 2).reshape(n, d_model).astype(np.float64)",
                                                                  "concat = heads.transpose(1, 2, 0).reshape(n, d_model).astype(np.float64)"))),
    ("scaled by d_model", "scaled_by_d_model", edit(_MHA, ("scores = q @ k.transpose(0, 2, 1) / np.sqrt(w)", "scores = q @ k.transpose(0, 2, 1) / np.sqrt(d_model)"))),
    ("heads stacked last first", "heads_reversed", edit(_MHA, ("concat = heads.transpose(1, 0, 2)", "concat = heads[::-1].transpose(1, 0, 2)"))),
    ("no Wo", "no_output_projection", edit(_MHA, ('return {"concat": concat, "output": concat @ params["Wo"]}', 'return {"concat": concat, "output": concat}'))),
    ("keys from x_q", "keys_from_queries", edit(_MHA, ('Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]',
                                                       'Q, K, V = x_q @ params["Wq"], x_q @ params["Wk"], x_q @ params["Wv"]'))),
    ("mask not passed on", "mask_ignored", edit(_MHA, ("if mask is not None:\n    scores = np.where(np.broadcast_to(mask, (n, m)), scores, -np.inf)", "pass"))),
    ("made like x", "not_float64", edit(_MHA, ("concat = heads.transpose(1, 0, 2).reshape(n, d_model).astype(np.float64)",
                                               "concat = heads.transpose(1, 0, 2).reshape(n, d_model).astype(x_q.dtype)"),
                                        ('return {"concat": concat, "output": concat @ params["Wo"]}',
                                         'return {"concat": concat, "output": (concat @ params["Wo"]).astype(x_q.dtype)}'))),
    ("projections into x_q's buffer", "inputs_changed_in_place", edit(
        _MHA, ('Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]',
               'K, V = x_kv @ params["Wk"], x_kv @ params["Wv"]\nQ = x_q\nQ[:] = x_q @ params["Wq"]'))),
    ("output without concat", "output_form", edit(_MHA, ('return {"concat": concat, "output": concat @ params["Wo"]}', 'return concat @ params["Wo"]'))),
]


# --- choose_merge ------------------------------------------------------------------------------------------------
_CHOOSE = """
    def choose_merge(pair_counts, token_bytes):
        return max(pair_counts, key=lambda p: (pair_counts[p], token_bytes[p[0]], token_bytes[p[1]]))
"""
CORRECT["choose_merge"] = {"max with a key": _CHOOSE, "sorted": """
    def choose_merge(pair_counts, token_bytes):
        # highest count first, then the greatest (left, right) bytes: sort descending and take the head
        ranked = sorted(pair_counts.items(), key=lambda item: (item[1], bytes(token_bytes[item[0][0]]),
                                                              bytes(token_bytes[item[0][1]])), reverse=True)
        left, right = ranked[0][0]
        return int(left), int(right)
"""}
WRONG["choose_merge"] = [
    ("the smaller pair", "tie_to_smaller_pair", """
        def choose_merge(pair_counts, token_bytes):
            top = max(pair_counts.values())
            tied = [p for p, c in pair_counts.items() if c == top]
            return min(tied, key=lambda p: (token_bytes[p[0]], token_bytes[p[1]]))
    """),
    ("first seen", "tie_to_first_counted", """
        def choose_merge(pair_counts, token_bytes):
            best, best_count = None, -1
            for pair, count in pair_counts.items():
                if count > best_count:
                    best, best_count = pair, count
            return best
    """),
    ("ids", "ids_compared", edit(_CHOOSE, ("(pair_counts[p], token_bytes[p[0]], token_bytes[p[1]])", "(pair_counts[p], p)"))),
    ("joined bytes", "concatenation_compared", edit(_CHOOSE, ("(pair_counts[p], token_bytes[p[0]], token_bytes[p[1]])",
                                                             "(pair_counts[p], token_bytes[p[0]] + token_bytes[p[1]])"))),
    ("a list", "not_a_tuple", """
        def choose_merge(pair_counts, token_bytes):
            best = max(pair_counts, key=lambda p: (pair_counts[p], token_bytes[p[0]], token_bytes[p[1]]))
            return [best[0], best[1]]
    """),
    ("the bytes as a list", "token_bytes_as_a_list_only", """
        def choose_merge(pair_counts, token_bytes):
            table = list(token_bytes)
            return max(pair_counts, key=lambda p: (pair_counts[p], table[p[0]], table[p[1]]))
    """),
    ("the chosen count zeroed", "inputs_changed_in_place", """
        def choose_merge(pair_counts, token_bytes):
            best = max(pair_counts, key=lambda p: (pair_counts[p], token_bytes[p[0]], token_bytes[p[1]]))
            pair_counts[best] = 0        # it is merged now
            return best
    """),
    ("the chosen pair popped", "inputs_changed_in_place", """
        def choose_merge(pair_counts, token_bytes):
            best = max(pair_counts, key=lambda p: (pair_counts[p], token_bytes[p[0]], token_bytes[p[1]]))
            pair_counts.pop(best)        # it is merged now: a key removed from the caller's dict
            return best
    """),
]


# --- train_bpe -------------------------------------------------------------------------------------------------------
_BPE = r'''
    import collections
    import re
    from seqlab.tokenizer import gpt2_pretokenize
    def train_bpe(input_path, vocab_size, special_tokens):
        text = open(input_path, encoding="utf-8").read()
        if special_tokens:
            pieces = re.split("|".join(re.escape(s) for s in sorted(special_tokens, key=len, reverse=True)), text)
        else:
            pieces = [text]
        words = collections.Counter()
        for piece in pieces:
            for token in gpt2_pretokenize(piece):
                words[tuple(bytes([b]) for b in token.encode("utf-8"))] += 1
        vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}
        for b in range(256):
            vocab[len(vocab)] = bytes([b])
        merges = []
        while len(vocab) < vocab_size:
            pairs = collections.Counter()
            for word, count in words.items():
                for pair in zip(word, word[1:]):
                    pairs[pair] += count
            if not pairs:
                break
            best = max(pairs, key=lambda p: (pairs[p], p))
            merges.append(best)
            vocab[len(vocab)] = best[0] + best[1]
            new_words = collections.Counter()
            for word, count in words.items():
                out, k = [], 0
                while k < len(word):
                    if k + 1 < len(word) and (word[k], word[k + 1]) == best:
                        out.append(best[0] + best[1])
                        k += 2
                    else:
                        out.append(word[k])
                        k += 1
                new_words[tuple(out)] += count
            words = new_words
        return vocab, merges
'''
CORRECT["train_bpe"] = {"counter loop": _BPE, "their own choose_merge": r'''
    from collections import Counter
    from seqlab.tokenizer import gpt2_pretokenize       # the one helper the exercise allows
    from choose_merge import choose_merge               # the student's own choose_merge.py
    def train_bpe(input_path, vocab_size, special_tokens):
        # word lists of token ids; each step recounts the pairs and merges with the course's rule
        text = open(input_path, encoding="utf-8").read()
        pieces = [text]
        for special in special_tokens:
            pieces = [part for piece in pieces for part in piece.split(special)]
        counts = Counter(t for piece in pieces for t in gpt2_pretokenize(piece))
        token_bytes = [s.encode("utf-8") for s in special_tokens] + [bytes([b]) for b in range(256)]
        first = len(special_tokens)
        words = [[first + b for b in w.encode("utf-8")] for w in counts]
        weights = list(counts.values())
        merges = []
        while len(token_bytes) < vocab_size:
            pairs = Counter()
            for w, c in zip(words, weights):
                for pair in zip(w, w[1:]):
                    pairs[pair] += c
            if not pairs:
                break
            a, b = choose_merge(pairs, token_bytes)
            token_bytes.append(token_bytes[a] + token_bytes[b])
            merges.append((token_bytes[a], token_bytes[b]))
            new = len(token_bytes) - 1
            for n, w in enumerate(words):
                out, k = [], 0
                while k < len(w):
                    if k + 1 < len(w) and w[k] == a and w[k + 1] == b:
                        out.append(new)
                        k += 2
                    else:
                        out.append(w[k])
                        k += 1
                words[n] = out
        return dict(enumerate(token_bytes)), merges
'''}
WRONG["train_bpe"] = [
    ("special tokens not split off", "merges_across_special_tokens", edit(
        _BPE, ("if special_tokens:\n    pieces = re.split(\"|\".join(re.escape(s) for s in sorted(special_tokens, key=len, reverse=True)), text)\nelse:\n    pieces = [text]",
               "pieces = [text]"))),
    ("whole pieces counted", "no_pretokenization", edit(_BPE, ("for token in gpt2_pretokenize(piece):", "for token in [piece]:"))),
    ("special tokens after the bytes", "special_tokens_after_bytes", edit(
        _BPE, ('vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}\nfor b in range(256):\n    vocab[len(vocab)] = bytes([b])',
               'vocab = {b: bytes([b]) for b in range(256)}\nfor s in special_tokens:\n    vocab[len(vocab)] = s.encode("utf-8")'))),
    ("ties to the smaller pair", "ties_to_smaller", edit(_BPE, ("best = max(pairs, key=lambda p: (pairs[p], p))",
                                                                "best = min(pairs, key=lambda p: (-pairs[p], p))"))),
    ("each word once", "counts_not_weighted", edit(_BPE, ("pairs[pair] += count", "pairs[pair] += 1"))),
    ("the bytes not counted in vocab_size", "vocab_size_miscounted", edit(_BPE, ("while len(vocab) < vocab_size:",
                                                                               "while len(merges) < vocab_size - 256:"))),
    ("an empty pattern", "no_special_tokens_fails", edit(
        _BPE, ("if special_tokens:\n    pieces = re.split(\"|\".join(re.escape(s) for s in sorted(special_tokens, key=len, reverse=True)), text)\nelse:\n    pieces = [text]",
               "pieces = re.split(\"|\".join(re.escape(s) for s in special_tokens), text) if special_tokens else list(text)"))),
    ("the special tokens list extended", "inputs_changed_in_place", edit(
        _BPE, ('vocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}',
               'special_tokens.sort(key=len)\nvocab = {i: s.encode("utf-8") for i, s in enumerate(special_tokens)}'))),
    ("the merges as a dict", "output_form", edit(_BPE, ("return vocab, merges", "return vocab, dict(enumerate(merges))"))),
]


# the student's other files that a version imports (its earlier exercises), beside it: (style, exercise) -> {file: source}
BESIDE = {("from rnn pieces", "truncated_bptt"): {f"{n}.py": LOOPS[n] for n in ("rnn_bptt", "rnn_forward",
                                                                                "softmax_cross_entropy")},
          ("per head with their own attention", "multihead_attention"): {"attention.py": LOOPS["attention"]},
          ("their own choose_merge", "train_bpe"): {"choose_merge.py": LOOPS["choose_merge"]}}
