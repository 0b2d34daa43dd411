"""multihead_attention: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import attention as att
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import not_float64, seeded_cases


def cases(settings=((0, 3, 3, 4, 2, False), (1, 4, 4, 6, 3, False), (2, 4, 4, 8, 4, False)), mask=None,
          float32=False) -> list[Case]:
    def make(k, rng, n, m, d_model, heads, cross):
        params = att.init_multihead_params(d_model, rng)
        x_q = rng.normal(size=(n, d_model))
        x_kv = rng.normal(size=(m, d_model)) if cross else x_q.copy()
        if float32:
            x_q, x_kv = x_q.astype(np.float32), x_kv.astype(np.float32)
        return (x_q, x_kv, params, heads), ({} if mask is None else {"mask": mask})
    return seeded_cases(make, settings)


def compared(out):
    return {"concat": out["concat"], "output": out["output"]}


CHECKS = {"contiguous heads": Check(verify=same_values("concat")), "head scale": Check(verify=same_values("concat")),
          "head order": Check(verify=same_values("concat")), "output projection": Check(verify=same_values("output")),
          "cross-attention": Check(lambda: cases(((91, 3, 5, 4, 2, True), (92, 4, 2, 6, 3, True)))),
          "mask": Check(lambda: [*cases(((93, 4, 4, 4, 2, False),), mask=np.tril(np.ones((4, 4), bool))),
                                 *cases(((94, 3, 3, 6, 3, False),), mask=np.array([True, False, True]))]),
          "float64": Check(lambda: cases(((95, 3, 3, 4, 2, False),), float32=True), same_dtypes(compared))}
axes = {"concat": ("query row", "column"), "output": ("query row", "column")}


# --- mistakes -----------------------------------------------------------------------------------------
def _variant(x_q, x_kv, params, num_heads, mask, *, interleaved=False, width_scale=False, reversed_heads=False,
             projection=True, keys_from_queries=False):
    x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
    if keys_from_queries:
        x_kv = x_q
    d_model = params["Wq"].shape[0]
    Q, K, V = x_q @ params["Wq"], x_kv @ params["Wk"], x_kv @ params["Wv"]
    width = d_model // num_heads
    cols = [np.arange(h, d_model, num_heads) if interleaved else np.arange(h * width, (h + 1) * width)
            for h in range(num_heads)]
    outs = []
    for c in cols:
        q = Q[:, c] * (np.sqrt(width) / np.sqrt(d_model) if width_scale else 1.0)
        outs.append(att.attention(q, K[:, c], V[:, c], mask)["output"])
    concat = np.concatenate(outs[::-1] if reversed_heads else outs, axis=1)
    if interleaved:                                        # merged back in the same strided order
        merged = np.empty_like(concat)
        for h, c in enumerate(cols):
            merged[:, c] = concat[:, h * width:(h + 1) * width]
        concat = merged
    return {"q": Q, "k": K, "v": V, "concat": concat, "output": concat @ params["Wo"] if projection else concat}


def heads_split_interleaved(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, interleaved=True)


def scaled_by_d_model(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, width_scale=True)


def heads_reversed(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, reversed_heads=True)


def no_output_projection(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, projection=False)


def keys_from_queries(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, keys_from_queries=True)


def _heads_differ(ev):
    """Says which heads (column blocks of concat) differ, where concat is wrong."""
    for i in ev.usable():
        if not ev.wrong(i, ("concat",)):
            continue
        e, a = (np.asarray(x) for x in ev.leaf(i, ("concat",)))
        heads = ev.cases[i].args[3]
        w = e.shape[1] // heads
        bad = [h for h in range(heads) if not D.close(e[:, h * w:(h + 1) * w], a[:, h * w:(h + 1) * w], ev.rtol, ev.atol)]
        return f"on {ev.cases[i].label} heads {', '.join(map(str, bad))} of {heads} differ" if bad else None
    return None


MUTANTS = {"heads_split_interleaved": heads_split_interleaved, "scaled_by_d_model": scaled_by_d_model,
           "heads_reversed": heads_reversed, "no_output_projection": no_output_projection,
           "keys_from_queries": keys_from_queries}
RECOGNISERS = {"heads_reversed": _heads_differ,
               "no_output_projection": D.matches(no_output_projection, ("output",), "own"),
               "mask_ignored": D.failed_check("mask"), "not_float64": not_float64()}
