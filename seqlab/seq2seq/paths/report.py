"""report.md of ``seqlab paths``: the numbers of results.json in tables, and sentences about them,
each chosen by comparing the measured numbers (no sentence is written before the numbers exist)."""

from __future__ import annotations

from seqlab.runs.status import Status, read_status

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.seq2seq.paths.chart import MIN_PAIRS
from seqlab.seq2seq.paths.results import range_accuracy
from seqlab.seq2seq.paths.settings import ARCHS_COMPARED

CLEAR_GAP = 0.2  # differences of exact match the report calls clear (half of it for "attention adds")


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def write_report(path: Path, results: dict[str, Any]) -> str:
    """report.md from the measured numbers; every sentence about the curves is chosen by them."""
    s = results["settings"]
    machine = results.get("machine") or {"processor": "an unknown machine", "threads": "?", "torch": "?"}
    lines = ["# Information paths: RNN vs RNN + attention vs Transformer", "",
             f"Measured on {machine['processor']} with {machine['threads']} torch thread(s), "
             f"torch {machine['torch']}; total wall time {results['total_seconds']:.0f} s"
             f"{' (--fast smoke settings: the numbers say little)' if results['fast'] else ''}.", "",
             f"Each model has {s['layers']} encoder and {s['layers']} decoder layer(s); the RNNs' width is chosen so "
             "their parameter counts are within 10% of the Transformer's. Symbol tasks train on source lengths "
             f"{s['train_lengths'][0]}-{s['train_lengths'][1]} and are tested at every length up to "
             f"{s['test_max_len']} ({s['test_per_length']} pairs per length).", ""]
    unfinished = [f"{task} ({', '.join(a for a in ARCHS_COMPARED if a not in info['archs'])} not yet evaluated)"
                  for task, info in results["tasks"].items() if any(a not in info["archs"] for a in ARCHS_COMPARED)]
    if read_status(results.get("status"), Status.COMPLETED) is not Status.COMPLETED or unfinished:
        lines += [f"**Unfinished** (status: {results.get('status')}){': ' + '; '.join(unfinished) if unfinished else ''}. "
                  "Rerun the same `seqlab paths` command to continue: finished models are kept, an interrupted one "
                  "resumes from its checkpoint.", ""]
    capped = [f"{task}/{arch} ({run['steps']} steps)" for task, info in results["tasks"].items()
              for arch, run in info["archs"].items() if read_status(run.get("status")) is Status.TIME_BUDGET]
    if capped:
        lines += [f"Stopped by the time cap before their planned steps ({s['symbol_steps']} for the symbol tasks, "
                  f"{s['dates_steps']} for dates; the machine was slower than planned): {', '.join(capped)}. "
                  "Those models are undertrained; compare them with care.", ""]
    for task, info in results["tasks"].items():
        lines += [f"## {task}", "", "| architecture | parameters | d_model | steps | train time | "
                  + ("exact match, trained lengths | exact match, longer |" if info.get("train_lengths")
                     else "exact match |") + (" alignment share |" if task in ("copy", "reverse") else ""),
                  "|---|---|---|---|---|---|" + ("---|" if info.get("train_lengths") else "")
                  + ("---|" if task in ("copy", "reverse") else "")]
        for arch, run in info["archs"].items():
            row = (f"| {arch} | {run['parameters']:,} | {run['d_model']} | {run['steps']} | "
                   f"{run['train_seconds']:.0f} s | ")
            if info.get("train_lengths"):
                row += f"{fmt(run['in_range_exact_match'])} | {fmt(run['beyond_exact_match'])} |"
            else:
                row += f"{fmt(run['exact_match'])} |"
            if task in ("copy", "reverse"):
                share = run.get("alignment_share")
                row += f" {'n/a' if share is None else f'{share:.2f}'} |"
            lines.append(row)
        if all(a in info["archs"] for a in ARCHS_COMPARED):
            lines += [""] + [f"- {sentence}" for sentence in findings(task, info)] + [""]
        else:
            lines += ["", "- The comparison follows once every architecture of this task is trained and evaluated.", ""]
    lines += ["## Figures", "", "- `paths.png`: exact match vs source length, one line per architecture, each "
              "point with its 95% Wilson interval (shaded: longer than any training source); lengths with fewer "
              f"than {MIN_PAIRS} test pairs are left out, and the strip under each panel gives the test pairs per "
              "length. `seqlab explore --paths DIR` draws the same chart.",
              "- `attention_{task}_{arch}.png`: attention of each output over the source, mean over heads "
              "(teacher-forced on the reference target).",
              "- `dependency_{task}.png`: Jacobian norm of each output's logits w.r.t. each source "
              "embedding, rows scaled to sum to 1. The *alignment share* in the tables is the mean share of "
              "a row on the source position that output must copy (1.0 = depends on that symbol only).", ""]
    text = "\n".join(lines)
    atomic_write_text(path, text)
    return text


def findings(task: str, info: dict[str, Any]) -> list[str]:
    """Sentences about one task, each chosen by comparing the measured numbers."""
    archs = info["archs"]
    out = []
    if not info.get("train_lengths"):
        ranked = sorted(archs, key=lambda a: archs[a]["exact_match"], reverse=True)
        best, worst = ranked[0], ranked[-1]
        gap = archs[best]["exact_match"] - archs[worst]["exact_match"]
        out.append(f"Best: {best} at {fmt(archs[best]['exact_match'])}; lowest: {worst} at "
                   f"{fmt(archs[worst]['exact_match'])}"
                   + (" (a gap of under 5 points: at this budget the architectures are about even)." if gap < 0.05
                      else f" ({gap * 100:.0f} points apart)."))
        return out
    low, high = info["train_lengths"]
    third = max(1, (high - low + 1) // 3)
    drops = {}
    for arch, run in archs.items():
        short = range_accuracy(run["by_length"], low, low + third - 1)
        long = range_accuracy(run["by_length"], high - third + 1, high)
        if short is not None and long is not None:
            drops[arch] = (short, long, short - long)
    rnn = archs.get("rnn")
    if "rnn" in drops:
        short, long, drop = drops["rnn"]
        others = {a: d for a, d in drops.items() if a != "rnn"}
        span = (f"from {fmt(short)} on the shortest trained sources (lengths {low}-{low + third - 1}) to "
                f"{fmt(long)} on the longest ({high - third + 1}-{high})")
        better = {a: d for a, d in others.items() if d[1] >= long + CLEAR_GAP and d[2] <= drop - CLEAR_GAP}
        worse = {a: d for a, d in others.items() if a not in better}

        def listing(group):
            return ", ".join(f"{a} {fmt(d[0])} -> {fmt(d[1])}" for a, d in group.items())

        if drop >= 0.2 and better and not worse:
            out.append(f"The plain RNN falls {span}, clearly more than the attention models ({listing(better)}): "
                       "consistent with the whole source having to pass through one fixed-size state.")
        elif drop >= 0.2 and better:
            out.append(f"The plain RNN falls {span}. {', '.join(better)} holds up on the longest sources "
                       f"({listing(better)}), consistent with the bottleneck; {', '.join(worse)} also falls "
                       f"({listing(worse)}), so attention alone did not remove the drop at this budget"
                       + ("; it stopped at the time cap, so it may simply be undertrained." if any(
                           read_status(archs[a].get("status")) is Status.TIME_BUDGET for a in worse) else "."))
        elif drop >= 0.2:
            out.append(f"The plain RNN falls {span}, but the other architectures are not clearly better on the "
                       f"longest sources ({listing(worse)}): long sources are hard for every model at this "
                       "budget, so this drop does not single out the bottleneck.")
        else:
            out.append(f"The plain RNN goes {span}: at these lengths the fixed-size state did not visibly "
                       "limit it.")
    attn = archs.get("rnn-attention")
    if rnn and attn:
        diff = attn["in_range_exact_match"] - rnn["in_range_exact_match"]
        if diff >= CLEAR_GAP / 2:
            out.append(f"Attention adds {diff * 100:.0f} points within the trained lengths "
                       f"({fmt(rnn['in_range_exact_match'])} -> {fmt(attn['in_range_exact_match'])}) at about the "
                       "same parameter count: a direct path from every source position helps here.")
        else:
            out.append(f"Within the trained lengths attention changes exact match by {diff * 100:+.0f} points "
                       f"({fmt(rnn['in_range_exact_match'])} -> {fmt(attn['in_range_exact_match'])}): no clear gain "
                       "at this budget.")
    beyond = {a: r["beyond_exact_match"] for a, r in archs.items() if r["beyond_exact_match"] is not None}
    if beyond:
        best = max(beyond, key=beyond.get)
        listing = ", ".join(f"{a} {fmt(v)}" for a, v in beyond.items())
        if beyond[best] < 0.1:
            out.append(f"Past the trained lengths ({high + 1}-{info['test_max_len']}) no architecture generalises "
                       f"(exact match {listing}).")
        else:
            out.append(f"Past the trained lengths ({high + 1}-{info['test_max_len']}): {listing}; {best} holds up best.")
    shares = {a: r.get("alignment_share") for a, r in archs.items() if r.get("alignment_share") is not None}
    if shares:
        most = max(shares, key=shares.get)
        out.append("Dependency maps, share of each output's sensitivity on the source symbol it must copy: "
                   + ", ".join(f"{a} {v:.2f}" for a, v in shares.items())
                   + f"; {most} is the most sharply aligned.")
    return out
