"""Every NumPy exercise: the stub fails with "not implemented yet", the reference passes, every
catalogued mistake fails with its own diagnosis, and loop-style implementations written here pass."""

from __future__ import annotations

import textwrap

import pytest

from seqlab.learn.catalog import NUMPY_NAMES, exercise
from seqlab.learn.exercise import check, check_many
from seqlab.learn.numpy_exercises import EXERCISES
from seqlab.learn.references import REFERENCE_MODULES
from seqlab.learn.workspace import start


def _write(tmp_path, name, source):
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_the_catalog_names_every_numpy_exercise_once():
    assert [e.name for e in EXERCISES] == list(NUMPY_NAMES)
    assert all(exercise(n).name == n for n in NUMPY_NAMES)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Every student file of this module checked in one child process (the cost is its start)."""
    root = tmp_path_factory.mktemp("batch")
    items, keys = [], []
    for ex in EXERCISES:
        stub_dir = root / "stub"
        path, written = start(stub_dir, ex)
        assert written
        items.append((ex, path))
        keys.append(("stub", ex.name))
        items.append((ex, _write(root / "reference", ex.name, f"from {REFERENCE_MODULES[ex.name]} import {ex.name}\n")))
        keys.append(("reference", ex.name))
        for m in ex.mistakes:
            source = f"from seqlab.learn.mistakes import {ex.name}__{m.id} as {ex.name}\n"
            items.append((ex, _write(root / f"mutant-{m.id}", ex.name, source)))
            keys.append(("mutant", ex.name, m.id))
        if ex.name in LOOPS:
            items.append((ex, _write(root / "loops", ex.name, LOOPS[ex.name])))
            keys.append(("loops", ex.name))
    return dict(zip(keys, check_many(items)))


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


MUTANTS = [(e.name, m.id) for e in EXERCISES for m in e.mistakes]


@pytest.mark.parametrize(("name", "mistake"), MUTANTS, ids=[f"{n}-{m}" for n, m in MUTANTS])
def test_each_catalogued_mistake_fails_with_its_own_diagnosis(batch, name, mistake):
    report = batch["mutant", name, mistake]
    assert not report.passed
    assert report.diagnosis is not None and report.diagnosis["mistake"] == mistake, report.diagnosis


def test_the_issue_s_mistakes_are_catalogued():
    ids = {(e.name, m.id) for e in EXERCISES for m in e.mistakes}
    for expected in [("rnn_bptt", "no_future_gradient"), ("rnn_bptt", "shared_weights_not_summed"),
                     ("truncated_bptt", "divided_by_T_twice"), ("softmax_cross_entropy", "divided_twice"),
                     ("attention", "softmax_over_queries"), ("attention", "missing_scale"),
                     ("causal_mask", "current_position_excluded"), ("causal_mask", "one_future_position_included"),
                     ("clip_global_norm", "coordinatewise"), ("gru_cell_forward", "update_gate_other_convention"),
                     ("train_bpe", "merges_across_special_tokens")]:
        assert expected in ids


def test_an_unknown_mistake_shows_the_first_differing_element(tmp_path):
    path = _write(tmp_path, "rnn_step", """
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


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_an_independent_loop_style_implementation_passes(batch, name):
    report = batch["loops", name]
    assert report.passed, (report.checks, report.diagnosis)
