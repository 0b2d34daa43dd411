"""The explorer's "Information flow" endpoints over the chosen language-model run: the logit lens,
direct logit attribution, activation patching, attention knockout and head roles.

As in ``seqlab.explorer.model_api`` (whose run lookup, tokenizing and token pieces these reuse), no
formula lives here: each endpoint validates its request, calls ``seqlab.interpret`` and turns its
tensors into JSON. Text longer than the model's context is cut to its first ``context_length``
tokens (the response says ``truncated``). Tokens named in a request (``target``, ``baseline``) are
text that the run's tokenizer must encode as exactly one token, e.g. " Lily".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from seqlab.explorer.model_api import _lm, _text, _token_json, _window, answer
from seqlab.explorer.runs import ExplorerLM, RunRegistry
from seqlab.explorer.validation import Payload, RequestError

LENS_TOP_K = 3
MAX_TOKEN_CHARS = 100


def _prompt(lm: ExplorerLM, text: str) -> tuple[list[int], bool]:
    return _window(lm, lm.tokenizer.encode(text))


def _tokens(lm: ExplorerLM, ids: list[int]) -> list[dict[str, Any]]:
    return [_token_json(lm, i) for i in ids]


def _position(p: Payload, seq: int) -> int:
    """The ``position`` field (default -1, the last token; negative counts from the end) in [0, seq)."""
    value = p.integer("position", -1, -10**6, 10**6)
    if not -seq <= value < seq:
        raise RequestError(f"position {value} is out of range for a prompt of {seq} tokens ({-seq}..{seq - 1})",
                           "position_range", value=value, count=seq, last=seq - 1)
    return value % seq


def _named_token(lm: ExplorerLM, p: Payload, name: str) -> int | None:
    """The id of the one token the text in field ``name`` encodes to, or None when absent/empty."""
    text = p._get(name, None)
    if text is None or text == "":
        return None
    if not isinstance(text, str) or len(text) > MAX_TOKEN_CHARS:
        raise RequestError(f"{name} must be the text of one token (at most {MAX_TOKEN_CHARS} characters), "
                           f"got {text!r}"[:200])
    ids = lm.tokenizer.encode(text)
    if len(ids) != 1:
        pieces = [lm.tokenizer.vocab[i].decode("utf-8", errors="replace") for i in ids]
        raise RequestError(f"{name} {text!r} is {len(ids)} tokens for this run's tokenizer ({pieces}); give the "
                           "text of exactly one token, with its leading space (e.g. \" Lily\")",
                           "one_token", field=name, text=text, n=len(ids))
    return ids[0]


def _top_token(lm: ExplorerLM, ids: list[int], position: int, rank: int = 0) -> int:
    """The model's most likely (rank 0) or next most likely (rank 1) token at ``position``, from the
    lens's last row (the model's own output)."""
    from seqlab.interpret import logit_lens

    return int(logit_lens(lm.model, ids, top_k=rank + 1).top_ids[-1, position, rank])


def _finite(values: list) -> list:
    """Nested floats with NaN (no next token) as None."""
    return [_finite(v) if isinstance(v, list) else (None if isinstance(v, float) and math.isnan(v) else v)
            for v in values]


# --- endpoints ----------------------------------------------------------------------------------
def interpret_lens(p: Payload, runs: RunRegistry) -> dict:
    """The logit lens of the text: rows 0 (embedding) .. L (the model's output), one column per token.
    top_ids/top_probs [row][position][k], top_text the pieces; target_prob/target_rank [row][position]
    for the actual next token (null and 0 in the last column, which has none)."""
    from seqlab.interpret import logit_lens

    lm = _lm(p, runs)
    text = _text(p)
    top_k = p.integer("top_k", LENS_TOP_K, 1, 10)
    p.finish()
    ids, truncated = _prompt(lm, text)
    lens = logit_lens(lm.model, ids, top_k=top_k)
    top_ids = lens.top_ids.tolist()
    pieces = {i: lm.tokenizer.vocab[i].decode("utf-8", errors="replace") for i in set(lens.top_ids.flatten().tolist())}
    return {"tokens": _tokens(lm, ids), "truncated": truncated, "top_ids": top_ids,
            "top_text": [[[pieces[i] for i in cell] for cell in row] for row in top_ids],
            "top_probs": lens.top_probs.tolist(), "target_prob": _finite(lens.target_prob.tolist()),
            "target_rank": lens.target_rank.tolist(), "layers": len(lm.model.layers)}


def interpret_attribute(p: Payload, runs: RunRegistry) -> dict:
    """Direct logit attribution at ``position`` (default the last token) to ``target`` (default the
    model's top token there), minus ``baseline`` when given: embed, heads [layer][head], mlps
    [layer] and the total, which they sum to."""
    from seqlab.interpret import direct_logit_attribution

    lm = _lm(p, runs)
    text = _text(p)
    target, baseline = _named_token(lm, p, "target"), _named_token(lm, p, "baseline")
    ids, truncated = _prompt(lm, text)
    position = _position(p, len(ids))
    p.finish()
    if target is None:
        target = _top_token(lm, ids, position)
    parts = direct_logit_attribution(lm.model, ids, position=position, target=target, baseline=baseline)
    return {"tokens": _tokens(lm, ids), "truncated": truncated, "position": position,
            "target": _token_json(lm, target), "baseline": None if baseline is None else _token_json(lm, baseline),
            "embed": parts["embed"], "heads": parts["heads"].tolist(), "mlps": parts["mlps"].tolist(),
            "total": parts["total"]}


def interpret_patch(p: Payload, runs: RunRegistry) -> dict:
    """Activation patching of ``clean`` into ``corrupt`` (the same number of tokens): recovery
    [layer][position] (where resid_pre or mlp_out) or [layer][head][position] (head_out) of the
    logit difference target - baseline at the last token; 0 = as corrupted, 1 = as clean. The
    default target is the model's top token after the clean prompt, the default baseline its top
    token after the corrupted one (or, when the two agree, the clean prompt's second token)."""
    from seqlab.interpret import patch

    lm = _lm(p, runs)
    clean_text = p.string("clean", "", 4000)
    corrupt_text = p.string("corrupt", "", 4000)
    if clean_text == "" or corrupt_text == "":
        raise RequestError("give both a clean and a corrupted prompt", "text_empty")
    where = p.choice("where", "resid_pre", ("resid_pre", "mlp_out", "head_out"))
    target, baseline = _named_token(lm, p, "target"), _named_token(lm, p, "baseline")
    p.finish()
    (clean, clean_cut), (corrupt, corrupt_cut) = _prompt(lm, clean_text), _prompt(lm, corrupt_text)
    if len(clean) != len(corrupt):
        raise RequestError(f"the clean prompt is {len(clean)} tokens and the corrupted one {len(corrupt)}: patching "
                           "swaps activations position by position, so change words for words of the same "
                           "number of tokens", "patch_lengths", clean=len(clean), corrupt=len(corrupt))
    if target is None:
        target = _top_token(lm, clean, -1)
    if baseline is None:  # the corrupted prompt's prediction, or when it is the target, the clean runner-up
        baseline = _top_token(lm, corrupt, -1)
        if baseline == target:
            baseline = _top_token(lm, clean, -1, rank=1)
    if baseline == target:
        raise RequestError("the target and the baseline are the same token, so their logit difference is 0 on "
                           "both prompts: name two different tokens", "patch_same")
    recovery = patch(lm.model, clean, corrupt, target=target, baseline=baseline, where=where)
    return {"clean_tokens": _tokens(lm, clean), "corrupt_tokens": _tokens(lm, corrupt),
            "truncated": clean_cut or corrupt_cut, "where": where, "recovery": recovery.tolist(),
            "target": _token_json(lm, target), "baseline": _token_json(lm, baseline),
            "changed": [i for i, (a, b) in enumerate(zip(clean, corrupt)) if a != b]}


def interpret_knockout(p: Payload, runs: RunRegistry) -> dict:
    """Attention knockout into ``position`` (default the last token): drops [layer][source], the fall
    in log p(target) when every head of the layer is stopped from reading that source token.
    The default target is the model's top token there."""
    from seqlab.interpret import knockout

    lm = _lm(p, runs)
    text = _text(p)
    target = _named_token(lm, p, "target")
    ids, truncated = _prompt(lm, text)
    position = _position(p, len(ids))
    p.finish()
    if target is None:
        target = _top_token(lm, ids, position)
    drops = knockout(lm.model, ids, position=position, target=target)
    return {"tokens": _tokens(lm, ids), "truncated": truncated, "position": position,
            "target": _token_json(lm, target), "drops": drops.tolist()}


def interpret_heads(p: Payload, runs: RunRegistry) -> dict:
    """Every head's four scores on random tokens repeated once (``seqlab.interpret.head_scores``,
    seq_len min(32, context // 2), 8 sequences, seed 0) and its role (``head_roles``)."""
    from seqlab.interpret import ROLE_THRESHOLDS, ROLES, head_roles, head_scores

    lm = _lm(p, runs)
    p.finish()
    seq_len = min(32, lm.model.config.context_length // 2)
    scores = head_scores(lm.model, seq_len=seq_len)
    return {"roles": head_roles(scores), "scores": {role: scores[role].tolist() for role in ROLES},
            "thresholds": dict(ROLE_THRESHOLDS), "role_names": list(ROLES), "seq_len": seq_len}


INTERPRET_ENDPOINTS: dict[str, Callable[[Payload, RunRegistry], Any]] = {
    "interpret/lens": interpret_lens,
    "interpret/attribute": interpret_attribute,
    "interpret/patch": interpret_patch,
    "interpret/knockout": interpret_knockout,
    "interpret/heads": interpret_heads,
}


def run_interpret_endpoint(name: str, data: dict[str, Any], runs: RunRegistry) -> dict:
    """Validate ``data`` and run endpoint ``name`` (a key of INTERPRET_ENDPOINTS) on ``runs``, with
    the model endpoints' errors (:func:`seqlab.explorer.model_api.answer`)."""
    return answer(INTERPRET_ENDPOINTS[name], data, runs)
