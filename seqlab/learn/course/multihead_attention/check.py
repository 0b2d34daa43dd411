"""multihead_attention: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import attention as att
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_dtypes, same_values
from seqlab.learn.kit import not_float64, seeded_cases
from seqlab.learn.words import speaker

say = speaker(__file__)


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
def _over_queries(q, k, v, mask):
    """A head whose softmax runs down each column of the scores (over the queries)."""
    s = q @ k.T / np.sqrt(q.shape[1])
    if mask is not None:
        s = np.where(np.broadcast_to(mask, s.shape), s, -np.inf)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return np.nan_to_num(e / e.sum(axis=0, keepdims=True)) @ v


def _variant(x_q, x_kv, params, num_heads, mask, *, interleaved=False, merged_in_blocks=False, width_scale=False,
             reversed_heads=False, projection=True, keys_from_queries=False, over_queries=False, transposed=False):
    x_q, x_kv = np.asarray(x_q, dtype=np.float64), np.asarray(x_kv, dtype=np.float64)
    if keys_from_queries:
        x_kv = x_q
    d_model = params["Wq"].shape[0]
    W = {k: params[k].T if transposed else params[k] for k in ("Wq", "Wk", "Wv", "Wo")}
    Q, K, V = x_q @ W["Wq"], x_kv @ W["Wk"], x_kv @ W["Wv"]
    width = d_model // num_heads
    cols = [np.arange(h, d_model, num_heads) if interleaved else np.arange(h * width, (h + 1) * width)
            for h in range(num_heads)]
    outs = []
    for c in cols:
        q = Q[:, c] * (np.sqrt(width) / np.sqrt(d_model) if width_scale else 1.0)
        outs.append(_over_queries(q, K[:, c], V[:, c], mask) if over_queries else
                    att.attention(q, K[:, c], V[:, c], mask)["output"])
    concat = np.concatenate(outs[::-1] if reversed_heads else outs, axis=1)
    if interleaved and not merged_in_blocks:               # merged back in the same strided order
        merged = np.empty_like(concat)
        for h, c in enumerate(cols):
            merged[:, c] = concat[:, h * width:(h + 1) * width]
        concat = merged
    return {"q": Q, "k": K, "v": V, "concat": concat, "output": concat @ W["Wo"] if projection else concat}


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


def split_interleaved_merged_in_blocks(x_q, x_kv, params, num_heads, mask=None):
    """Heads taken from every heads-th column, their outputs then put side by side in blocks."""
    return _variant(x_q, x_kv, params, num_heads, mask, interleaved=True, merged_in_blocks=True)


def softmax_over_queries(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, over_queries=True)


def weights_transposed(x_q, x_kv, params, num_heads, mask=None):
    return _variant(x_q, x_kv, params, num_heads, mask, transposed=True)


def _head_order(ev, i) -> list[int] | None:
    """The order of the reference's heads in the student's concat on case i: order[h] is the head whose
    output sits in block h; None when some block is no head's output."""
    e, a = (np.asarray(x) for x in ev.leaf(i, ("concat",)))
    heads = ev.cases[i].args[3]
    w = e.shape[1] // heads
    blocks = [e[:, h * w:(h + 1) * w] for h in range(heads)]
    order = []
    for h in range(heads):
        found = [j for j, b in enumerate(blocks) if D.close(b, a[:, h * w:(h + 1) * w], ev.rtol, ev.atol)]
        if len(found) != 1:
            return None
        order.append(found[0])
    return order if sorted(order) == list(range(heads)) else None


def _heads_in_order(reversed_only: bool):
    """Fits when, on every case where concat is wrong, its column blocks are the reference's heads in
    another order (``reversed_only``: the reverse order on each of them); says the order on each."""
    def recognise(ev):
        seen = []
        for i in ev.usable():
            if not ev.wrong(i, ("concat",)):
                continue
            order = _head_order(ev, i)
            if order is None or order == sorted(order) or reversed_only and order != sorted(order)[::-1]:
                return None
            seen.append(say("case_order", case=ev.cases[i].label, order=", ".join(map(str, order))))
        if not seen:
            return None
        return say("head_order", orders=D.listed(seen, "describe.joined"))
    return recognise


MUTANTS = {"heads_split_interleaved": heads_split_interleaved, "scaled_by_d_model": scaled_by_d_model,
           "heads_reversed": heads_reversed, "no_output_projection": no_output_projection,
           "keys_from_queries": keys_from_queries, "softmax_over_queries": softmax_over_queries,
           "weights_transposed": weights_transposed}
RECOGNISERS = {"heads_split_interleaved": D.matches(split_interleaved_merged_in_blocks, ("concat",), "own",
                                                    say("interleaved_in_blocks")),
               "heads_reversed": _heads_in_order(reversed_only=True),
               "heads_in_another_order": _heads_in_order(reversed_only=False),
               "softmax_over_queries": D.matches(softmax_over_queries, ("concat",), "own",
                                                 say("over_queries")),
               "weights_transposed": D.matches(weights_transposed, ("concat",), "own", say("transposed")),
               "no_output_projection": D.matches(no_output_projection, ("output",), "own"),
               "mask_ignored": D.failed_check("mask"), "not_float64": not_float64()}
