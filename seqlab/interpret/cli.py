"""CLI: ``seqlab interpret lens|attribute|patch|knockout|heads|depends`` on a run of either family.

A language-model run reads ``--text`` as its prompt; a seq2seq run reads it as the source sentence
(``--target`` its target text, by default the model's own greedy output). Each analysis prints a
table and the notes that say when the numbers cannot show anything; ``--json`` prints the result as
JSON on standard output instead; with ``--out DIR`` it also writes NAME.png (a labelled heatmap
whose colour scale has a floor and whose title gives the absolute range) and NAME.json. Only the
standard library is imported here; torch loads inside the handlers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from seqlab.cli_types import check_text, non_negative_int, positive_int

USER_ERRORS = (ValueError, TypeError, FileNotFoundError, FileExistsError, IsADirectoryError, NotADirectoryError,
               PermissionError, KeyError, RuntimeError)
TOKEN_HELP = "a token: text that is exactly one token (e.g. ' cat'), or id:N"
LM_WHERE = ("resid_pre", "head_out", "mlp_out")
S2S_WHERE = ("source", "encoder", "decoder", "context")


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("interpret", help="information flow in a trained model: lens, attribution, patching, ...",
                              description="Measure how information flows through a run's model: a language model "
                                          "(--text is the prompt) or an encoder-decoder (--text is the source).")
    sub = p.add_subparsers(dest="interpret_command", metavar="ANALYSIS", required=True)

    def add(name: str, help_text: str, texts: tuple[str, ...] = ("--text",)) -> argparse.ArgumentParser:
        q = sub.add_parser(name, help=help_text, description=help_text)
        q.add_argument("--run", required=True, metavar="DIR", help="a language-model or seq2seq run directory")
        q.add_argument("--device", default="cpu", help="torch device (default cpu)")
        q.add_argument("--out", metavar="DIR", help=f"also write {name}.png and {name}.json here (a new or empty "
                       "folder, or one holding only other analyses' files)")
        q.add_argument("--overwrite", action="store_true", help="with --out: replace the folder whole, whatever it holds")
        q.add_argument("--json", action="store_true", help="print the result as JSON on standard output (no table)")
        for flag in texts:
            q.add_argument(flag, required=True, help="prompt text (a seq2seq run: the source sentence)")
        q.set_defaults(func=_run, analysis=name)
        return q

    target_help = f"{TOKEN_HELP} (default: the model's top token there); a seq2seq run: the target text " \
                  "(default: the model's own output)"
    q = add("lens", "logit lens: the top token of the residual stream (a seq2seq run: the decoder) after each layer")
    q.add_argument("--top-k", type=positive_int, default=5, help="tokens kept per cell in the JSON (5)")
    q.add_argument("--target", help="a seq2seq run: the target text (default: the model's own output)")
    q = add("attribute", "direct logit attribution of each head, MLP and the embedding at one position")
    q.add_argument("--position", type=int, default=-1, help="position of the prediction (default -1, the last)")
    q.add_argument("--step", type=int, default=0, help="a seq2seq run: the decoder step (default 0)")
    q.add_argument("--target", help=target_help)
    q.add_argument("--baseline", help=f"{TOKEN_HELP}: attribute the logit difference target - baseline")
    q = add("patch", "activation patching: recovery of the clean prediction in the corrupted run",
            ("--clean", "--corrupt"))
    q.add_argument("--target", help=f"{TOKEN_HELP} (default: the clean prompt's top next token); a seq2seq run: "
                                    "the target text (default: the clean source's output)")
    q.add_argument("--baseline", help=f"{TOKEN_HELP} (default: the corrupted prompt's top next token)")
    q.add_argument("--where", default=None, choices=LM_WHERE + S2S_WHERE,
                   help="what is patched: a language model's resid_pre (default), head_out or mlp_out; a seq2seq "
                        "model's source, encoder (default), decoder or context")
    q.add_argument("--step", type=int, default=None, help="a seq2seq run: the decoder step read (default: the first "
                                                          "where the corrupted source changes the prediction)")
    q = add("knockout", "attention knockout: drop in log p(target) when an attention edge is cut (a seq2seq run: "
                        "the decoder's cross-attention to each source position)")
    q.add_argument("--position", type=int, default=-1, help="position of the prediction (default -1)")
    q.add_argument("--target", help=target_help)
    q = add("heads", "head roles: previous-token, duplicate, induction and first-token scores", ())
    q.add_argument("--seq-len", type=positive_int, default=32, help="random tokens before the repeat (32)")
    q.add_argument("--batches", type=positive_int, default=8, help="random sequences (8)")
    q.add_argument("--seed", type=non_negative_int, default=0, help="seed of the random tokens (0)")
    q.add_argument("--convention", choices=("seqlab", "transformerlens"), default="seqlab",
                   help="seqlab: mean over the queries a role applies to (default); transformerlens: "
                        "TransformerLens's head detector, over every query (half for induction heads)")
    q = add("depends", "dependencies: gradient x input of each earlier token per layer (a seq2seq run: how much each "
                       "output step depends on each source position)")
    q.add_argument("--position", type=int, default=-1, help="position of the prediction (default -1)")
    q.add_argument("--target", help=target_help)
    q.add_argument("--path", choices=("all", "attention", "state"), default="all",
                   help="a seq2seq RNN with attention: all paths (default), through attention only, or through the "
                        "recurrent state only")


def _run(args: argparse.Namespace) -> int:
    # exit 2 for the command line (a device, an analysis flag, a run of a kind the analysis cannot read),
    # 1 for a run that cannot be read or an --out that cannot be written
    usage = True
    try:
        from seqlab.runtime import resolve_device

        resolve_device(args.device)
        usage = False
        subject = _load(args)
        usage = True
        report = (LM_ANALYSES if subject.kind == "lm" else S2S_ANALYSES)[args.analysis](subject, args)
        _check_json(report["json"])
        usage = False
        if args.json:
            print(json.dumps(report["json"], ensure_ascii=False, allow_nan=False))
        else:
            print(report["table"])
            for note in report["json"].get("notes", []):
                print(f"note: {note['message']} {note['suggestion']}")
        if args.out:
            _write(Path(args.out), args.analysis, report, overwrite=args.overwrite, quiet=args.json)
    except USER_ERRORS as exc:
        print(f"seqlab interpret {args.analysis}: error: {exc}", file=sys.stderr)
        return 2 if usage and not isinstance(exc, (FileNotFoundError, PermissionError)) else 1
    return 0


class _Subject:
    """A loaded run: ``kind`` "lm" (model, tokens) or "seq2seq" (model, src_vocab, tgt_vocab)."""

    def __init__(self, kind: str, model, **parts):
        self.kind, self.model = kind, model
        self.__dict__.update(parts)


def _load(args) -> _Subject:
    from seqlab.interpret.inputs import check_finite_weights
    from seqlab.runs.kinds import Kind, run_kind

    if run_kind(args.run) is Kind.SEQ2SEQ:
        from seqlab.seq2seq.loading import load_run

        run = load_run(args.run, device=args.device)
        check_finite_weights(run.model)
        return _Subject("seq2seq", run.model, src_vocab=run.src_vocab, tgt_vocab=run.tgt_vocab)
    from seqlab.lm import load_model

    model, tokenizer, _ = load_model(run=args.run, device=args.device)
    if tokenizer is None:
        raise FileNotFoundError(f"{Path(args.run) / 'tokenizer'} does not exist: the run has no tokenizer")
    check_finite_weights(model)
    return _Subject("lm", model, tokens=_Tokens(tokenizer, model.config.vocab_size))


def _check_json(value: Any) -> None:
    """No NaN or infinity in what is printed or written: JSON has no such numbers."""
    try:
        json.dumps(value, allow_nan=False)
    except ValueError:
        raise ValueError("the model produced a non-finite number (NaN or infinity); its weights are probably "
                         "damaged: retrain the run") from None


class _Tokens:
    """Text <-> ids and printable token labels for one tokenizer."""

    def __init__(self, tokenizer, vocab_size: int):
        self.tokenizer, self.vocab_size = tokenizer, vocab_size

    def encode(self, text: str, flag: str) -> list[int]:
        ids = self.tokenizer.encode(check_text(text, flag))
        if not ids:
            raise ValueError(f"{flag} is empty; give some text")
        return ids

    def one(self, value: str | None, flag: str) -> int | None:
        if value is None:
            return None
        if value.startswith("id:"):
            try:
                return int(value[3:])
            except ValueError:
                raise ValueError(f"{flag} {value!r}: after 'id:' give an integer token id") from None
        ids = self.tokenizer.encode(check_text(value, flag))
        if len(ids) != 1:
            raise ValueError(f"{flag} {value!r} is {len(ids)} tokens {ids}; give text that is one token, or id:N")
        return ids[0]

    def label(self, token: int) -> str:
        text = self.tokenizer.decode([int(token)])
        return repr(text)[1:-1] if text.strip() == text and text else repr(text)

    def labels(self, ids) -> list[str]:
        return [f"{i}:{self.label(t)}" for i, t in enumerate(ids)]


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[c])) for r in [header] + rows) for c in range(len(header))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)) for row in [header] + rows]
    return "\n".join(lines)


def _matrix_table(values, row_labels, col_labels, corner: str, fmt: str = "{:+.3f}") -> str:
    return _table([corner] + list(col_labels), [[r] + [fmt.format(float(v)) for v in row]
                                                for r, row in zip(row_labels, values)])


def _notes(result) -> list[dict]:
    return [note.as_json() for note in result.notes]


def _position(value: int, ids: list[int], flag: str = "--position") -> int:
    if not -len(ids) <= value < len(ids):
        raise ValueError(f"{flag} {value} is out of range for a prompt of {len(ids)} tokens")
    return value % len(ids)


def _signed_figure(values, kind: str, notes: list[dict], **figure) -> dict:
    """A diverging heatmap's arguments: its colour scale with the kind's floor (seqlab.interpret.notes)."""
    from seqlab.interpret.notes import colour_scale, range_words

    scale = colour_scale(values, kind)
    figure["title"] = f"{figure['title']}\n{range_words(scale)}"
    return dict(values=values, diverging=True, bound=scale["bound"], notes=[n["message"] for n in notes], **figure)


# --- language models ------------------------------------------------------------------------------
def _lm_lens(subject, args) -> dict:
    from seqlab.interpret import logit_lens

    tokens = subject.tokens
    ids = tokens.encode(args.text, "--text")
    if args.target is not None:
        raise ValueError("--target: the language model's lens scores each position's actual next token")
    lens = logit_lens(subject.model, ids, top_k=args.top_k)
    rows = [f"{i}:{tokens.label(t)}" for i, t in enumerate(ids)]
    layers = ["embed"] + [f"L{l}" for l in range(len(subject.model.layers))]
    return _lens_report(lens, rows, layers, tokens.label, {"tokens": ids}, "input token")


def _lens_report(lens, rows: list[str], layers: list[str], label, head: dict, row_title: str) -> dict:
    top, prob = lens.top_ids[..., 0].T.tolist(), lens.top_probs[..., 0].T.tolist()
    table = _table(["position"] + layers, [[r] + [f"{label(t)} {p:.2f}" for t, p in zip(top[i], prob[i])]
                                            for i, r in enumerate(rows)])
    shade = lens.target_prob.T.nan_to_num(0.0).tolist()
    cells = [[f"{label(t)}\n{p:.2f}" for t, p in zip(top[i], prob[i])] for i in range(len(rows))]
    return {"table": "top token and its probability after each layer (rows: position)\n" + table,
            "figure": dict(values=shade, row_labels=rows, col_labels=layers, cells=cells, bound=1.0,
                           title="Logit lens: top token per layer; colour = probability of the actual next token "
                                 "(scale 0 .. 1)",
                           colorbar="p(next token)", row_title=row_title, col_title="residual stream after", notes=[]),
            "json": {**head, "layers": layers, "top_ids": lens.top_ids.tolist(), "top_probs": lens.top_probs.tolist(),
                     "target_prob": lens.target_prob.nan_to_num(-1).tolist(), "target_rank": lens.target_rank.tolist(),
                     "note": "target_prob -1 / rank 0: no next token", "notes": []}}


def _lm_attribute(subject, args) -> dict:
    from seqlab.interpret import direct_logit_attribution

    tokens = subject.tokens
    ids = tokens.encode(args.text, "--text")
    _position(args.position, ids)
    result = direct_logit_attribution(subject.model, ids, position=args.position,
                                      target=tokens.one(args.target, "--target"),
                                      baseline=tokens.one(args.baseline, "--baseline"))
    heads, target, baseline = result.heads, result.target, result.baseline
    what = f"logit[{tokens.label(target)}]" + (f" - logit[{tokens.label(baseline)}]" if baseline is not None else "")
    layers = [f"L{l}" for l in range(heads.shape[0])]
    cols = [f"H{h}" for h in range(heads.shape[1])] + ["MLP"]
    values = [row + [m] for row, m in zip(heads.tolist(), result.mlps.tolist())]
    notes = _notes(result)
    table = (f"direct contribution to {what} at position {result.position}\n"
             + _matrix_table(values, layers, cols, "layer") + f"\nembed {result.embed:+.3f}   total {result.total:+.3f}")
    return {"table": table,
            "figure": _signed_figure(values, "attribution", notes, row_labels=layers, col_labels=cols, row_title="layer",
                                     col_title="head / MLP", colorbar=f"direct contribution to {what}",
                                     title=f"Direct logit attribution to {what} at position {result.position} "
                                           f"(embed {result.embed:+.2f}, total {result.total:+.2f})"),
            "json": {"tokens": ids, "target": target, "baseline": baseline, "position": result.position,
                     "embed": result.embed, "heads": heads.tolist(), "mlps": result.mlps.tolist(),
                     "total": result.total, "notes": notes}}


def _lm_patch(subject, args) -> dict:
    from seqlab.interpret import patch

    tokens = subject.tokens
    where = args.where or "resid_pre"
    if where not in LM_WHERE:
        raise ValueError(f"--where {where}: a language model patches {', '.join(LM_WHERE)}")
    clean, corrupt = tokens.encode(args.clean, "--clean"), tokens.encode(args.corrupt, "--corrupt")
    if len(clean) != len(corrupt):
        raise ValueError(f"--clean is {len(clean)} tokens and --corrupt {len(corrupt)}; patching needs prompts of "
                         "the same length in tokens")
    with _progress(args, len(clean)) as progress:
        result = patch(subject.model, clean, corrupt, target=tokens.one(args.target, "--target"),
                       baseline=tokens.one(args.baseline, "--baseline"), where=where, progress=progress)
    recovery = result.recovery
    cols = [f"{i}:{tokens.label(a)}" + ("" if a == b else f"/{tokens.label(b)}") for i, (a, b) in enumerate(zip(clean, corrupt))]
    if where == "head_out":
        flat = recovery.reshape(-1, recovery.shape[-1])
        rows = [f"L{l}H{h}" for l in range(recovery.shape[0]) for h in range(recovery.shape[1])]
    else:
        flat, rows = recovery, [f"L{l}" for l in range(recovery.shape[0])]
    what = f"logit[{tokens.label(result.target)}] - logit[{tokens.label(result.baseline)}]"
    notes = _notes(result)
    return {"table": f"recovery of {what} when the clean {where} is patched in (0 = corrupted, 1 = clean)\n"
                     + _matrix_table(flat.tolist(), rows, cols, "layer", "{:+.2f}"),
            "figure": _signed_figure(flat.tolist(), "recovery", notes, row_labels=rows, col_labels=cols,
                                     row_title="layer" + (" / head" if where == "head_out" else ""),
                                     col_title="position (clean/corrupt token)",
                                     colorbar="recovery (0 = corrupted, 1 = clean)",
                                     title=f"Activation patching of {where}: recovery of {what}"),
            "json": {"clean": clean, "corrupt": corrupt, "target": result.target, "baseline": result.baseline,
                     "where": where, "recovery": recovery.tolist(), "clean_metric": result.clean_metric,
                     "corrupt_metric": result.corrupt_metric, "notes": notes}}


def _lm_knockout(subject, args) -> dict:
    from seqlab.interpret import knockout

    tokens = subject.tokens
    ids = tokens.encode(args.text, "--text")
    _position(args.position, ids)
    result = knockout(subject.model, ids, position=args.position, target=tokens.one(args.target, "--target"))
    drops = result.drops.T  # (seq, L): positions as rows
    rows = tokens.labels(ids)
    layers = [f"L{l}" for l in range(drops.shape[1])]
    what = f"log p({tokens.label(result.target)}) at position {result.position} (p = {result.p:.4g})"
    notes = _notes(result)
    return {"table": f"drop in {what} when every head of the layer stops attending to the source\n"
                     + _matrix_table(drops.tolist(), rows, layers, "source"),
            "figure": _signed_figure(drops.tolist(), "drop", notes, row_labels=rows, col_labels=layers,
                                     row_title="source position", col_title="layer", colorbar=f"drop in {what}",
                                     title=f"Attention knockout: drop in {what} when the edge from the source is cut"),
            "json": {"tokens": ids, "position": result.position, "target": result.target, "p": result.p,
                     "drop": result.drops.tolist(), "note": "drop[layer][source]", "notes": notes}}


def _lm_heads(subject, args) -> dict:
    from seqlab.interpret import ROLE_THRESHOLDS, ROLES, head_roles, head_scores

    scores = head_scores(subject.model, seq_len=args.seq_len, batches=args.batches, seed=args.seed,
                         convention=args.convention)
    roles = head_roles(scores) if args.convention == "seqlab" else None
    L, H = scores["induction"].shape
    rows = [[f"L{l}H{h}"] + [f"{float(scores[r][l, h]):.3f}" for r in ROLES] + ([roles[l][h] or "-"] if roles else [])
            for l in range(L) for h in range(H)]
    labels = [f"L{l}H{h}" for l in range(L) for h in range(H)]
    values = [[float(scores[r][l, h]) for r in ROLES] for l in range(L) for h in range(H)]
    how = ("role = the best score at or above its threshold " + str(ROLE_THRESHOLDS) if roles else
           "TransformerLens's convention: sum(A * D) / sum(A) over every query row (roles are labelled in the seqlab "
           "convention only)")
    return {"table": f"head scores on {args.batches} x {args.seq_len} random tokens repeated once; {how}\n"
                     + _table(["head", *ROLES, *(["role"] if roles else [])], rows),
            "figure": dict(values=values, row_labels=labels, col_labels=list(ROLES), row_title="layer / head",
                           col_title="score", colorbar="mean attention weight", bound=1.0, notes=[],
                           title="Head roles: mean attention on the previous token, the earlier copy, "
                                 f"the token after it (induction), the first token ({args.convention} convention, "
                                 "scale 0 .. 1)",
                           cells=[[f"{v:.2f}" for v in row] for row in values]),
            "json": {"scores": {r: scores[r].tolist() for r in ROLES}, "roles": roles, "thresholds": ROLE_THRESHOLDS,
                     "convention": args.convention, "seq_len": args.seq_len, "batches": args.batches,
                     "seed": args.seed, "notes": []}}


def _lm_depends(subject, args) -> dict:
    from seqlab.interpret import token_dependencies

    tokens = subject.tokens
    ids = tokens.encode(args.text, "--text")
    _position(args.position, ids)
    if args.path != "all":
        raise ValueError("--path separates the routes of a seq2seq RNN with attention; a language model has one")
    result = token_dependencies(subject.model, ids, position=args.position, target=tokens.one(args.target, "--target"))
    saliency = result.saliency.T  # (seq, L + 1)
    rows = tokens.labels(ids)
    layers = ["embed"] + [f"L{l}" for l in range(saliency.shape[1] - 1)]
    what = f"log p({tokens.label(result.target)}) at position {result.position} (p = {result.p:.4g})"
    notes = _notes(result)
    return {"table": f"gradient x input of {what}, per source token and layer\n"
                     + _matrix_table(saliency.tolist(), rows, layers, "source"),
            "figure": _signed_figure(saliency.tolist(), "saliency", notes, row_labels=rows, col_labels=layers,
                                     row_title="source position", col_title="residual stream after",
                                     colorbar="gradient x input",
                                     title=f"Token dependencies: gradient x input saliency of {what}"),
            "json": {"tokens": ids, "position": result.position, "target": result.target, "p": result.p,
                     "saliency": result.saliency.tolist(), "note": "saliency[layer][source], layer 0 = embedding",
                     "notes": notes}}


# --- encoder-decoders -----------------------------------------------------------------------------
def _source(subject, text: str, flag: str) -> list[int]:
    ids = subject.src_vocab.encode(check_text(text, flag))
    if not ids:
        raise ValueError(f"{flag} is empty; give a source sentence")
    return ids


def _target(subject, args) -> list[int] | None:
    if getattr(args, "target", None) is None:
        return None
    return subject.tgt_vocab.encode(check_text(args.target, "--target"))


def _target_token(subject, value: str | None, flag: str) -> int | None:
    """The one target-vocabulary token ``value`` names (None when not given)."""
    if value is None:
        return None
    ids = subject.tgt_vocab.encode(check_text(value, flag))
    if len(ids) != 1:
        raise ValueError(f"{flag} {value!r} is {len(ids)} target tokens; give one")
    return ids[0]


def _s2s_labels(subject, src: list[int], predicted: list[int]) -> tuple[list[str], list[str]]:
    piece = lambda vocab, i: vocab.decode([i]).replace(" ", "\u2423") or "?"
    source = [f"{i}:{piece(subject.src_vocab, t)}" for i, t in enumerate(src)]
    steps = [f"{i}:{piece(subject.tgt_vocab, t) if i < len(predicted) - 1 else '</s>'}" for i, t in enumerate(predicted)]
    return source, steps


def _s2s_head(subject, src, predicted) -> dict:
    return {"arch": subject.model.config.arch, "source": src, "predicted": predicted,
            "output": subject.tgt_vocab.decode(predicted[:-1])}


def _s2s_lens(subject, args) -> dict:
    from seqlab.interpret.seq2seq import decoder_lens

    src = _source(subject, args.text, "--text")
    result = decoder_lens(subject.model, src, _target(subject, args), top_k=args.top_k)
    _, steps = _s2s_labels(subject, src, result.predicted)
    label = lambda t: subject.tgt_vocab.decode([int(t)]) or "?"
    return _lens_report(result.lens, steps, result.rows, label, _s2s_head(subject, src, result.predicted),
                        "decoder step (its token)")


def _s2s_attribute(subject, args) -> dict:
    from seqlab.interpret.seq2seq import decoder_attribution

    src = _source(subject, args.text, "--text")
    result = decoder_attribution(subject.model, src, _target(subject, args), step=args.step,
                                 baseline=_target_token(subject, args.baseline, "--baseline"))
    L, H = result.self_heads.shape
    rows = [f"L{l}" for l in range(L)]
    cols = [f"self H{h}" for h in range(H)] + [f"cross H{h}" for h in range(H)] + ["MLP"]
    values = [s + c + [m] for s, c, m in zip(result.self_heads.tolist(), result.cross_heads.tolist(), result.mlps.tolist())]
    what = f"logit[{subject.tgt_vocab.decode([result.target]) or '</s>'}] at step {result.step}"
    notes = _notes(result)
    return {"table": f"direct contribution to {what}\n" + _matrix_table(values, rows, cols, "layer")
                     + f"\nembed {result.embed:+.3f}   bias {result.bias:+.3f}   total {result.total:+.3f}",
            "figure": _signed_figure(values, "attribution", notes, row_labels=rows, col_labels=cols, row_title="layer",
                                     col_title="head / MLP", colorbar=f"direct contribution to {what}",
                                     title=f"Decoder attribution to {what} (total {result.total:+.2f})"),
            "json": {**_s2s_head(subject, src, result.predicted), "step": result.step, "target": result.target,
                     "baseline": result.baseline, "embed": result.embed, "self_heads": result.self_heads.tolist(),
                     "cross_heads": result.cross_heads.tolist(), "mlps": result.mlps.tolist(), "bias": result.bias,
                     "total": result.total, "notes": notes}}


def _s2s_patch(subject, args) -> dict:
    from seqlab.interpret.seq2seq import seq2seq_patch

    where = args.where or "encoder"
    if where not in S2S_WHERE:
        raise ValueError(f"--where {where}: a seq2seq model patches {', '.join(S2S_WHERE)}")
    clean, corrupt = _source(subject, args.clean, "--clean"), _source(subject, args.corrupt, "--corrupt")
    result = seq2seq_patch(subject.model, clean, corrupt, _target(subject, args), where=where, step=args.step,
                           baseline=_target_token(subject, args.baseline, "--baseline"))
    source, steps = _s2s_labels(subject, clean, result.predicted)
    cols = {"source": source, "decoder": steps, "initial": ["initial state"]}[result.axis]
    piece = lambda t: subject.tgt_vocab.decode([t]) or "</s>"
    what = f"logit[{piece(result.target)}] - logit[{piece(result.baseline)}] at step {result.step}"
    notes = _notes(result)
    return {"table": f"recovery of {what} when the clean {where} is patched in (0 = corrupted, 1 = clean)\n"
                     + _matrix_table(result.recovery.tolist(), result.rows, cols, "layer", "{:+.2f}"),
            "figure": _signed_figure(result.recovery.tolist(), "recovery", notes, row_labels=result.rows,
                                     col_labels=cols, row_title="layer", col_title=result.axis,
                                     colorbar="recovery (0 = corrupted, 1 = clean)",
                                     title=f"{subject.model.config.arch}: patching the {where}: recovery of {what}"),
            "json": {**_s2s_head(subject, clean, result.predicted), "corrupt": corrupt, "where": where,
                     "rows": result.rows, "axis": result.axis, "step": result.step, "target": result.target,
                     "baseline": result.baseline, "recovery": result.recovery.tolist(),
                     "clean_metric": result.clean_metric, "corrupt_metric": result.corrupt_metric, "notes": notes}}


def _s2s_knockout(subject, args) -> dict:
    from seqlab.interpret.seq2seq import cross_knockout

    src = _source(subject, args.text, "--text")
    result = cross_knockout(subject.model, src, _target(subject, args))
    source, steps = _s2s_labels(subject, src, result.predicted)
    layers = result.drops.shape[0]
    blocks = [f"L{l} {s}" for l in range(layers) for s in steps]
    flat = result.drops.reshape(-1, result.drops.shape[-1])
    notes = _notes(result)
    return {"table": "drop in log p(each step's token) when a decoder layer may not attend to the source position\n"
                     + _matrix_table(flat.tolist(), blocks, source, "layer / step"),
            "figure": _signed_figure(flat.tolist(), "drop", notes, row_labels=blocks, col_labels=source,
                                     row_title="decoder layer / step", col_title="source position",
                                     colorbar="drop in log p", title=f"{subject.model.config.arch}: cross-attention "
                                                                      "knockout: drop in log p when a source position is cut"),
            "json": {**_s2s_head(subject, src, result.predicted), "drop": result.drops.tolist(), "p": result.p.tolist(),
                     "note": "drop[layer][step][source]", "notes": notes}}


def _s2s_depends(subject, args) -> dict:
    from seqlab.interpret.seq2seq import connectivity

    src = _source(subject, args.text, "--text")
    result = connectivity(subject.model, src, _target(subject, args), path=args.path)
    source, steps = _s2s_labels(subject, src, result.predicted)
    notes = _notes(result)
    figure = _signed_figure(result.values.tolist(), "dependency", notes, row_labels=steps, col_labels=source,
                            row_title="output step", col_title="source position", colorbar="||d logits[t] / d e_s||",
                            title=f"{subject.model.config.arch}: how much each output step depends on each source "
                                  f"position (path: {result.path})")
    figure["diverging"] = False
    return {"table": f"||d logits[t] / d e_s|| (path {result.path}; this model's paths: {', '.join(result.paths)})\n"
                     + _matrix_table(result.values.tolist(), steps, source, "step", "{:.3g}"),
            "figure": figure,
            "json": {**_s2s_head(subject, src, result.predicted), "path": result.path, "paths": list(result.paths),
                     "dependency": result.values.tolist(), "note": "dependency[step][source]", "notes": notes}}


def _s2s_heads(subject, args) -> dict:
    raise ValueError("head roles are scored on a language model (repeated random tokens); for a seq2seq run ask "
                     "lens, patch, knockout or depends")


def _progress(args, total: int):
    """A progress bar on standard error while a long measurement runs (not with --json)."""
    import contextlib

    if args.json:
        return contextlib.nullcontext(None)

    @contextlib.contextmanager
    def bar():
        from seqlab.progressbar import progress_bar

        with progress_bar(total=total, desc=f"seqlab interpret {args.analysis}", unit="pos", leave=False,
                          file=sys.stderr) as shown:
            def update(done: int, of: int) -> None:
                shown.update(done - shown.n)
            yield update
    return bar()


def _write(out: Path, analysis: str, report: dict, *, overwrite: bool, quiet: bool = False) -> None:
    """NAME.png and NAME.json into ``out`` under the one OUT rule (:mod:`seqlab.outdir`): a folder that
    holds anything but the analyses' own files is refused unless ``overwrite``, which replaces it whole;
    the analyses of one prompt may share a folder."""
    import contextlib

    import os

    from seqlab.atomic import atomic_directory, atomic_write_text, remove_stale_temporaries
    from seqlab.interpret.figures import heatmap
    from seqlab.outdir import check_out_folder, holds_only

    ours = [f"{name}.{ext}" for name in LM_ANALYSES for ext in ("png", "json")]
    check_out_folder(out, COMMAND, overwrite=overwrite, recognise=holds_only(ours), flag="--out")
    replace = overwrite and out.is_dir()
    with atomic_directory(out, replaceable=os.listdir(out)) if replace else contextlib.nullcontext(out) as folder:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(folder)
        heatmap(path=folder / f"{analysis}.png", **report["figure"])
        atomic_write_text(folder / f"{analysis}.json", json.dumps(report["json"], indent=1, allow_nan=False) + "\n")
    if not quiet:
        print(f"wrote {out / (analysis + '.png')} and {out / (analysis + '.json')}")


COMMAND = "seqlab interpret"
LM_ANALYSES = {"lens": _lm_lens, "attribute": _lm_attribute, "patch": _lm_patch, "knockout": _lm_knockout,
               "heads": _lm_heads, "depends": _lm_depends}
S2S_ANALYSES = {"lens": _s2s_lens, "attribute": _s2s_attribute, "patch": _s2s_patch, "knockout": _s2s_knockout,
                "heads": _s2s_heads, "depends": _s2s_depends}
