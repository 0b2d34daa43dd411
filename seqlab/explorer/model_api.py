"""The explorer's API over the user's own runs: tokens, attention, next-token candidates, sampling,
the loss curve and the forward-pass shapes of a trained language model.

Like ``seqlab.explorer.api``, no formula lives here: each endpoint validates its request, calls the
library (the run's tokenizer, ``seqlab.lm.inspection``, the sampling filters and generator of
``seqlab generate``) and turns tensors into JSON. Every endpoint takes an optional ``run`` (the
directory as given to ``--run``; default: the first language-model run).

Text longer than the model's context is cut to its first ``context_length`` tokens for the token,
attention, shape and next-token panels (the response says ``truncated``); sampling and generation
continue the whole text with ``seqlab generate``'s sliding window.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from seqlab.explorer.runs import ExplorerLM, RunRegistry
from seqlab.explorer.validation import Payload, RequestError

MAX_TEXT_CHARS = 4000
TOP_CANDIDATES = 20
MAX_GENERATE_TOKENS = 200


# --- shared request parts ----------------------------------------------------------------------
def _run_id(p: Payload) -> str | None:
    run = p._get("run", None)
    if run is not None and not isinstance(run, str):
        raise RequestError(f"run must be a string (a --run directory), got {run!r}"[:120])
    return run


def _lm(p: Payload, runs: RunRegistry) -> ExplorerLM:
    return runs.lm(_run_id(p))


def _text(p: Payload) -> str:
    text = p.string("text", "", MAX_TEXT_CHARS)
    if text == "":
        raise RequestError("text is empty; type some text for the model to read", "text_empty")
    return text


def _encode(lm: ExplorerLM, text: str) -> list[int]:
    return lm.tokenizer.encode(text)


def _window(lm: ExplorerLM, ids: list[int]) -> tuple[list[int], bool]:
    """The first context_length ids, and whether anything was cut."""
    context = lm.model.config.context_length
    return ids[:context], len(ids) > context


def _token_json(lm: ExplorerLM, token_id: int) -> dict[str, Any]:
    piece = lm.tokenizer.vocab[token_id]
    return {"id": token_id, "text": piece.decode("utf-8", errors="replace"), "bytes": list(piece)}


def _filters(p: Payload, *, allow_greedy: bool) -> tuple[float, int | None, float]:
    """temperature, top_k (0 or null = off, as for `seqlab generate --top-k`), top_p, with messages the
    page translates. A tiny positive temperature is the greedy limit (seqlab.inference.sampling)."""
    temperature = p.number("temperature", 1.0, -1e9, 1e9)
    if temperature > 10:
        raise RequestError(f"temperature must be at most 10, got {temperature:g}")
    if temperature < 0 or (temperature == 0 and not allow_greedy):
        raise RequestError(
            f"temperature must be > 0 to show a distribution, got {temperature:g} (at 0 `seqlab generate` is "
            "greedy: it always takes the top token)", "temperature", value=temperature)
    top_k = p.optional_integer("top_k", -10**9, 10**9)
    if top_k is not None and top_k < 0:
        raise RequestError(f"top_k must be a positive integer, or 0 or null for off; got {top_k}", "top_k", value=top_k)
    top_p = p.number("top_p", 1.0, -1e9, 1e9)
    if not 0 < top_p <= 1:
        raise RequestError(f"top_p must be in (0, 1], got {top_p:g}", "top_p", value=top_p)
    return temperature, top_k, top_p


def _index(p: Payload, name: str, count: int) -> int:
    value = p.integer(name, 0, -10**9, 10**9)
    if not 0 <= value < count:
        raise RequestError(f"{name} {value} is out of range: this model has {count} {name}s (0..{count - 1})",
                           f"{name}_range", value=value, count=count, last=count - 1)
    return value


# --- endpoints ----------------------------------------------------------------------------------
def runs_list(p: Payload, runs: RunRegistry) -> dict:
    """The runs, each with the error its panels would get (so the page need not ask to find out)."""
    p.finish()
    problems = {}
    for kind in ("lm", "seq2seq"):
        try:
            runs.find(None, kind)
            problems[kind] = None
        except RequestError as exc:
            problems[kind] = exc.body()
    return {"runs": runs.summary(), "no_lm_run": problems["lm"], "no_s2s_run": problems["seq2seq"],
            "paths": runs.paths_dir is not None, "induction": getattr(runs, "induction_dir", None) is not None}


def lm_info(p: Payload, runs: RunRegistry) -> dict:
    """The run's config.json, model size and loss curve (train and validation, from log.jsonl)."""
    lm = _lm(p, runs)
    p.finish()
    train = [[r["step"], r["train_loss"]] for r in lm.log if "train_loss" in r]
    val = [[r["step"], r["val_loss"]] for r in lm.log if "val_loss" in r]
    from seqlab.lm.telemetry import head_series

    return {"run": lm.run.id, "step": lm.step, "config": lm.config, "model": vars(lm.model.config).copy(),
            "parameters": lm.model.num_parameters(), "loss": {"train": train, "val": val},
            "heads": head_series(lm.log)}  # --track-heads: each score's best head per evaluation, or None


def lm_tokens(p: Payload, runs: RunRegistry) -> dict:
    lm = _lm(p, runs)
    text = _text(p)
    p.finish()
    ids = _encode(lm, text)
    window, truncated = _window(lm, ids)
    return {"tokens": [_token_json(lm, i) for i in window], "truncated": truncated, "total": len(ids),
            "context_length": lm.model.config.context_length,
            "cut_text": lm.tokenizer.decode(ids[len(window):]) if truncated else ""}


def _trace(lm: ExplorerLM, text: str):
    from seqlab.lm.inspection import trace_forward

    window, truncated = _window(lm, _encode(lm, text))
    return window, truncated, trace_forward(lm.model, window)


def lm_attention(p: Payload, runs: RunRegistry) -> dict:
    """One head's (T, T) weights: rows are queries, columns keys (the upper triangle is 0)."""
    lm = _lm(p, runs)
    text = _text(p)
    config = lm.model.config
    layer = _index(p, "layer", config.num_layers)
    head = _index(p, "head", config.num_heads)
    p.finish()
    window, truncated, trace = _trace(lm, text)
    return {"tokens": [_token_json(lm, i) for i in window], "weights": trace.attention[layer][head].tolist(),
            "layer": layer, "head": head, "truncated": truncated}


def lm_heads(p: Payload, runs: RunRegistry) -> dict:
    """Every layer's and head's weights at once, for the head grid: weights[layer][head][query][key]."""
    lm = _lm(p, runs)
    text = _text(p)
    p.finish()
    window, truncated, trace = _trace(lm, text)
    return {"tokens": [_token_json(lm, i) for i in window], "weights": [w.tolist() for w in trace.attention],
            "truncated": truncated}


def lm_shapes(p: Payload, runs: RunRegistry) -> dict:
    lm = _lm(p, runs)
    text = _text(p)
    p.finish()
    window, truncated, trace = _trace(lm, text)
    config = lm.model.config
    return {"shapes": [[name, list(shape)] for name, shape in trace.shapes], "truncated": truncated,
            "num_heads": config.num_heads, "num_layers": config.num_layers}


def lm_next(p: Payload, runs: RunRegistry) -> dict:
    """The top 20 next tokens after the text: probability at the temperature, whether top-k/top-p
    keep them and their renormalised probability (``seqlab generate``'s filters)."""
    import torch

    from seqlab.lm.inspection import next_token_candidates

    lm = _lm(p, runs)
    text = _text(p)
    temperature, top_k, top_p = _filters(p, allow_greedy=False)
    p.finish()
    window, truncated = _window(lm, _encode(lm, text))
    with torch.no_grad():
        logits = lm.model(torch.tensor([window]))[0, -1]
    c = next_token_candidates(logits, temperature, top_p=top_p, top_k=top_k, count=TOP_CANDIDATES)
    candidates = [{**_token_json(lm, token), "prob": prob, "kept": kept > 0, "filtered_prob": kept}
                  for token, prob, kept in zip(c.ids.tolist(), c.probs.tolist(), c.filtered.tolist())]
    return {"candidates": candidates, "kept_total": c.kept_total, "vocab_size": lm.model.config.vocab_size,
            "truncated": truncated}


def _generation(p: Payload, runs: RunRegistry, default_tokens: int):
    lm = _lm(p, runs)
    text = _text(p)
    temperature, top_k, top_p = _filters(p, allow_greedy=True)
    max_tokens = p.integer("max_tokens", default_tokens, 1, MAX_GENERATE_TOKENS)
    seed = p.optional_integer("seed", 0, 2**31 - 1)
    p.finish()
    return lm, _encode(lm, text), dict(temperature=temperature, top_p=top_p, top_k=top_k, seed=seed), max_tokens


def lm_sample(p: Payload, runs: RunRegistry) -> dict:
    """Draw one token after the text (as `seqlab generate` would) and append it."""
    import torch

    from seqlab.inference.generate import generate

    lm, ids, options, _ = _generation(p, runs, 1)
    with torch.no_grad():
        (token,) = generate(lm.model, ids, 1, eos_id=None, **options)
    return {"token": _token_json(lm, token), "text": lm.tokenizer.decode(ids + [token])}


def lm_generate(p: Payload, runs: RunRegistry) -> Iterator[dict]:
    """Stream a continuation (one JSON line per piece of text) with `seqlab generate`'s generator.

    Lines: {"piece": text} as tokens complete UTF-8 characters, then {"done": true, "tokens": n,
    "stopped": "eos" | "limit"}. Stops at <|endoftext|>.
    """
    from seqlab.inference.generate import generate_stream

    lm, ids, options, max_tokens = _generation(p, runs, 40)
    eos = lm.tokenizer.eot_id
    decoder = lm.tokenizer.stream_decoder()

    def lines() -> Iterator[dict]:
        count, stopped = 0, "limit"
        for token in generate_stream(lm.model, ids, max_tokens, eos_id=eos, **options):
            count += 1
            if token == eos:
                stopped = "eos"
                break
            piece = decoder.feed(token)
            if piece:
                yield {"piece": piece}
        tail = decoder.finish()
        if tail:
            yield {"piece": tail}
        yield {"done": True, "tokens": count, "stopped": stopped}

    return lines()


MAX_BEAM = 8


def _notes_json(notes) -> list[dict]:
    return [{"code": note.code, "params": note.params, "message": note.message} for note in notes]


def seq2seq_info(p: Payload, runs: RunRegistry) -> dict:
    """What the translate panel opens with: the run's task (or pairs file), a worked-example source
    (:func:`seqlab.seq2seq.coverage.example_source`), what the run knows (``known_inputs``), the
    architecture and the checkpoint step."""
    from seqlab.seq2seq.coverage import example_source, known_inputs, trained_lengths

    run_id = _run_id(p)
    p.finish()
    run = runs.seq2seq(run_id)
    cfg = run.train_config
    known = known_inputs(cfg, run.src_vocab, run.tgt_vocab)
    return {"run": str(run.run_dir), "task": cfg.task, "pairs": cfg.pairs, "example": example_source(cfg),
            "lengths": list(trained_lengths(cfg)), "arch": run.model.config.arch, "step": run.step,
            "vocab_kind": known["kind"], "source_size": known["source_size"],
            "words": sorted(known.get("words", {})), "formats": known.get("formats", [])}


def seq2seq_translate(p: Payload, runs: RunRegistry) -> dict:
    """Translate with a seq2seq run (greedy for beam 1, else beam search, as `seqlab seq2seq
    translate`), and the decoder's cross-attention over the source: one [head][target][source]
    array per decoder layer, its mean over heads per layer, and for a character model the same at
    word level (``seqlab.seq2seq.alignment.word_alignment``). Target rows are the output tokens then
    </s>; an RNN without attention has none. ``notes``: how the text lies outside the run's
    training (``seqlab.seq2seq.coverage.check_input``), each with a code the page translates."""
    import torch

    from seqlab.seq2seq.alignment import word_alignment
    from seqlab.seq2seq.coverage import check_input

    run_id = _run_id(p)
    text = _text(p)
    beam = p.integer("beam", 1, 1, MAX_BEAM)
    p.finish()
    run = runs.seq2seq(run_id)
    from seqlab.model.taps import attention_patterns
    from seqlab.seq2seq.config import BOS_ID
    from seqlab.seq2seq.decoding import decode_limit, translate_ids

    src = run.src_vocab.encode(text)
    if not src:
        raise RequestError("text is empty; type some text for the model to read", "text_empty")
    (out,) = translate_ids(run.model, [src], beam_size=beam, max_len=decode_limit(run.model, [len(src) + 1]),
                           device="cpu")
    maps = list(attention_patterns(run.model, torch.tensor([src]), torch.tensor([[BOS_ID, *out]]))[:, 0])
    label = lambda vocab, ids: [vocab.decode([i]) for i in ids]
    output = run.tgt_vocab.decode(out)
    words = None
    if maps and run.src_vocab.kind == "char" and run.tgt_vocab.kind == "char" and len(output) == len(out):
        stacked = torch.stack(maps)  # (layers, heads, T, S)
        aligned = word_alignment(stacked, text, output)
        if aligned is not None:
            words = {"source": aligned.source, "output": aligned.output,
                     "cross_attention": aligned.weights.tolist(), "mean_attention": aligned.weights.mean(1).tolist()}
    return {"output": output, "source_tokens": label(run.src_vocab, src),
            "output_tokens": label(run.tgt_vocab, out) + ["</s>"], "arch": run.model.config.arch,
            "cross_attention": [m.tolist() for m in maps], "mean_attention": [m.mean(0).tolist() for m in maps],
            "words": words, "notes": _notes_json(check_input(text, run.src_vocab, run.train_config)),
            "step": run.step}


def paths(p: Payload, runs: RunRegistry) -> dict:
    """The information-paths results given with --paths: accuracy vs length per architecture."""
    from seqlab.explorer.runs import read_paths_results

    p.finish()
    if runs.paths_dir is None:
        raise RequestError("no information-paths results: run `seqlab paths --out DIR`, then start "
                           "`seqlab explore --paths DIR`", "no_paths")
    return read_paths_results(runs.paths_dir)


def runs_compare(p: Payload, runs: RunRegistry) -> dict:
    """Every --run's loss curves side by side, as ``seqlab compare`` reads them
    (:func:`seqlab.sweep.records.read_run`): per run its status, steps, final and best validation
    loss, and the points [step, loss] of both curves. Runs without a loss log are listed in
    ``skipped`` with the reason; with no run to show, ``runs`` is empty (the page says how to start)."""
    from seqlab.sweep.records import read_run

    p.finish()
    shown, skipped = [], []
    for run in runs.runs:
        if run.experiment is not None:  # an experiment's own runs: its section draws them
            continue
        try:
            record = read_run(run.path, name=run.id)
        except (OSError, ValueError) as exc:
            skipped.append({"id": run.id, "error": str(exc)})
            continue
        if not (record.train or record.val):
            skipped.append({"id": run.id, "error": f"{run.path / 'log.jsonl'} holds no losses"})
            continue
        shown.append({"id": run.id, "status": record.status, "steps": record.steps,
                      "final_val_loss": record.final_val_loss, "best_val_loss": record.best_val_loss,
                      "train": [[step, loss] for step, _, _, loss in record.train],
                      "val": [[step, loss] for step, _, _, loss in record.val]})
    return {"runs": shown, "skipped": skipped}


MODEL_ENDPOINTS: dict[str, Callable[[Payload, RunRegistry], Any]] = {
    "runs": runs_list,
    "lm/info": lm_info,
    "lm/tokens": lm_tokens,
    "lm/attention": lm_attention,
    "lm/heads": lm_heads,
    "lm/shapes": lm_shapes,
    "lm/next": lm_next,
    "lm/sample": lm_sample,
    "lm/generate": lm_generate,
    "seq2seq/info": seq2seq_info,
    "seq2seq/translate": seq2seq_translate,
    "paths": paths,
    "runs/compare": runs_compare,
}


def answer(endpoint: Callable[[Payload, RunRegistry], Any], data: dict[str, Any], runs: RunRegistry) -> Any:
    """``endpoint``'s answer to ``data``: a library ValueError (which names the value) becomes a 400
    with its message, and a non-finite number in a dict answer a 400 saying the weights are damaged."""
    try:
        result = endpoint(Payload(data), runs)
    except RequestError:
        raise
    except ValueError as exc:  # library functions name the value they reject
        raise RequestError(str(exc)) from None
    if isinstance(result, dict):
        try:
            json.dumps(result, allow_nan=False)
        except ValueError:
            raise RequestError("the model produced a non-finite number (NaN or infinity); its weights are "
                               "probably damaged: retrain the run", "non_finite") from None
    return result
