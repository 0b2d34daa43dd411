"""Every NumPy exercise: the stub fails with "not implemented yet", the reference passes, every
catalogued mistake fails with its own diagnosis, and loop-style implementations written here pass."""

from __future__ import annotations

import pytest

from seqlab.learn.catalog import NUMPY_NAMES, exercise
from seqlab.learn.exercise import check
from seqlab.learn.numpy_exercises import EXERCISES
from tests.learn.numpy_students import CORRECT, WRONG
from tests.learn.students import check_batch, mutant_test, mutants, write_student


def test_the_catalog_names_every_numpy_exercise_once():
    assert [e.name for e in EXERCISES] == list(NUMPY_NAMES)
    assert all(exercise(n).name == n for n in NUMPY_NAMES)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Every student file of this module checked in one child process (the cost is its start)."""
    sources = {"loops": LOOPS}
    for name, styles in CORRECT.items():
        for style, source in styles.items():
            sources.setdefault(f"correct {style}", {})[name] = source
    for name, wrong in WRONG.items():
        for label, _, source in wrong:
            sources.setdefault(f"wrong {label}", {})[name] = source
    return check_batch(tmp_path_factory.mktemp("batch"), EXERCISES, "seqlab.learn.mistakes", sources)


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_the_stub_fails_with_not_implemented_yet(batch, name):
    ex = exercise(name)
    report = batch["stub", name]
    text = open(report.file).read()
    assert text.count("raise NotImplementedError") == 1
    assert f"def {ex.signature}:" in text
    assert not report.passed
    assert report.checks[-1]["name"] == "runs" and "not implemented yet" in report.checks[-1]["message"]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_the_reference_passes_every_check(batch, name):
    ex = exercise(name)
    report = batch["reference", name]
    assert report.passed, report.checks
    names = [c["name"] for c in report.checks]
    assert {"runs", "inputs unchanged", "shapes and types", "values (worked example)", "values (random inputs)"} <= set(names)
    if ex.gradients is not None:
        assert "gradients vs finite differences" in names


MUTANTS = mutants(EXERCISES)
test_each_catalogued_mistake_fails_with_its_own_diagnosis = mutant_test(EXERCISES)


def test_the_issue_s_mistakes_are_catalogued():
    ids = set(MUTANTS)
    for expected in [("rnn_bptt", "no_future_gradient"), ("rnn_bptt", "shared_weights_not_summed"),
                     ("truncated_bptt", "divided_by_T_twice"), ("softmax_cross_entropy", "divided_twice"),
                     ("attention", "softmax_over_queries"), ("attention", "missing_scale"),
                     ("causal_mask", "current_position_excluded"), ("causal_mask", "one_future_position_included"),
                     ("clip_global_norm", "coordinatewise"), ("gru_cell_forward", "update_gate_other_convention"),
                     ("train_bpe", "merges_across_special_tokens")]:
        assert expected in ids


def test_an_unknown_mistake_shows_the_first_differing_element(tmp_path):
    path = write_student(tmp_path, "rnn_step", """
        import numpy as np
        def rnn_step(params, x, h_prev):
            h = np.tanh(params["Wh"] @ h_prev + params["Wx"] @ x + params["b"])
            h[2] += 0.5          # a mistake the catalogue does not know
            return h
    """)
    report = check(exercise("rnn_step"), path)
    assert not report.passed and report.diagnosis["mistake"] is None
    assert "output[2]" in report.diagnosis["explanation"] and "expected" in report.diagnosis["explanation"]


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
                loss -= math.log(probs[r, targets[r]])
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

@pytest.mark.parametrize("name", sorted(LOOPS))
def test_an_independent_loop_style_implementation_passes(batch, name):
    report = batch["loops", name]
    assert report.passed, (report.checks, report.diagnosis)


# Student versions written from the stubs (tests/learn/numpy_students.py): the correct ones pass, each
# wrong one fails with the diagnosis of its mistake, and every sentence of every contract is what
# some wrong version fails.
CORRECT_VERSIONS = [(name, style) for name, styles in CORRECT.items() for style in styles]
WRONG_VERSIONS = [(name, label, mistake) for name, wrong in WRONG.items() for label, mistake, _ in wrong]


@pytest.mark.parametrize(("name", "style"), CORRECT_VERSIONS, ids=[f"{n}-{s}" for n, s in CORRECT_VERSIONS])
def test_a_correct_student_version_passes(batch, name, style):
    report = batch[f"correct {style}", name]
    assert report.passed, (report.checks, report.diagnosis)


@pytest.mark.parametrize(("name", "label", "mistake"), WRONG_VERSIONS,
                         ids=[f"{n}-{label}" for n, label, _ in WRONG_VERSIONS])
def test_a_wrong_student_version_fails_with_the_diagnosis_of_its_mistake(batch, name, label, mistake):
    report = batch[f"wrong {label}", name]
    assert not report.passed
    d = report.diagnosis
    assert d is not None and d["mistake"] == mistake, (d, [c for c in report.checks if not c["passed"]])
    assert d["read"]["step"] == exercise(name).step and d["read"]["widget"] == exercise(name).widget
    assert d["read"]["anchor"] in ("", f"mistake-{mistake}")
    assert d["where"] and d["explanation"]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_each_exercise_has_two_correct_and_four_wrong_versions_and_each_sentence_is_failed_by_one(batch, name):
    ex = exercise(name)
    assert len(CORRECT.get(name, {})) + (name in LOOPS) >= 2
    wrong = WRONG.get(name, [])
    assert len(wrong) >= 4
    failed = {c["name"] for label, _, _ in wrong for c in batch[f"wrong {label}", name].checks if not c["passed"]}
    for spec in ex.spec:
        assert spec.id in failed, f"no wrong version of {name} fails {spec.id!r}: {spec.sentence}"


def test_a_convention_the_stub_allows_passes_with_a_note(batch):
    accepted = [(e.name, m) for e in EXERCISES for m in e.mistakes if m.accepted]
    assert ("attention", "masked_scores_as_inf") in [(n, m.id) for n, m in accepted]
    for name, m in accepted:
        report = batch["mutant", name, m.id]
        assert report.passed and report.notes and m.title in report.notes[0], (report.checks, report.notes)
    einsum = batch["correct einsum with -inf scores", "attention"]
    assert einsum.passed and "masked scores returned as -inf" in einsum.notes[0]


def test_every_wrong_student_version_ends_in_a_specific_diagnosis(batch):
    named = [(n, label) for n, label, _ in WRONG_VERSIONS
             if (batch[f"wrong {label}", n].diagnosis or {}).get("mistake") is not None]
    print(f"\n{len(named)} of {len(WRONG_VERSIONS)} wrong NumPy versions end in a specific diagnosis")
    assert len(named) == len(WRONG_VERSIONS)


def test_every_mistake_is_written_for_the_lesson_in_both_languages_with_the_glossary_s_words():
    import re

    from seqlab.learn.exercise import GENERIC_MISTAKES
    for owner, mistakes in [*((e.name, e.mistakes) for e in EXERCISES), ("generic", GENERIC_MISTAKES)]:
        ids = [m.id for m in mistakes]
        assert len(ids) == len(set(ids)), owner                  # one anchor mistake-<id> each
        for m in mistakes:
            assert m.title and m.explanation and m.title_zh and m.explanation_zh, (owner, m.id)
            en, zh = m.why
            assert len(en) > 60 and len(zh) > 30, (owner, m.id)
            for text in (m.title_zh, m.explanation_zh, zh):
                assert re.search(r"[\u4e00-\u9fff]", text), (owner, m.id, text)
                bare = re.sub(r"nn\.LSTM|BasicLSTMCell|nn\.GRU", "", text)
                assert not re.search(r"\bBPTT\b|\bLSTM\b|\bGRU\b", bare), (owner, m.id, text)   # 随时间反向传播, 长短期记忆, 门控循环单元
            if m.convention and not m.accepted:
                assert "this exercise uses" in m.explanation and "本练习使用" in m.explanation_zh, (owner, m.id)


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_each_sentence_of_the_contract_is_in_the_stub_and_is_a_check_of_the_reference(batch, name):
    ex = exercise(name)
    stub = " ".join(open(batch["stub", name].file, encoding="utf-8").read().split())
    checks = {c["name"] for c in batch["reference", name].checks}
    assert ex.spec
    for spec in ex.spec:
        assert " ".join(spec.sentence.split()) in stub, spec.sentence
        assert spec.id in checks or spec.id in ("values (worked example)", "runs"), spec.id


def test_a_backward_pass_s_diagnosis_says_which_gradients_are_right_and_which_steps_differ(batch):
    no_future = batch["wrong no future term", "rnn_bptt"].diagnosis
    assert no_future["mistake"] == "no_future_gradient"
    assert "right at the last time step and wrong at every earlier one" in no_future["where"]
    assert "right: Wy, by; wrong: Wx, Wh, b, xs, h0" in no_future["where"]
    last_only = batch["wrong weights from the last step only", "rnn_bptt"].diagnosis
    assert last_only["mistake"] == "shared_weights_not_summed"
    assert "only the last step's contribution" in last_only["where"] and "right: xs, h0" in last_only["where"]
    overwritten = batch["wrong weights overwritten", "rnn_bptt"].diagnosis
    assert "only the first step's contribution" in overwritten["where"]
    twice = batch["wrong divided by T twice", "truncated_bptt"].diagnosis
    assert twice["mistake"] == "divided_by_T_twice" and "the reference times 1/T" in twice["where"]
    a_last = batch["wrong a from the last step only", "scalar_recurrence_backward"].diagnosis
    assert "the gradient of a: output['a'] hold only the last step's contribution" in a_last["where"]


def test_a_forward_pass_s_diagnosis_names_the_structure_of_the_difference(batch):
    scale = batch["wrong divided by d", "attention"].diagnosis
    assert scale["mistake"] == "divided_by_d" and "the reference times 1/sqrt(d_k)" in scale["where"]
    axis = batch["wrong softmax down the columns", "attention"].diagnosis
    assert axis["mistake"] == "softmax_over_queries"
    window = batch["wrong strict inequality", "causal_mask"].diagnosis
    assert "False on the diagonal j = i" in window["where"]
    ahead = batch["wrong one step ahead", "causal_mask"].diagnosis
    assert "True on the diagonal j = i + 1" in ahead["where"]
    late = batch["wrong y from the state before", "rnn_forward"].diagnosis
    assert "shifted by one time step" in late["where"]
    heads = batch["wrong heads stacked last first", "multihead_attention"].diagnosis
    assert "heads 0, 1 of 2 differ" in heads["where"]
    sign = batch["wrong onehot minus probs", "softmax_cross_entropy"].diagnosis
    assert sign["mistake"] == "gradient_sign" and "times -1" in sign["where"]
    gru = batch["wrong z for the new state", "gru_cell_forward"].diagnosis
    assert gru["convention"] and "this exercise uses" in gru["explanation"]
