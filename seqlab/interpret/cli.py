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
        q = sub.add_parser(name, help=help_text.split(". ")[0], description=help_text)
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
    position_help = "a language model: position of the prediction (default -1, the last); a seq2seq run shows " \
                    "every output step"
    q = add("lens", "logit lens: the top token of the residual stream (a seq2seq run: the decoder) after each layer")
    q.add_argument("--top-k", type=positive_int, default=5, help="tokens kept per cell in the JSON (5)")
    q.add_argument("--target", help="a seq2seq run: the target text (default: the model's own output)")
    q = add("attribute", "direct logit attribution of each head, MLP and the embedding at one position (a seq2seq "
                         "run: at one decoder step)")
    q.add_argument("--position", type=int, default=None, help="a language model: position of the prediction "
                                                               "(default -1, the last)")
    q.add_argument("--step", type=int, default=None, help="a seq2seq run: the decoder step (default 0)")
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
                        "the decoder's cross-attention to each source position, at every output step)")
    q.add_argument("--position", type=int, default=None, help=position_help)
    q.add_argument("--target", help=target_help)
    q = add("heads", "head roles: previous-token, duplicate, induction and first-token scores", ())
    q.add_argument("--seq-len", type=positive_int, default=32, help="random tokens before the repeat (32)")
    q.add_argument("--batches", type=positive_int, default=8, help="random sequences (8)")
    q.add_argument("--seed", type=non_negative_int, default=0, help="seed of the random tokens (0)")
    q.add_argument("--convention", choices=("seqlab", "transformerlens"), default="seqlab",
                   help="seqlab: mean over the queries a role applies to (default); transformerlens: "
                        "TransformerLens's head detector, over every query (half for induction heads)")
    q = add("depends", "dependencies. A seq2seq run: how much the token predicted at each output step t depends on "
                       "each source position s, ||d log p(y_t) / d e_s||_2, the norm over the embedding's dimensions "
                       "of the gradient of the predicted token's log-probability with respect to source position s's "
                       "embedding. A language model: gradient x input of log p(target) for each earlier token, per "
                       "layer of the residual stream")
    q.add_argument("--position", type=int, default=None, help=position_help)
    q.add_argument("--target", help=target_help)
    q.add_argument("--path", choices=("all", "attention", "state"), default="all",
                   help="a seq2seq RNN with attention: all paths (default), through attention only, or through the "
                        "recurrent state only")
    q.add_argument("--measure", choices=("log_p", "logits"), default="log_p",
                   help="a seq2seq run: log_p (default), the predicted token's log-probability; logits, "
                        "||d logits_t / d e_s||_F over every vocabulary logit, the map `seqlab paths` draws")


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
        report = ANALYSES[args.analysis](subject, args)
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
    """A loaded run, and its words for what the measurements return: a language model's (``lm``) prompt
    tokens, or an encoder-decoder's source and target vocabularies."""

    def __init__(self, model, tokens=None, src_vocab=None, tgt_vocab=None):
        self.model, self.tokens, self.src_vocab, self.tgt_vocab = model, tokens, src_vocab, tgt_vocab
        self.lm = tokens is not None
        self.name = "language model" if self.lm else model.config.arch

    def encode(self, text: str, flag: str) -> list[int]:
        if self.lm:
            return self.tokens.encode(text, flag)
        ids = self.src_vocab.encode(check_text(text, flag))
        if not ids:
            raise ValueError(f"{flag} is empty; give a source sentence")
        return ids

    def target(self, args) -> int | list[int] | None:
        """--target: a language model's one token, an encoder-decoder's target text."""
        if not self.lm and args.target is not None:
            return self.tgt_vocab.encode(check_text(args.target, "--target"))
        return self.token(args.target, "--target")

    def token(self, value: str | None, flag: str) -> int | None:
        """The one token ``value`` names (a language model: or id:N; an encoder-decoder: of its targets)."""
        if self.lm:
            return self.tokens.one(value, flag)
        if value is None:
            return None
        ids = self.tgt_vocab.encode(check_text(value, flag))
        if len(ids) != 1:
            raise ValueError(f"{flag} {value!r} is {len(ids)} target tokens; give one")
        return ids[0]

    def label(self, token: int) -> str:
        """A predicted token's label."""
        return self.tokens.label(token) if self.lm else (self.tgt_vocab.decode([int(token)]) or "</s>")

    def inputs(self, ids: list[int], corrupt: list[int] | None = None) -> list[str]:
        """'i:token' per input position (and '/corrupted token' where the corrupted input differs)."""
        piece = self.tokens.label if self.lm else lambda t: self.src_vocab.decode([t]).replace(" ", "\u2423") or "?"
        corrupt = ids if corrupt is None else corrupt
        return [f"{i}:{piece(a)}" + ("" if a == b else f"/{piece(b)}") for i, (a, b) in enumerate(zip(ids, corrupt))]

    def positions(self, ids: list[int], predicted: list[int] | None) -> list[str]:
        """Labels of the positions a measurement answers at: the prompt's tokens, the decoder's steps."""
        if predicted is None:
            return self.inputs(ids)
        piece = lambda t: self.tgt_vocab.decode([t]).replace(" ", "\u2423") or "?"
        return [f"{i}:{piece(t) if i < len(predicted) - 1 else '</s>'}" for i, t in enumerate(predicted)]

    def head(self, ids: list[int], predicted: list[int] | None) -> dict:
        """What every answer's JSON starts with: the prompt's tokens, or the source and the output."""
        if predicted is None:
            return {"tokens": ids}
        return {"arch": self.model.config.arch, "source": ids, "predicted": predicted,
                "output": self.tgt_vocab.decode(predicted[:-1])}

    def position(self, args, ids: list[int]) -> int | None:
        """The --position (a language model's, checked against its prompt ``ids``) or --step (an
        encoder-decoder's, where the analysis reads one step) asked for; the other is refused."""
        position, step = getattr(args, "position", None), getattr(args, "step", None)
        if not self.lm and position is not None:
            raise ValueError("--position: a seq2seq run shows every output step (one row each)"
                             + ("; choose the step with --step" if hasattr(args, "step") else ""))
        if self.lm and step is not None:
            raise ValueError("--step: a language-model run has no decoder steps"
                             + ("; choose a token with --position" if hasattr(args, "position") else ""))
        if not self.lm:
            return step
        position = -1 if position is None else position
        if not -len(ids) <= position < len(ids):
            raise ValueError(f"--position {position} is out of range for a prompt of {len(ids)} tokens")
        return position


def _load(args) -> _Subject:
    from seqlab.interpret.inputs import check_finite_weights
    from seqlab.runs.kinds import Kind, run_kind

    if run_kind(args.run) is Kind.SEQ2SEQ:
        from seqlab.seq2seq.loading import load_run

        run = load_run(args.run, device=args.device)
        check_finite_weights(run.model)
        return _Subject(run.model, src_vocab=run.src_vocab, tgt_vocab=run.tgt_vocab)
    from seqlab.lm import load_model

    model, tokenizer, _ = load_model(run=args.run, device=args.device)
    if tokenizer is None:
        raise FileNotFoundError(f"{Path(args.run) / 'tokenizer'} does not exist: the run has no tokenizer")
    check_finite_weights(model)
    return _Subject(model, tokens=_Tokens(tokenizer, model.config.vocab_size))


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


def number(value: float, fmt: str) -> str:
    """``value`` in ``fmt``; an exact zero (0.0 or -0.0) without a sign."""
    return fmt.format(0.0).lstrip("+-") if value == 0 else fmt.format(value)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[c])) for r in [header] + rows) for c in range(len(header))]
    lines = ["  ".join(str(v).ljust(w) for v, w in zip(row, widths)) for row in [header] + rows]
    return "\n".join(lines)


def _matrix_table(values, row_labels, col_labels, corner: str, fmt: str = "{:+.3f}") -> str:
    return _table([corner] + list(col_labels), [[r] + [number(float(v), fmt) for v in row]
                                                for r, row in zip(row_labels, values)])


def _notes(result) -> list[dict]:
    return [note.as_json() for note in result.notes]


def _figure(values, kind: str, notes: list[dict], diverging: bool = True, **figure) -> dict:
    """A heatmap's arguments: its colour scale with the kind's floor (seqlab.interpret.notes), from
    -bound to bound (``diverging``) or from 0."""
    from seqlab.interpret.notes import colour_scale, range_words

    scale = colour_scale(values, kind)
    figure["title"] = f"{figure['title']}\n{range_words(scale, diverging)}"
    return dict(values=values, diverging=diverging, bound=scale["bound"], notes=[n["message"] for n in notes], **figure)


# --- one handler per question, for both families ----------------------------------------------------
def _lens(subject, args) -> dict:
    from seqlab.interpret import logit_lens

    ids = subject.encode(args.text, "--text")
    if subject.lm and args.target is not None:
        raise ValueError("--target: the language model's lens scores each position's actual next token")
    lens = logit_lens(subject.model, ids, target=subject.target(args), top_k=args.top_k)
    rows = subject.positions(ids, lens.predicted)
    top, prob = lens.top_ids[..., 0].T.tolist(), lens.top_probs[..., 0].T.tolist()
    cells = lambda sep: [[f"{subject.label(t)}{sep}{p:.2f}" for t, p in zip(top[i], prob[i])] for i in range(len(rows))]
    scored = "actual next token" if subject.lm else "target token"
    return {"table": "top token and its probability after each layer (rows: position)\n"
                     + _table(["position"] + lens.rows, [[r] + row for r, row in zip(rows, cells(" "))]),
            "figure": dict(values=lens.target_prob.T.nan_to_num(0.0).tolist(), row_labels=rows, col_labels=lens.rows,
                           cells=cells("\n"), bound=1.0,
                           title=f"Logit lens: top token per layer; colour = probability of the {scored} "
                                 "(scale 0 .. 1)", colorbar=f"p({scored})",
                           row_title="input token" if subject.lm else "decoder step (its token)",
                           col_title="residual stream after", notes=[]),
            "json": {**subject.head(ids, lens.predicted), "layers": lens.rows, "top_ids": lens.top_ids.tolist(),
                     "top_probs": lens.top_probs.tolist(), "target_prob": lens.target_prob.nan_to_num(-1).tolist(),
                     "target_rank": lens.target_rank.tolist(), "note": "target_prob -1 / rank 0: no next token",
                     "notes": []}}


def _attribute(subject, args) -> dict:
    from seqlab.interpret import direct_logit_attribution

    ids = subject.encode(args.text, "--text")
    position = subject.position(args, ids)
    result = direct_logit_attribution(subject.model, ids, position=position, target=subject.target(args),
                                      baseline=subject.token(args.baseline, "--baseline"))
    heads, cross, L = result.heads.tolist(), result.cross_heads, result.heads.shape[0]
    rows = [f"L{l}" for l in range(L)]
    both = cross is not None
    cols = [f"{'self ' if both else ''}H{h}" for h in range(len(heads[0]))] + \
        ([f"cross H{h}" for h in range(cross.shape[1])] if both else []) + ["MLP"]
    values = [s + (c if both else []) + [m] for s, c, m in zip(heads, cross.tolist() if both else heads,
                                                                 result.mlps.tolist())]
    where = f"at position {result.position}" if subject.lm else f"at step {result.position}"
    what = f"logit[{subject.label(result.target)}]" + \
        (f" - logit[{subject.label(result.baseline)}]" if result.baseline is not None else "") + f" {where}"
    bias = "" if subject.lm else f"   bias {result.bias:+.3f}"
    notes = _notes(result)
    parts = {"embed": result.embed, "heads": heads, "mlps": result.mlps.tolist(), "total": result.total} if subject.lm \
        else {"embed": result.embed, "self_heads": heads, "cross_heads": cross.tolist(),
              "mlps": result.mlps.tolist(), "bias": result.bias, "total": result.total}
    return {"table": f"direct contribution to {what}\n" + _matrix_table(values, rows, cols, "layer")
                     + f"\nembed {result.embed:+.3f}{bias}   total {result.total:+.3f}",
            "figure": _figure(values, "attribution", notes, row_labels=rows, col_labels=cols, row_title="layer",
                              col_title="head / MLP", colorbar=f"direct contribution to {what}",
                              title=f"Direct logit attribution to {what} (embed {result.embed:+.2f}, total "
                                    f"{result.total:+.2f})"),
            "json": {**subject.head(ids, result.predicted), "target": result.target, "baseline": result.baseline,
                     ("position" if subject.lm else "step"): result.position, **parts, "notes": notes}}


def _patch(subject, args) -> dict:
    from seqlab.interpret import patch

    where = args.where or (LM_WHERE if subject.lm else S2S_WHERE)[0 if subject.lm else 1]
    if where not in (LM_WHERE if subject.lm else S2S_WHERE):
        raise ValueError(f"--where {where}: a {'language' if subject.lm else 'seq2seq'} model patches "
                         f"{', '.join(LM_WHERE if subject.lm else S2S_WHERE)}")
    clean, corrupt = subject.encode(args.clean, "--clean"), subject.encode(args.corrupt, "--corrupt")
    step = subject.position(args, clean)  # refuses --step on a language-model run,
    step = None if subject.lm else step    # whose metric is read at the last position
    if len(clean) != len(corrupt):
        raise ValueError(f"--clean is {len(clean)} tokens and --corrupt {len(corrupt)}; patching needs inputs of "
                         "the same length in tokens")
    with _progress(args, len(clean)) as progress:
        result = patch(subject.model, clean, corrupt, target=subject.target(args), where=where, position=step,
                       baseline=subject.token(args.baseline, "--baseline"), progress=progress)
    recovery = result.recovery
    if where == "head_out":
        flat, rows = recovery.reshape(-1, recovery.shape[-1]), [f"{l}H{h}" for l in result.rows
                                                                  for h in range(recovery.shape[1])]
    else:
        flat, rows = recovery, result.rows
    cols = {"source": subject.inputs(clean, corrupt), "position": subject.inputs(clean, corrupt),
            "decoder": subject.positions(clean, result.predicted), "initial": ["initial state"]}[result.axis]
    what = f"logit[{subject.label(result.target)}] - logit[{subject.label(result.baseline)}]" + \
        ("" if subject.lm else f" at step {result.position}")
    notes = _notes(result)
    json_out = {"clean": clean, "corrupt": corrupt} if subject.lm else \
        {**subject.head(clean, result.predicted), "corrupt": corrupt, "rows": result.rows, "axis": result.axis,
         "step": result.position}
    return {"table": f"recovery of {what} when the clean {where} is patched in (0 = corrupted, 1 = clean)\n"
                     + _matrix_table(flat.tolist(), rows, cols, "layer", "{:+.2f}"),
            "figure": _figure(flat.tolist(), "recovery", notes, row_labels=rows, col_labels=cols,
                              row_title="layer" + (" / head" if where == "head_out" else ""),
                              col_title="position (clean/corrupt token)" if subject.lm else result.axis,
                              colorbar="recovery (0 = corrupted, 1 = clean)",
                              title=f"{subject.name}: patching the {where}: recovery of {what}\n(clean "
                                    f"{args.clean!r}, corrupted {args.corrupt!r})"),
            "json": {**json_out, "target": result.target, "baseline": result.baseline, "where": where,
                     "recovery": recovery.tolist(), "clean_metric": result.clean_metric,
                     "corrupt_metric": result.corrupt_metric, "notes": notes}}


def _knockout(subject, args) -> dict:
    from seqlab.interpret import knockout

    ids = subject.encode(args.text, "--text")
    position = subject.position(args, ids)
    result = knockout(subject.model, ids, position=position, target=subject.target(args))
    source, notes = subject.inputs(ids), _notes(result)
    if subject.lm:  # one prediction: sources as rows, layers as columns (the flow graph)
        what = f"log p({subject.label(result.target)}) at position {result.position} (p = {result.p:.4g})"
        values, rows, cols, corner = result.drops.T.tolist(), source, result.layers, "source"
        titles = ("source position", "layer", f"drop in {what}")
        header = f"drop in {what} when every head of the layer stops attending to the source"
        json_out = {"tokens": ids, "position": result.position, "target": result.target, "p": result.p,
                    "note": "drop[layer][source]"}
    else:  # every step: a row per (attention, step), sources as columns
        steps = subject.positions(ids, result.predicted)
        values = result.drops.reshape(-1, result.drops.shape[-1]).tolist()
        rows, cols, corner = [f"{layer} {step}" for layer in result.layers for step in steps], source, "layer / step"
        titles = ("decoder attention / step", "source position", "drop in log p")
        one = result.layers == ["attention"]
        header = ("drop in log p(each step's token) when the attention over the top decoder layer" if one else
                  "drop in log p(each step's token) when a decoder layer's cross-attention") + \
            " may not read the source position"
        json_out = {**subject.head(ids, result.predicted), "p": result.p.tolist(), "note": "drop[layer][step][source]"}
    return {"table": f"{header}\n" + _matrix_table(values, rows, cols, corner),
            "figure": _figure(values, "drop", notes, row_labels=rows, col_labels=cols, row_title=titles[0],
                              col_title=titles[1], colorbar=titles[2],
                              title=f"{subject.name}: attention knockout: {header}"),
            "json": {**json_out, "layers": result.layers, "drop": result.drops.tolist(), "notes": notes}}


def _heads(subject, args) -> dict:
    from seqlab.interpret import ROLE_THRESHOLDS, ROLES, head_roles, head_scores

    if not subject.lm:
        raise ValueError("head roles are scored on a language model (repeated random tokens); for a seq2seq run ask "
                         "lens, patch, knockout or depends")
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


def _depends(subject, args) -> dict:
    from seqlab.interpret import token_dependencies

    ids = subject.encode(args.text, "--text")
    position = subject.position(args, ids)
    if subject.lm:
        for flag, value, default in (("--path", args.path, "all"), ("--measure", args.measure, "log_p")):
            if value != default:
                raise ValueError(f"{flag} {value}: a seq2seq run's option; a language model has one")
    result = token_dependencies(subject.model, ids, position=position, target=subject.target(args), path=args.path,
                                measure=args.measure)
    notes, source = _notes(result), subject.inputs(ids)
    if subject.lm:
        what = f"log p({subject.label(result.target)}) at position {result.position} (p = {result.p:.4g})"
        layers = ["embed"] + [f"L{l}" for l in range(result.values.shape[0] - 1)]
        return {"table": f"gradient x input of {what}, per source token and layer\n"
                         + _matrix_table(result.values.T.tolist(), source, layers, "source"),
                "figure": _figure(result.values.T.tolist(), "saliency", notes, row_labels=source, col_labels=layers,
                                  row_title="source position", col_title="residual stream after",
                                  colorbar="gradient x input",
                                  title=f"Token dependencies: gradient x input saliency of {what}"),
                "json": {"tokens": ids, "position": result.position, "target": result.target, "p": result.p,
                         "measure": result.measure, "saliency": result.values.tolist(),
                         "note": "saliency[layer][source], layer 0 = embedding", "notes": notes}}
    steps = subject.positions(ids, result.predicted)
    values = result.values.tolist()
    return {"table": f"{result.measure} (path {result.path}; this model's paths: {', '.join(result.paths)})\n"
                     + _matrix_table(values, steps, source, "step", "{:.3g}"),
            "figure": _figure(values, "dependency", notes, diverging=False, row_labels=steps, col_labels=source,
                              row_title="output step (its token)", col_title="source position",
                              colorbar=result.measure,
                              title=f"{subject.name}: how much the token predicted at each step depends on each source "
                                    f"position: {result.measure} (path: {result.path})"),
            "json": {**subject.head(ids, result.predicted), "measure": result.measure, "path": result.path,
                     "paths": list(result.paths), "dependency": values, "p": result.p.tolist(),
                     "note": "dependency[step][source]", "notes": notes}}


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
    from seqlab.jsonfile import dumps
    from seqlab.outdir import check_out_folder, holds_only

    ours = [f"{name}.{ext}" for name in ANALYSES for ext in ("png", "json")]
    check_out_folder(out, COMMAND, overwrite=overwrite, recognise=holds_only(ours), flag="--out")
    replace = overwrite and out.is_dir()
    with atomic_directory(out, replaceable=os.listdir(out)) if replace else contextlib.nullcontext(out) as folder:
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(folder)
        heatmap(path=folder / f"{analysis}.png", **report["figure"])
        atomic_write_text(folder / f"{analysis}.json", dumps(report["json"], indent=1) + "\n")
    if not quiet:
        print(f"wrote {out / (analysis + '.png')} and {out / (analysis + '.json')}")


COMMAND = "seqlab interpret"
ANALYSES = {"lens": _lens, "attribute": _attribute, "patch": _patch, "knockout": _knockout, "heads": _heads,
            "depends": _depends}
