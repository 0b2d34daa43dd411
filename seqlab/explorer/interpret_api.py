"""The explorer's "Information flow" endpoints: the logit lens, direct logit attribution, activation
patching, attention knockout and head roles of a language-model run, and one question asked of
every encoder-decoder side by side (``interpret/seq2seq``).

As in ``seqlab.explorer.model_api`` (whose run lookup, tokenizing and token pieces these reuse), no
formula lives here: each endpoint validates its request, estimates its cost
(``seqlab.interpret.cost``: over the explorer's limit it is refused with the estimate and the
``seqlab interpret`` command that runs it from the terminal), calls ``seqlab.interpret`` (which also
chooses the default targets and writes the notes) and turns its results into JSON. Text longer than
the model's context is cut to its first ``context_length`` tokens (``truncated``). Tokens named in a
request (``target``, ``baseline``) are text that the run's tokenizer encodes as one token.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable
from typing import Any

from seqlab.explorer.model_api import _lm, _text, _token_json, _window, answer
from seqlab.explorer.runs import ExplorerLM, RunRegistry
from seqlab.explorer.validation import Payload, RequestError

LENS_TOP_K = 3
MAX_TOKEN_CHARS = 100
MAX_SIDE_BY_SIDE = 6  # seq2seq runs one side-by-side request measures


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


def _finite(values: list) -> list:
    """Nested floats with NaN (no next token) as None."""
    return [_finite(v) if isinstance(v, list) else (None if isinstance(v, float) and math.isnan(v) else v)
            for v in values]


def _notes(result) -> list[dict[str, Any]]:
    return [note.as_json() for note in result.notes]


def _scale(values, kind: str) -> dict[str, float]:
    from seqlab.interpret.notes import colour_scale

    return colour_scale(values, kind)


def _limit(runs: RunRegistry) -> float:
    from seqlab.interpret.cost import LIMIT_SECONDS

    return getattr(runs, "interpret_limit", None) or LIMIT_SECONDS


def _afford(runs: RunRegistry, cost, command: list[str]) -> None:
    """Refuse a request over the explorer's limit, saying how much it needs and how to run it anyway."""
    from seqlab.interpret.cost import CostLimitError, check_cost

    line = " ".join(shlex.quote(part) for part in command)
    try:
        check_cost(cost, _limit(runs), line)
    except CostLimitError as exc:
        raise RequestError(str(exc), "too_costly", estimate=cost.words(), rows=cost.rows,
                           positions=round(cost.positions), layers=cost.layers, seconds=round(cost.seconds, 1),
                           limit=exc.limit_seconds, command=line) from None


def _command(lm: ExplorerLM, analysis: str, *flags: str) -> list[str]:
    return ["seqlab", "interpret", analysis, "--run", lm.run.id, *flags]


# --- language-model endpoints -------------------------------------------------------------------
def interpret_lens(p: Payload, runs: RunRegistry) -> dict:
    """The logit lens of the text: rows 0 (embedding) .. L (the model's output), one column per token.
    top_ids/top_probs [row][position][k], top_text the pieces; target_prob/target_rank [row][position]
    for the actual next token (null and 0 in the last column, which has none)."""
    from seqlab.interpret import logit_lens
    from seqlab.interpret.cost import estimate

    lm = _lm(p, runs)
    text = _text(p)
    top_k = p.integer("top_k", LENS_TOP_K, 1, 10)
    p.finish()
    ids, truncated = _prompt(lm, text)
    _afford(runs, estimate(lm.model, "lens", seq=len(ids)), _command(lm, "lens", "--text", text))
    lens = logit_lens(lm.model, ids, top_k=top_k)
    top_ids = lens.top_ids.tolist()
    pieces = {i: lm.tokenizer.vocab[i].decode("utf-8", errors="replace") for i in set(lens.top_ids.flatten().tolist())}
    return {"tokens": _tokens(lm, ids), "truncated": truncated, "top_ids": top_ids,
            "top_text": [[[pieces[i] for i in cell] for cell in row] for row in top_ids],
            "top_probs": lens.top_probs.tolist(), "target_prob": _finite(lens.target_prob.tolist()),
            "target_rank": lens.target_rank.tolist(), "layers": len(lm.model.layers), "notes": _notes(lens)}


def interpret_attribute(p: Payload, runs: RunRegistry) -> dict:
    """Direct logit attribution at ``position`` (default the last token) to ``target`` (default: the
    model's top token there, chosen by the library), minus ``baseline`` when given: embed, heads
    [layer][head], mlps [layer] and the total, which they sum to; ``scale`` for the bars."""
    from seqlab.interpret import direct_logit_attribution
    from seqlab.interpret.cost import estimate

    lm = _lm(p, runs)
    text = _text(p)
    target, baseline = _named_token(lm, p, "target"), _named_token(lm, p, "baseline")
    ids, truncated = _prompt(lm, text)
    position = _position(p, len(ids))
    p.finish()
    _afford(runs, estimate(lm.model, "attribute", seq=len(ids)), _command(lm, "attribute", "--text", text))
    parts = direct_logit_attribution(lm.model, ids, position=position, target=target, baseline=baseline)
    values = [parts.embed, *parts.heads.flatten().tolist(), *parts.mlps.tolist()]
    return {"tokens": _tokens(lm, ids), "truncated": truncated, "position": position,
            "target": _token_json(lm, parts.target), "baseline": None if baseline is None else _token_json(lm, baseline),
            "embed": parts.embed, "heads": parts.heads.tolist(), "mlps": parts.mlps.tolist(), "total": parts.total,
            "scale": _scale(values, "attribution"), "notes": _notes(parts)}


def interpret_patch(p: Payload, runs: RunRegistry) -> dict:
    """Activation patching of ``clean`` into ``corrupt`` (the same number of tokens): recovery
    [layer][position] (where resid_pre or mlp_out) or [layer][head][position] (head_out) of the
    logit difference target - baseline at the last token; 0 = as corrupted, 1 = as clean. The
    library chooses the defaults: the target is the clean prompt's top token, the baseline the
    corrupted prompt's (or, when the two agree, the clean prompt's second)."""
    from seqlab.interpret import patch
    from seqlab.interpret.cost import estimate

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
    _afford(runs, estimate(lm.model, "patch", seq=len(clean), heads_rows=where == "head_out"),
            _command(lm, "patch", "--clean", clean_text, "--corrupt", corrupt_text, "--where", where))
    try:
        result = patch(lm.model, clean, corrupt, target=target, baseline=baseline, where=where)
    except ValueError as exc:
        if "same token" in str(exc):
            raise RequestError("the target and the baseline are the same token, so their logit difference is 0 on "
                               "both prompts: name two different tokens", "patch_same") from None
        raise
    return {"clean_tokens": _tokens(lm, clean), "corrupt_tokens": _tokens(lm, corrupt),
            "truncated": clean_cut or corrupt_cut, "where": where, "recovery": result.recovery.tolist(),
            "target": _token_json(lm, result.target), "baseline": _token_json(lm, result.baseline),
            "changed": [i for i, (a, b) in enumerate(zip(clean, corrupt)) if a != b],
            "scale": _scale(result.recovery, "recovery"), "notes": _notes(result)}


def interpret_knockout(p: Payload, runs: RunRegistry) -> dict:
    """Attention knockout into ``position`` (default the last token): drops [layer][source], the fall
    in log p(target) when every head of the layer is stopped from reading that source token. The
    library chooses the default target (the model's top token there) and says when the prediction
    is saturated (``notes``); ``p`` is the target's probability, ``scale`` the drawing's range."""
    from seqlab.interpret import knockout
    from seqlab.interpret.cost import estimate

    lm = _lm(p, runs)
    text = _text(p)
    target = _named_token(lm, p, "target")
    ids, truncated = _prompt(lm, text)
    position = _position(p, len(ids))
    p.finish()
    _afford(runs, estimate(lm.model, "knockout", seq=len(ids), position=position),
            _command(lm, "knockout", "--text", text, "--position", str(position)))
    result = knockout(lm.model, ids, position=position, target=target)
    return {"tokens": _tokens(lm, ids), "truncated": truncated, "position": position,
            "target": _token_json(lm, result.target), "p": result.p, "drops": result.drops.tolist(),
            "scale": _scale(result.drops, "drop"), "notes": _notes(result)}


def interpret_heads(p: Payload, runs: RunRegistry) -> dict:
    """Every head's four scores on random tokens repeated once (``seqlab.interpret.head_scores``,
    seq_len min(32, context // 2), 8 sequences, seed 0) in the seqlab ``convention`` (or
    "transformerlens"), and its role (``head_roles``, seqlab convention)."""
    from seqlab.interpret import CONVENTIONS, ROLE_THRESHOLDS, ROLES, head_roles, head_scores
    from seqlab.interpret.cost import estimate

    lm = _lm(p, runs)
    convention = p.choice("convention", "seqlab", CONVENTIONS)
    p.finish()
    seq_len = min(32, lm.model.config.context_length // 2)
    _afford(runs, estimate(lm.model, "heads", seq=2 * seq_len, batches=8), _command(lm, "heads"))
    scores = head_scores(lm.model, seq_len=seq_len)
    shown = scores if convention == "seqlab" else head_scores(lm.model, seq_len=seq_len, convention=convention)
    return {"roles": head_roles(scores), "scores": {role: shown[role].tolist() for role in ROLES},
            "thresholds": dict(ROLE_THRESHOLDS), "role_names": list(ROLES), "seq_len": seq_len,
            "convention": convention}


# --- one question, every encoder-decoder ---------------------------------------------------------
S2S_QUESTIONS = ("depends", "knockout", "patch", "lens")


def _seq2seq_runs(p: Payload, runs: RunRegistry) -> list[str]:
    """The ``runs`` field (a list of run ids) or, by default, every seq2seq run, at most MAX_SIDE_BY_SIDE."""
    given = p._get("runs", None)
    if given is None:
        ids = [run.id for run in runs.runs if run.kind == "seq2seq"]
        if not ids:
            raise RequestError("no seq2seq run to compare; train some with `seqlab paths --fast --out DIR` and start "
                               "`seqlab explore --paths DIR` (or give them with --run)", "no_s2s_run")
        return ids[:MAX_SIDE_BY_SIDE]
    if not isinstance(given, list) or not given or len(given) > MAX_SIDE_BY_SIDE or \
            not all(isinstance(r, str) for r in given):
        raise RequestError(f"runs must be a list of 1 to {MAX_SIDE_BY_SIDE} run ids, got {given!r}"[:200])
    return given


def interpret_seq2seq(p: Payload, runs: RunRegistry) -> dict:
    """One ``question`` asked of several seq2seq runs side by side (by default every seq2seq run the
    explorer was given; with --paths, the experiment's runs of each task): "depends" (how much each
    output step depends on each source position), "knockout" (the drop in log p when the decoder may
    not attend to a source position, the largest over the decoder's layers), "patch" (recovery
    when a clean encoder state is patched into the ``corrupt`` source's run) or "lens" (the decoder's
    logit lens). ``text`` is the source; each run reads it with its own vocabulary and answers with
    its own greedy output (or ``target``). "depends" is ||d log p(y_t) / d e_s||_2, the gradient norm
    of the predicted token's log-probability (``measure``). ``results``: per run its arch, the source
    and output tokens, ``values`` [row][column], the row and column labels, ``scale`` and ``notes``; a
    run that cannot answer (no attention to cut, a text outside its vocabulary) gets ``error`` instead."""
    from seqlab.interpret.cost import Cost, estimate

    question = p.choice("question", "depends", S2S_QUESTIONS)
    text = p.string("text", "", 400)
    if text == "":
        raise RequestError("text is empty; type a source sentence", "text_empty")
    corrupt = p.string("corrupt", "", 400)
    target = p.string("target", "", 400) or None
    ids = _seq2seq_runs(p, runs)
    p.finish()
    if question == "patch" and not corrupt:
        raise RequestError("patching needs a corrupted source (corrupt) of the same length", "text_empty")
    loaded = [(run_id, runs.seq2seq(run_id)) for run_id in ids]
    costs = [estimate(run.model, question, source=len(run.src_vocab.encode(text)) or 1,
                      steps=2 * len(text) + 2, patches=run.model.config.num_encoder_layers * max(1, len(text)))
             for _, run in loaded]
    total = Cost(sum(c.rows for c in costs), max(c.positions for c in costs), max(c.layers for c in costs),
                 sum(c.flops for c in costs))
    _afford(runs, total, ["seqlab", "interpret", question, "--run", ids[0], "--text", text, "--json"])
    results = []
    for run_id, run in loaded:
        try:
            results.append({"run": run_id, **_ask(run, question, text, corrupt, target)})
        except (ValueError, TypeError) as exc:
            results.append({"run": run_id, "arch": run.model.config.arch, "error": str(exc)})
    return {"question": question, "text": text, "results": results}


def _ask(run, question: str, text: str, corrupt: str, target: str | None) -> dict:
    from seqlab.interpret import knockout, logit_lens, patch, token_dependencies

    model = run.model
    src = run.src_vocab.encode(text)
    if not src:
        raise ValueError("the text has no token this model's vocabulary knows")
    tgt = None if target is None else run.tgt_vocab.encode(target)
    piece = lambda vocab, i: vocab.decode([i]) or "?"
    source = [piece(run.src_vocab, i) for i in src]
    measure = None
    if question == "depends":
        result = token_dependencies(model, src, target=tgt)
        values, kind, rows_axis, measure = result.values, "dependency", "step", result.measure
    elif question == "knockout":
        result = knockout(model, src, target=tgt)
        values, kind, rows_axis = result.drops.amax(0), "drop", "step"  # the strongest attention's cut
    elif question == "lens":
        result = logit_lens(model, src, target=tgt, top_k=1)
        values, kind, rows_axis = result.target_prob.T, "probability", "step"
    else:
        result = patch(model, src, run.src_vocab.encode(corrupt), target=tgt, where="encoder")
        values, kind, rows_axis = result.recovery, "recovery", "layer"
    predicted = result.predicted
    output = [piece(run.tgt_vocab, i) for i in predicted[:-1]] + ["</s>"]
    columns = result.rows if question == "lens" else source  # lens: the decoder's layers
    rows = result.rows if question == "patch" else output
    return {"arch": model.config.arch, "cell": model.config.cell if model.config.arch != "transformer" else None,
            "source": source, "output": output, "values": values.tolist(), "rows": rows, "columns": columns,
            "row_axis": rows_axis, "scale": _scale(values, kind), "notes": _notes(result),
            "step": result.position if question == "patch" else None, "measure": measure}


INTERPRET_ENDPOINTS: dict[str, Callable[[Payload, RunRegistry], Any]] = {
    "interpret/lens": interpret_lens,
    "interpret/attribute": interpret_attribute,
    "interpret/patch": interpret_patch,
    "interpret/knockout": interpret_knockout,
    "interpret/heads": interpret_heads,
    "interpret/seq2seq": interpret_seq2seq,
}


def run_interpret_endpoint(name: str, data: dict[str, Any], runs: RunRegistry) -> dict:
    """Validate ``data`` and run endpoint ``name`` (a key of INTERPRET_ENDPOINTS) on ``runs``, with
    the model endpoints' errors (:func:`seqlab.explorer.model_api.answer`)."""
    return answer(INTERPRET_ENDPOINTS[name], data, runs)
