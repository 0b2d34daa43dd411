"""attention: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import float32, not_float64, rng, square_only
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    r = rng(4)
    return [Case(said("cases.worked"), (np.array([1.0, 0.0]), np.eye(2), np.array([2.0, 10.0]))),
            Case(said("cases.random", k=1), (r.normal(size=(3, 4)) * 2, r.normal(size=(5, 4)) * 2, r.normal(size=(5, 3)))),
            Case(say("random_2_mask"), (r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2))),
                 {"mask": np.array([[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 0, 1]], dtype=bool)})]


def _mask_cases():
    r = rng(71)
    return [Case(say("key_mask"), (r.normal(size=(3, 4)), r.normal(size=(5, 4)), r.normal(size=(5, 2))),
                 {"mask": np.array([True, False, True, True, False])}),
            Case(say("causal_mask"), (r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=4)),
                 {"mask": np.tril(np.ones((4, 4), bool))}),
            Case(say("one_query_masked"), (r.normal(size=3), r.normal(size=(4, 3)), r.normal(size=(4, 2))),
                 {"mask": np.array([False, True, True, False])})]


def _fully_masked_cases():
    r = rng(72)
    return [Case(say("row_1_masked"), (r.normal(size=(3, 4)), r.normal(size=(4, 4)), r.normal(size=(4, 2))),
                 {"mask": np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 0, 1, 1]], dtype=bool)}),
            Case(say("all_keys_masked"), (r.normal(size=2), r.normal(size=(3, 2)), r.normal(size=3)),
                 {"mask": np.zeros(3, dtype=bool)})]


def _large_cases():
    r = rng(73)
    q, k = r.normal(size=(2, 4)) * 30, r.normal(size=(3, 4)) * 30
    return [Case(say("large"), (q, k, r.normal(size=(3, 2)))),
            Case(say("large_masked"), (q, k, r.normal(size=3)), {"mask": np.array([[1, 0, 1], [0, 1, 1]], bool)})]


def _single_cases():
    r = rng(74)
    return [Case(say("one_query_matrix"), (r.normal(size=3), r.normal(size=(4, 3)), r.normal(size=(4, 2)))),
            Case(say("one_query_vector"), (r.normal(size=2), r.normal(size=(5, 2)), r.normal(size=5)))]


def _sizes_cases():
    r = rng(75)
    return [Case(say("sizes_1"), (r.normal(size=(1, 5)), r.normal(size=(6, 5)), r.normal(size=(6, 1)))),
            Case(say("sizes_2"), (r.normal(size=(5, 3)), r.normal(size=(2, 3)), r.normal(size=(2, 4))))]


def compared(out):
    return {k: out[k] for k in ("scores", "weights", "output", "fully_masked_rows")}


def invariants(case, out):
    weights = np.atleast_2d(np.asarray(out["weights"], dtype=float))
    mask = case.kwargs.get("mask")
    visible = np.ones(weights.shape, bool) if mask is None else np.broadcast_to(mask, weights.shape)
    rows = weights.sum(axis=-1)
    bad = np.flatnonzero(visible.any(axis=-1) & ~np.isclose(rows, 1.0))
    if bad.size:
        return say("row_sum", row=int(bad[0]), total=f"{rows[bad[0]]:.6g}")
    if np.any(weights[~visible] != 0):
        i, j = map(int, np.argwhere((weights != 0) & ~visible)[0])
        return say("masked_weight", i=i, j=j, weight=f"{weights[i, j]:.3g}")
    return None


CHECKS = {"scores": Check(verify=same_values("scores")), "weights": Check(verify=same_values("weights")),
          "output": Check(verify=same_values("output")), "mask shapes": Check(_mask_cases),
          "fully masked rows": Check(_fully_masked_cases), "large scores": Check(_large_cases),
          "one query": Check(_single_cases), "sizes": Check(_sizes_cases),
          "float64": Check(lambda: [Case(say("float32"), float32(cases()[1].args, 0, 1, 2))],
                           same_dtypes(lambda out: {k: out[k] for k in ("scores", "weights", "output")}))}
axes = {"scores": ("query row", "key"), "weights": ("query row", "key"), "output": ("query row", "value column")}


# --- mistakes -----------------------------------------------------------------------------------------
def _variant(q, keys, values, mask, *, axis=-1, scale="sqrt", mask_after=False, invert=False, inf_scores=False):
    single = np.ndim(q) == 1
    Q = np.atleast_2d(np.asarray(q, dtype=np.float64))
    K = np.asarray(keys, dtype=np.float64)
    scalar_values = np.ndim(values) == 1
    V = np.asarray(values, dtype=np.float64).reshape(len(K), -1)
    d = Q.shape[1]
    scores = Q @ K.T * {"sqrt": 1 / np.sqrt(d), "none": 1.0, "d": 1 / d}[scale]
    visible = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), scores.shape)
    if invert == "always" or invert and mask is not None:
        visible = ~visible
    s = scores if mask_after else np.where(visible, scores, -np.inf)
    m = s.max(axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    tot = e.sum(axis=axis, keepdims=True)
    w = np.divide(e, tot, out=np.zeros_like(e), where=tot > 0)
    if mask_after:
        w = np.where(visible, w, 0.0)
    fully = [int(i) for i in np.flatnonzero(~visible.any(axis=-1))]
    if inf_scores:
        scores = np.where(visible, scores, -np.inf)
    out = w @ V
    if scalar_values:
        out = out[:, 0]
    if single:
        scores, w, out = scores[0], w[0], out[0]
        out = float(out) if np.ndim(out) == 0 else out
    return {"scores": scores, "weights": w, "output": out, "fully_masked_rows": fully}


def softmax_over_queries(q, keys, values, mask=None):
    return _variant(q, keys, values, mask, axis=0)


def missing_scale(q, keys, values, mask=None):
    return _variant(q, keys, values, mask, scale="none")


def divided_by_d(q, keys, values, mask=None):
    return _variant(q, keys, values, mask, scale="d")


def mask_after_softmax(q, keys, values, mask=None):
    return _variant(q, keys, values, mask, mask_after=True)


def mask_inverted(q, keys, values, mask=None):
    return _variant(q, keys, values, mask, invert=True)


def mask_inverted_without_a_mask_too(q, keys, values, mask=None):
    """True read as masked, and the all-True default (no mask) inverted with it: every key hidden."""
    return _variant(q, keys, values, mask, invert="always")


def mask_ignored(q, keys, values, mask=None):
    return _variant(q, keys, values, None)


def masked_scores_as_inf(q, keys, values, mask=None):
    return _variant(q, keys, values, mask, inf_scores=True)


def _one_query_kept_2d(ev):
    """Recognises a single query (q of shape (d,)) answered with the shapes of a batch of one."""
    seen = []
    for i, case in enumerate(ev.cases):
        if np.ndim(case.args[0]) != 1 or ev.raw[i] is None:
            continue
        try:
            weights = np.asarray(ev.raw[i]["weights"])
        except (KeyError, TypeError, IndexError):
            return None
        if weights.shape != (1, *np.shape(ev.expected[i]["weights"])):
            return None
        seen.append(case.label)
    return say("kept_2d", cases=D.listed(seen[:3])) if seen else None


def _fully_masked_rows(ev, how):
    """Recognises what the student's weights are on the rows with every key masked: "NaN" or "uniform"."""
    if not D.own_values_right(ev):
        return None
    seen = []
    for i, case in enumerate(ev.cases):
        mask = case.kwargs.get("mask")
        if case.spec != "fully masked rows" or ev.raw[i] is None or mask is None:
            continue
        try:
            weights = np.atleast_2d(np.asarray(ev.raw[i]["weights"], dtype=float))
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        rows = ~np.broadcast_to(np.asarray(mask, bool), weights.shape).any(axis=-1)
        empty = weights[rows]
        fits = np.isnan(empty).any() if how == "NaN" else \
            np.allclose(empty, 1 / weights.shape[-1]) and np.all(np.isfinite(empty))
        if not fits:
            return None
        seen.append(case.label)
    return say("fully_nan" if how == "NaN" else "fully_uniform", cases=D.listed(seen)) if seen else None


MUTANTS = {"softmax_over_queries": softmax_over_queries, "missing_scale": missing_scale, "divided_by_d": divided_by_d,
           "mask_after_softmax": mask_after_softmax, "mask_inverted": mask_inverted, "mask_ignored": mask_ignored,
           "masked_scores_as_inf": masked_scores_as_inf}
RECOGNISERS = {
    "softmax_over_queries": D.normalised_along("weights", 0, say("column_over_queries"), say("over_queries")),
    "missing_scale": D.factor_of(("scores",), lambda c: {"sqrt(d_k)": np.sqrt(np.shape(c.args[0])[-1])},
                                 say("not_scaled")),
    "divided_by_d": D.factor_of(("scores",), lambda c: {"1/sqrt(d_k)": 1 / np.sqrt(np.shape(c.args[0])[-1])},
                                say("divided_by_d")),
    "mask_inverted": D.matches(mask_inverted_without_a_mask_too, None, "all", say("inverted_everywhere")),
    "mask_ignored": D.matches(mask_ignored, ("scores", "weights", "output"), "all", say("mask_ignored")),
    "square_only": square_only("sizes"),
    "nan_for_fully_masked_rows": lambda ev: _fully_masked_rows(ev, "NaN"),
    "finite_mask_fill": lambda ev: _fully_masked_rows(ev, "uniform"),
    "fully_masked_rows_not_listed": D.failed_check("fully masked rows"),
    "max_not_subtracted": D.failed_check("large scores", raises=True),
    "key_mask_not_broadcast": D.failed_check("mask shapes", raises=True),
    "one_query_not_handled": D.any_of(_one_query_kept_2d, D.failed_check("one query", raises=True)),
    "not_float64": not_float64()}
