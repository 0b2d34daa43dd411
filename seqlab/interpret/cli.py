"""CLI: ``seqlab interpret lens|attribute|patch|knockout|heads|depends`` on a language-model run.

Each prints a table; with ``--out DIR`` it also writes NAME.png (a labelled heatmap) and NAME.json.
Only the standard library is imported here; torch loads inside the handlers.
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


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("interpret", help="information flow in a trained LM: lens, attribution, patching, ...",
                              description="Measure how information flows through a language-model run's layers.")
    sub = p.add_subparsers(dest="interpret_command", metavar="ANALYSIS", required=True)

    def add(name: str, help_text: str, texts: tuple[str, ...] = ("--text",)) -> argparse.ArgumentParser:
        q = sub.add_parser(name, help=help_text, description=help_text)
        q.add_argument("--run", required=True, metavar="DIR", help="a language-model run directory")
        q.add_argument("--device", default="cpu", help="torch device (default cpu)")
        q.add_argument("--out", metavar="DIR", help=f"also write {name}.png and {name}.json here (a new or empty "
                       "folder, or one holding only other analyses' files)")
        q.add_argument("--overwrite", action="store_true", help="with --out: replace the folder whole, whatever it holds")
        for flag in texts:
            q.add_argument(flag, required=True, help="prompt text")
        q.set_defaults(func=_run, analysis=name)
        return q

    q = add("lens", "logit lens: the top token of the residual stream after each layer, at each position")
    q.add_argument("--top-k", type=positive_int, default=5, help="tokens kept per cell in the JSON (5)")
    q = add("attribute", "direct logit attribution of each head, MLP and the embedding at one position")
    q.add_argument("--position", type=int, default=-1, help="position of the prediction (default -1, the last)")
    q.add_argument("--target", help=f"{TOKEN_HELP} (default: the model's top token there)")
    q.add_argument("--baseline", help=f"{TOKEN_HELP}: attribute the logit difference target - baseline")
    q = add("patch", "activation patching: recovery of the clean prediction in the corrupted run",
            ("--clean", "--corrupt"))
    q.add_argument("--target", help=f"{TOKEN_HELP} (default: the clean prompt's top next token)")
    q.add_argument("--baseline", help=f"{TOKEN_HELP} (default: the corrupted prompt's top next token)")
    q.add_argument("--where", default="resid_pre", choices=("resid_pre", "head_out", "mlp_out"),
                   help="what is patched (default resid_pre)")
    q = add("knockout", "attention knockout: drop in log p(target) when one edge into a position is cut")
    q.add_argument("--position", type=int, default=-1, help="position of the prediction (default -1)")
    q.add_argument("--target", help=f"{TOKEN_HELP} (default: the model's top token there)")
    q = add("heads", "head roles: previous-token, duplicate, induction and first-token scores", ())
    q.add_argument("--seq-len", type=positive_int, default=32, help="random tokens before the repeat (32)")
    q.add_argument("--batches", type=positive_int, default=8, help="random sequences (8)")
    q.add_argument("--seed", type=non_negative_int, default=0, help="seed of the random tokens (0)")
    q = add("depends", "gradient x input saliency of each earlier token, per layer of the residual stream")
    q.add_argument("--position", type=int, default=-1, help="position of the prediction (default -1)")
    q.add_argument("--target", help=f"{TOKEN_HELP} (default: the model's top token there)")


def _run(args: argparse.Namespace) -> int:
    # exit 2 for the command line (a device, the wrong kind of run, an analysis flag), 1 for a run that
    # cannot be read or an --out that cannot be written
    usage = True
    try:
        from seqlab.runtime import resolve_device

        resolve_device(args.device)
        usage = False
        from seqlab.lm import load_model
        from seqlab.runs.kinds import RunKindError

        try:
            model, tokenizer, _ = load_model(run=args.run, device=args.device)
        except RunKindError:
            usage = True
            raise
        if tokenizer is None:
            raise FileNotFoundError(f"{Path(args.run) / 'tokenizer'} does not exist: the run has no tokenizer")
        usage = True
        report = ANALYSES[args.analysis](model, _Tokens(tokenizer, model.config.vocab_size), args)
        print(report["table"])
        usage = False
        if args.out:
            _write(Path(args.out), args.analysis, report, overwrite=args.overwrite)
    except USER_ERRORS as exc:
        print(f"seqlab interpret {args.analysis}: error: {exc}", file=sys.stderr)
        return 2 if usage and not isinstance(exc, (FileNotFoundError, PermissionError)) else 1
    return 0


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


def _lens(model, tokens: _Tokens, args) -> dict:
    from seqlab.interpret import logit_lens

    ids = tokens.encode(args.text, "--text")
    lens = logit_lens(model, ids, top_k=args.top_k)
    rows = [f"{i}:{tokens.label(t)}" for i, t in enumerate(ids)]
    layers = ["embed"] + [f"L{l}" for l in range(len(model.layers))]
    top, prob = lens.top_ids[..., 0].T.tolist(), lens.top_probs[..., 0].T.tolist()
    table = _table(["position"] + layers, [[r] + [f"{tokens.label(t)} {p:.2f}" for t, p in zip(top[i], prob[i])]
                                            for i, r in enumerate(rows)])
    shade = lens.target_prob.T.nan_to_num(0.0).tolist()
    cells = [[f"{tokens.label(t)}\n{p:.2f}" for t, p in zip(top[i], prob[i])] for i in range(len(ids))]
    return {"table": "top token and its probability after each layer (rows: input position)\n" + table,
            "figure": dict(values=shade, row_labels=rows, col_labels=layers, cells=cells,
                           title="Logit lens: top token per layer; colour = probability of the actual next token",
                           colorbar="p(next token)", row_title="input token", col_title="residual stream after"),
            "json": {"tokens": ids, "layers": layers, "top_ids": lens.top_ids.tolist(),
                     "top_probs": lens.top_probs.tolist(), "target_prob": lens.target_prob.nan_to_num(-1).tolist(),
                     "target_rank": lens.target_rank.tolist(), "note": "target_prob -1 / rank 0: no next token"}}


def _top_token(model, ids: list[int], position: int) -> int:
    import torch

    with torch.no_grad():
        return int(model(torch.tensor([ids], device=model.lm_head.weight.device))[0, position].argmax())


def _attribute(model, tokens: _Tokens, args) -> dict:
    from seqlab.interpret import direct_logit_attribution

    ids = tokens.encode(args.text, "--text")
    target = tokens.one(args.target, "--target")
    if target is None:
        if not -len(ids) <= args.position < len(ids):
            raise ValueError(f"--position {args.position} is out of range for a prompt of {len(ids)} tokens")
        target = _top_token(model, ids, args.position)
    baseline = tokens.one(args.baseline, "--baseline")
    result = direct_logit_attribution(model, ids, position=args.position, target=target, baseline=baseline)
    heads = result["heads"]
    what = f"logit[{tokens.label(target)}]" + (f" - logit[{tokens.label(baseline)}]" if baseline is not None else "")
    layers = [f"L{l}" for l in range(heads.shape[0])]
    cols = [f"H{h}" for h in range(heads.shape[1])] + ["MLP"]
    values = [row + [m] for row, m in zip(heads.tolist(), result["mlps"].tolist())]
    table = (f"direct contribution to {what} at position {args.position % len(ids)}\n"
             + _matrix_table(values, layers, cols, "layer") + f"\nembed {result['embed']:+.3f}   total {result['total']:+.3f}")
    return {"table": table,
            "figure": dict(values=values, row_labels=layers, col_labels=cols, diverging=True, row_title="layer",
                           col_title="head / MLP", colorbar=f"direct contribution to {what}",
                           title=f"Direct logit attribution to {what} at position {args.position % len(ids)} "
                                 f"(embed {result['embed']:+.2f}, total {result['total']:+.2f})"),
            "json": {"tokens": ids, "target": target, "baseline": baseline, "position": args.position % len(ids),
                     "embed": result["embed"], "heads": heads.tolist(), "mlps": result["mlps"].tolist(),
                     "total": result["total"]}}


def _patch(model, tokens: _Tokens, args) -> dict:
    from seqlab.interpret import patch

    clean, corrupt = tokens.encode(args.clean, "--clean"), tokens.encode(args.corrupt, "--corrupt")
    if len(clean) != len(corrupt):
        raise ValueError(f"--clean is {len(clean)} tokens and --corrupt {len(corrupt)}; patching needs prompts of "
                         "the same length in tokens")
    target = tokens.one(args.target, "--target")
    baseline = tokens.one(args.baseline, "--baseline")
    target = _top_token(model, clean, -1) if target is None else target
    baseline = _top_token(model, corrupt, -1) if baseline is None else baseline
    if target == baseline:
        raise ValueError(f"both prompts predict {tokens.label(target)!r}; give --target and --baseline that differ")
    result = patch(model, clean, corrupt, target=target, baseline=baseline, where=args.where)
    cols = [f"{i}:{tokens.label(a)}" + ("" if a == b else f"/{tokens.label(b)}") for i, (a, b) in enumerate(zip(clean, corrupt))]
    if args.where == "head_out":
        flat = result.reshape(-1, result.shape[-1])
        rows = [f"L{l}H{h}" for l in range(result.shape[0]) for h in range(result.shape[1])]
    else:
        flat, rows = result, [f"L{l}" for l in range(result.shape[0])]
    what = f"logit[{tokens.label(target)}] - logit[{tokens.label(baseline)}]"
    return {"table": f"recovery of {what} when the clean {args.where} is patched in (0 = corrupted, 1 = clean)\n"
                     + _matrix_table(flat.tolist(), rows, cols, "layer", "{:+.2f}"),
            "figure": dict(values=flat.tolist(), row_labels=rows, col_labels=cols, diverging=True,
                           row_title="layer" + (" / head" if args.where == "head_out" else ""),
                           col_title="position (clean/corrupt token)", colorbar="recovery (0 = corrupted, 1 = clean)",
                           title=f"Activation patching of {args.where}: recovery of {what}"),
            "json": {"clean": clean, "corrupt": corrupt, "target": target, "baseline": baseline, "where": args.where,
                     "recovery": result.tolist()}}


def _knockout(model, tokens: _Tokens, args) -> dict:
    from seqlab.interpret import knockout

    ids = tokens.encode(args.text, "--text")
    if not -len(ids) <= args.position < len(ids):
        raise ValueError(f"--position {args.position} is out of range for a prompt of {len(ids)} tokens")
    target = tokens.one(args.target, "--target")
    target = _top_token(model, ids, args.position) if target is None else target
    result = knockout(model, ids, position=args.position, target=target).T  # (seq, L): positions as rows
    rows = tokens.labels(ids)
    layers = [f"L{l}" for l in range(result.shape[1])]
    pos = args.position % len(ids)
    what = f"log p({tokens.label(target)}) at position {pos}"
    return {"table": f"drop in {what} when every head of the layer stops attending to the source\n"
                     + _matrix_table(result.tolist(), rows, layers, "source"),
            "figure": dict(values=result.tolist(), row_labels=rows, col_labels=layers, diverging=True,
                           row_title="source position", col_title="layer", colorbar=f"drop in {what}",
                           title=f"Attention knockout: drop in {what} when the edge from the source is cut"),
            "json": {"tokens": ids, "position": pos, "target": target, "drop": result.T.tolist(),
                     "note": "drop[layer][source]"}}


def _heads(model, tokens: _Tokens, args) -> dict:
    from seqlab.interpret import ROLE_THRESHOLDS, ROLES, head_roles, head_scores

    scores = head_scores(model, seq_len=args.seq_len, batches=args.batches, seed=args.seed)
    roles = head_roles(scores)
    L, H = scores["induction"].shape
    rows = [[f"L{l}H{h}"] + [f"{float(scores[r][l, h]):.3f}" for r in ROLES] + [roles[l][h] or "-"]
            for l in range(L) for h in range(H)]
    labels = [f"L{l}H{h}" for l in range(L) for h in range(H)]
    values = [[float(scores[r][l, h]) for r in ROLES] for l in range(L) for h in range(H)]
    return {"table": f"head scores on {args.batches} x {args.seq_len} random tokens repeated once; role = the best "
                     f"score at or above its threshold {ROLE_THRESHOLDS}\n" + _table(["head", *ROLES, "role"], rows),
            "figure": dict(values=values, row_labels=labels, col_labels=list(ROLES), row_title="layer / head",
                           col_title="score", colorbar="mean attention weight",
                           title="Head roles: mean attention on the previous token, the earlier copy, "
                                 "the token after it (induction), the first token",
                           cells=[[f"{v:.2f}" for v in row] for row in values]),
            "json": {"scores": {r: scores[r].tolist() for r in ROLES}, "roles": roles, "thresholds": ROLE_THRESHOLDS,
                     "seq_len": args.seq_len, "batches": args.batches, "seed": args.seed}}


def _depends(model, tokens: _Tokens, args) -> dict:
    from seqlab.interpret import token_dependencies

    ids = tokens.encode(args.text, "--text")
    if not -len(ids) <= args.position < len(ids):
        raise ValueError(f"--position {args.position} is out of range for a prompt of {len(ids)} tokens")
    target = tokens.one(args.target, "--target")
    target = _top_token(model, ids, args.position) if target is None else target
    result = token_dependencies(model, ids, position=args.position, target=target).T  # (seq, L + 1)
    rows = tokens.labels(ids)
    layers = ["embed"] + [f"L{l}" for l in range(result.shape[1] - 1)]
    what = f"log p({tokens.label(target)}) at position {args.position % len(ids)}"
    return {"table": f"gradient x input of {what}, per source token and layer\n"
                     + _matrix_table(result.tolist(), rows, layers, "source"),
            "figure": dict(values=result.tolist(), row_labels=rows, col_labels=layers, diverging=True,
                           row_title="source position", col_title="residual stream after", colorbar="gradient x input",
                           title=f"Token dependencies: gradient x input saliency of {what}"),
            "json": {"tokens": ids, "position": args.position % len(ids), "target": target,
                     "saliency": result.T.tolist(), "note": "saliency[layer][source], layer 0 = embedding"}}


def _write(out: Path, analysis: str, report: dict, *, overwrite: bool) -> None:
    """NAME.png and NAME.json into ``out`` under the one OUT rule (:mod:`seqlab.outdir`): a folder that
    holds anything but the analyses' own files is refused unless ``overwrite``, which replaces it whole;
    the analyses of one prompt may share a folder."""
    import contextlib

    import os

    from seqlab.atomic import atomic_directory, atomic_write_text, remove_stale_temporaries
    from seqlab.interpret.figures import heatmap
    from seqlab.outdir import check_out_folder, holds_only

    ours = [f"{name}.{ext}" for name in ANALYSES for ext in ("png", "json")]
    check_out_folder(out, COMMAND, overwrite=overwrite, recognise=holds_only(ours), flag="--out")
    replace = overwrite and out.is_dir()
    with atomic_directory(out, replaceable=os.listdir(out)) if replace else contextlib.nullcontext(out) as folder:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(folder)
        heatmap(path=folder / f"{analysis}.png", **report["figure"])
        atomic_write_text(folder / f"{analysis}.json", json.dumps(report["json"], indent=1) + "\n")
    print(f"wrote {out / (analysis + '.png')} and {out / (analysis + '.json')}")


COMMAND = "seqlab interpret"
ANALYSES = {"lens": _lens, "attribute": _attribute, "patch": _patch, "knockout": _knockout, "heads": _heads,
            "depends": _depends}
