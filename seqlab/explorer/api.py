"""The explorer's JSON API: one endpoint per widget, each a thin call into ``seqlab.labs``.

No lesson formula lives here. An endpoint validates its request (see
``seqlab.explorer.validation``), calls the lab (or tokenizer) function that owns
the computation and converts the NumPy result to JSON. Every field is optional
and defaults to the lesson's worked example (``DEFAULTS``), so ``POST
/api/lstm`` with ``{}`` returns c = 0.9, h = 0.358149.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from seqlab.explorer.validation import Payload, RequestError
from seqlab.jsonfile import to_json

# Small limits keep every request fast (well under a second on a laptop).
MAX_SEQUENCE = 16  # recurrence inputs, time steps
MAX_TOKENS = 8  # attention rows/keys, mask size, dependency map tokens
MAX_DIM = 8  # attention vector width
MAX_VALUE = 1e3  # magnitude of any editable number
MAX_CHAR_LM_STEPS = 3000

HANDOUT_WORD_COUNTS = {"low": 5, "lower": 2, "widest": 3, "newest": 6}

DEFAULTS: dict[str, dict[str, Any]] = {
    "recurrence": {"a": 0.5, "h0": 0.0, "xs": [1.0, 0.0, -1.0]},
    "char_lm": {"steps": 600, "lr": 0.5, "seed": 7, "reset_state": False},
    "repeated_factor": {"factors": [0.5, 2.0], "steps": 10},
    "clipping": {"vector": [3.0, 4.0], "threshold": 2.0},
    "tbptt": {"num_steps": 8, "chunk_length": 3, "loss_step": 7},
    "lstm": {"c_prev": 1.0, "f": 0.8, "i": 0.25, "g": 0.4, "o": 0.5},
    "gru": {"h_prev": 0.6, "z": 0.75, "candidate": -0.2, "convention": "keep_old"},
    "attention": {
        "queries": [[1.0, 0.0]],
        "keys": [[1.0, 0.0], [0.0, 1.0]],
        "values": [[2.0], [10.0]],
        "causal": False,
        "reverse_mask": False,
        "padding": False,
        "valid_length": 2,
    },
    "cross_attention": {
        "queries": [[1.0, 0.0], [0.0, 1.0]],
        "keys": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
        "values": [[2.0], [10.0], [4.0]],
        "padding": False,
        "valid_length": 3,
    },
    "causal_mask": {"tokens": ["A", "B", "C"]},
    "multihead": {"n": 3, "d_model": 4, "num_heads": 2},
    "bpe": {"word_counts": HANDOUT_WORD_COUNTS, "num_merges": 6},
    "dependency": {"kind": "rnn", "num_tokens": 4, "seed": 0},
    "selfcheck": {},
}


def widget_defaults() -> dict[str, dict[str, Any]]:
    """Every widget's worked-example inputs (served as ``GET /api/defaults``)."""
    return to_jsonable(DEFAULTS)


def to_jsonable(value: Any) -> Any:
    """A widget's result as plain JSON types (``seqlab.jsonfile.to_json``); a result that
    overflowed to NaN/infinity is the client's problem to fix (smaller inputs), so a RequestError."""
    try:
        return to_json(value, non_finite="raise")
    except ValueError:
        raise RequestError("the result is not finite (it overflowed); try smaller inputs") from None


# --- widgets --------------------------------------------------------------------------------
def recurrence(p: Payload) -> dict:
    from seqlab.labs.recurrence import scalar_recurrence

    d = DEFAULTS["recurrence"]
    a = p.number("a", d["a"], -10, 10)
    h0 = p.number("h0", d["h0"], -1, 1)
    xs = p.vector("xs", d["xs"], 1, MAX_SEQUENCE, -MAX_VALUE, MAX_VALUE)
    p.finish()
    return {
        "states": scalar_recurrence(a, xs, h0),
        # the same inputs in the opposite order: the state depends on their order
        "reversed_states": scalar_recurrence(a, xs[::-1], h0),
    }


def char_lm(p: Payload) -> dict:
    from seqlab.labs.char_lm import WORD, train_char_lm

    d = DEFAULTS["char_lm"]
    steps = p.integer("steps", d["steps"], 0, MAX_CHAR_LM_STEPS)
    lr = p.number("lr", d["lr"], 0.0, 5.0)
    seed = p.integer("seed", d["seed"], 0, 2**31 - 1)
    reset_state = p.boolean("reset_state", d["reset_state"])
    p.finish()
    result = train_char_lm(steps=steps, lr=lr, seed=seed, reset_state=reset_state)
    return {
        "loss_trace": result.loss_trace,  # before each update, then the final loss
        "final_loss": result.final_loss,
        "distributions": result.distributions,  # (4, 4): position x next character
        "greedy": result.greedy,
        "generated": result.generated,
        "parameters": result.parameters,
        "vocab": list(result.vocab),
        "inputs": WORD[:-1],
        "targets": WORD[1:],
    }


def repeated_factor(p: Payload) -> dict:
    from seqlab.labs.recurrence import repeated_factor as product

    d = DEFAULTS["repeated_factor"]
    factors = p.vector("factors", d["factors"], 1, 4, -4, 4)
    steps = p.integer("steps", d["steps"], 0, 100)
    p.finish()
    # the whole trajectory (after 0, 1, ..., steps factors) so the page can plot it
    return {
        "products": [product(f, steps) for f in factors],
        "trajectories": [[product(f, k) for k in range(steps + 1)] for f in factors],
    }


def clipping(p: Payload) -> dict:
    from seqlab.labs.clipping import clip_coordinatewise, clip_global_norm

    d = DEFAULTS["clipping"]
    vector = np.array(p.vector("vector", d["vector"], 1, MAX_DIM, -MAX_VALUE, MAX_VALUE))
    threshold = p.number("threshold", d["threshold"], 1e-6, MAX_VALUE)
    p.finish()
    clipped, norm = clip_global_norm(vector, threshold)
    return {"global_norm": {"clipped": clipped, "norm": norm}, "coordinatewise": clip_coordinatewise(vector, threshold)}


def tbptt(p: Payload) -> dict:
    from seqlab.labs.rnn import truncated_bptt_reach

    d = DEFAULTS["tbptt"]
    num_steps = p.integer("num_steps", d["num_steps"], 1, MAX_SEQUENCE)
    chunk_length = p.integer("chunk_length", d["chunk_length"], 1, MAX_SEQUENCE)
    loss_step = p.integer("loss_step", d["loss_step"], 0, MAX_SEQUENCE - 1)
    p.finish()
    if loss_step >= num_steps:
        raise RequestError(f"loss_step must be below num_steps ({num_steps}), got {loss_step}")
    # chunk boundaries for the drawing: where the reach of each step's loss begins
    chunk_starts = sorted({truncated_bptt_reach(num_steps, chunk_length, step)[0] for step in range(num_steps)})
    return {"reach": truncated_bptt_reach(num_steps, chunk_length, loss_step), "chunk_starts": chunk_starts}


def lstm(p: Payload) -> dict:
    from seqlab.labs.lstm import lstm_gate_step

    d = DEFAULTS["lstm"]
    c_prev = p.number("c_prev", d["c_prev"], -MAX_VALUE, MAX_VALUE)
    f = p.number("f", d["f"], 0, 1)
    i = p.number("i", d["i"], 0, 1)
    g = p.number("g", d["g"], -1, 1)
    o = p.number("o", d["o"], 0, 1)
    p.finish()
    return lstm_gate_step(c_prev, f, i, g, o)


GRU_CONVENTIONS = ("keep_old", "keep_new")


def gru(p: Payload) -> dict:
    from seqlab.labs.gru import gru_gate_step

    d = DEFAULTS["gru"]
    h_prev = p.number("h_prev", d["h_prev"], -MAX_VALUE, MAX_VALUE)
    z = p.number("z", d["z"], 0, 1)
    candidate = p.number("candidate", d["candidate"], -1, 1)
    convention = p.choice("convention", d["convention"], GRU_CONVENTIONS)
    p.finish()
    keeps_old = convention == "keep_old"
    # The other convention names the complementary gate: its z is the fraction this one does not keep.
    other_z = 1.0 - z
    return {
        "h": gru_gate_step(h_prev, z, candidate, z_keeps_old=keeps_old),
        "other": {
            "convention": GRU_CONVENTIONS[keeps_old],
            "z": other_z,
            "h": gru_gate_step(h_prev, other_z, candidate, z_keeps_old=not keeps_old),
        },
    }


def _attention_mask(num_queries: int, num_keys: int, causal: bool, reverse_mask: bool,
                    padding: bool, valid_length: int):
    """The (queries, keys) bool mask the widget's toggles ask for, built by the lab's mask functions."""
    from seqlab.labs.attention import causal_mask, padding_mask

    mask = None
    if reverse_mask and not causal:
        raise RequestError("reverse_mask flips the causal mask; turn causal on first")
    if causal:
        if num_queries > num_keys:
            raise RequestError(f"a causal mask puts query i at position i: {num_queries} queries need at least "
                               f"{num_queries} keys, got {num_keys}")
        full = causal_mask(num_keys)
        # the deliberately wrong variant: query i sees positions i..end instead of 0..i
        mask = (full.T if reverse_mask else full)[:num_queries]
    if padding:
        if valid_length > num_keys:
            raise RequestError(f"valid_length {valid_length} is more than the {num_keys} keys")
        keys_mask = padding_mask(valid_length, length=num_keys, num_queries=num_queries)
        mask = keys_mask if mask is None else mask & keys_mask
    return mask


def _attention_inputs(p: Payload, d: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    queries = np.array(p.matrix("queries", d["queries"], (1, MAX_TOKENS), (1, MAX_DIM), -MAX_VALUE, MAX_VALUE))
    keys = np.array(p.matrix("keys", d["keys"], (1, MAX_TOKENS), (1, MAX_DIM), -MAX_VALUE, MAX_VALUE))
    values = np.array(p.matrix("values", d["values"], (1, MAX_TOKENS), (1, MAX_DIM), -MAX_VALUE, MAX_VALUE))
    if queries.shape[1] != keys.shape[1]:
        raise RequestError(f"queries have width {queries.shape[1]} but keys have width {keys.shape[1]}")
    if len(values) != len(keys):
        raise RequestError(f"{len(keys)} keys need {len(keys)} value rows, got {len(values)}")
    return queries, keys, values


def _attention_result(queries, keys, values, mask) -> dict:
    from seqlab.labs.attention import attention

    out = attention(queries, keys, values, mask)
    visible = np.ones(out["scores"].shape, dtype=bool) if mask is None else np.asarray(mask)
    return {
        # masked scores are -inf inside softmax; JSON has no -inf, the page shows them as "masked"
        "scores": [[s if v else None for s, v in zip(row, vis)] for row, vis in zip(out["scores"].tolist(), visible)],
        "weights": out["weights"],
        "output": out["output"],
        "mask": visible,
        "fully_masked_rows": out["fully_masked_rows"],
    }


def attention(p: Payload) -> dict:
    from seqlab.labs.dependency import future_leaks

    d = DEFAULTS["attention"]
    queries, keys, values = _attention_inputs(p, d)
    causal = p.boolean("causal", d["causal"])
    reverse_mask = p.boolean("reverse_mask", d["reverse_mask"])
    padding = p.boolean("padding", d["padding"])
    valid_length = p.integer("valid_length", d["valid_length"], 0, MAX_TOKENS)
    p.finish()
    mask = _attention_mask(len(queries), len(keys), causal, reverse_mask, padding, valid_length)
    result = _attention_result(queries, keys, values, mask)
    result["leak_check"] = {"checked": causal, "leaks": future_leaks(queries, keys, values, mask) if causal else []}
    return result


def cross_attention(p: Payload) -> dict:
    """Target positions (queries) attend over a source sequence (keys, values): a rectangular map."""
    d = DEFAULTS["cross_attention"]
    queries, keys, values = _attention_inputs(p, d)
    padding = p.boolean("padding", d["padding"])
    valid_length = p.integer("valid_length", d["valid_length"], 0, MAX_TOKENS)
    p.finish()
    mask = _attention_mask(len(queries), len(keys), False, False, padding, valid_length)
    return _attention_result(queries, keys, values, mask)


def causal_mask_grid(p: Payload) -> dict:
    from seqlab.labs.attention import causal_mask

    tokens = p.strings("tokens", DEFAULTS["causal_mask"]["tokens"], 1, MAX_TOKENS, 12)
    p.finish()
    mask = causal_mask(len(tokens))
    return {"tokens": tokens, "mask": mask, "visible": int(mask.sum())}


def multihead_sizes(p: Payload) -> tuple[int, int, int]:
    """The multi-head widget's (n, d_model, num_heads), the whole request read; d_model must split
    evenly into the heads."""
    d = DEFAULTS["multihead"]
    n = p.integer("n", d["n"], 1, 16)
    d_model = p.integer("d_model", d["d_model"], 1, 64)
    num_heads = p.integer("num_heads", d["num_heads"], 1, 16)
    p.finish()
    if num_heads > d_model or d_model % num_heads:
        raise RequestError(f"d_model {d_model} must split evenly into num_heads {num_heads} heads")
    return n, d_model, num_heads


def multihead(p: Payload) -> dict:
    from seqlab.labs.attention import multihead_shapes

    n, d_model, num_heads = multihead_sizes(p)
    shapes = multihead_shapes(n, d_model, num_heads)
    return {"shapes": [[name, shape] for name, shape in shapes.items()], "num_heads": num_heads}


def bpe(p: Payload) -> dict:
    from seqlab.tokenizer import merge_trace

    d = DEFAULTS["bpe"]
    word_counts = p.word_counts("word_counts", d["word_counts"], 12, 24, 10_000)
    num_merges = p.integer("num_merges", d["num_merges"], 1, 40)
    p.finish()
    return {"steps": merge_trace(word_counts, num_merges)}


def dependency(p: Payload) -> dict:
    from seqlab.labs.dependency import KINDS, dependency_map

    d = DEFAULTS["dependency"]
    kind = p.choice("kind", d["kind"], KINDS)
    num_tokens = p.integer("num_tokens", d["num_tokens"], 2, 6)
    seed = p.integer("seed", d["seed"], 0, 10_000)
    p.finish()
    return dependency_map(kind, num_tokens, seed=seed)


def selfcheck(p: Payload) -> dict:
    """The answers to the self-check cards, computed by the same widgets on their worked examples."""
    p.finish()
    run = lambda name, **changes: run_endpoint(name, {**DEFAULTS[name], **changes})
    rec = run("recurrence")
    att = run("attention")
    trace = run("bpe")["steps"]
    dep = run("dependency", kind="causal_self_attention")
    return {
        "recurrence": {"h3": rec["states"][-1], "reversed_h3": rec["reversed_states"][-1]},
        "char_lm": {"reset_l_rows": run("char_lm", reset_state=True)["distributions"][2:4]},
        "gradient": {"products": run("repeated_factor")["products"], "clipping": run("clipping")},
        "lstm": {"keep": run("lstm", f=1.0, i=0.0), "default": run("lstm")},
        "gru": {"h": run("gru")["h"]},
        "attention": {"weights": att["weights"][0], "output": att["output"][0],
                      "equal_output": run("attention", queries=[[0.0, 0.0]])["output"][0],
                      "causal": run("attention", causal=True)},
        "causal_mask": {"visible3": run("causal_mask")["visible"],
                        "visible5": run("causal_mask", tokens=list("ABCDE"))["visible"]},
        "multihead": dict(run("multihead")["shapes"]),
        "bpe": {"first": trace[0]},
        "dependency": {"depends": dep["depends"]},
    }


ENDPOINTS: dict[str, Callable[[Payload], dict]] = {
    "recurrence": recurrence,
    "char_lm": char_lm,
    "repeated_factor": repeated_factor,
    "clipping": clipping,
    "tbptt": tbptt,
    "lstm": lstm,
    "gru": gru,
    "attention": attention,
    "cross_attention": cross_attention,
    "causal_mask": causal_mask_grid,
    "multihead": multihead,
    "bpe": bpe,
    "dependency": dependency,
    "selfcheck": selfcheck,
}


def run_endpoint(name: str, data: dict[str, Any]) -> dict:
    """Validate ``data`` and run widget ``name``; raises RequestError for bad requests."""
    return answer(ENDPOINTS[name], data)


def answer(handler: Callable[[Payload], dict], data: dict[str, Any]) -> dict:
    """``handler``'s result on ``data`` as plain JSON types; a lab's ValueError (which names the shape
    or value it rejects) becomes a RequestError with its message."""
    try:
        result = handler(Payload(data))
    except RequestError:
        raise
    except ValueError as exc:  # the lab functions name the shape or value they reject
        raise RequestError(str(exc)) from None
    return to_jsonable(result)
