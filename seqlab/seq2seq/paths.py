"""The information-paths experiment (``seqlab paths``): how far does information travel, and how?

Three encoder-decoders of about the same size are trained on the same tasks:

* ``rnn``            the decoder sees the source only through the encoder's final state: every
                     source symbol must survive a path of (source length) recurrent steps and
                     then share one fixed-size vector with all the others (the bottleneck);
* ``rnn-attention``  each decoder step also reads every encoder state directly (a short path);
* ``transformer``    no recurrence at all: every output attends to every source position.

For ``copy`` and ``reverse`` (output position t needs source position t, or S-1-t) the models
train on sources of lengths ``train_lengths`` and are tested at every length up to
``test_max_len``, past anything seen in training. ``dates`` adds a real translation task.

Outputs in OUT/: ``results.json`` (every number), ``paths.png`` (exact match vs length, one line per
architecture), ``attention_{task}_{arch}.png`` (the attention models' alignments),
``dependency_{task}.png`` (Jacobian-norm dependency maps: which source positions move each
output), ``report.md`` (the numbers and what they show, written from the results), and
``runs/{task}_{arch}/`` (ordinary ``seqlab seq2seq`` runs: ``translate`` and ``eval`` work on them).
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from seqlab.atomic import atomic_path, atomic_write_text
from seqlab.seq2seq.build import build_model, size_for_parameters
from seqlab.seq2seq.build import num_parameters as count_parameters
from seqlab.seq2seq.config import BOS_ID, Seq2SeqConfig
from seqlab.seq2seq.inspect import dependency_map
from seqlab.seq2seq.metrics import accuracy_by_length
from seqlab.seq2seq.tasks import SYMBOL_TASKS, make_pairs
from seqlab.seq2seq.dataset import build_vocabs, load_pairs
from seqlab.seq2seq.evaluation import evaluate_translations
from seqlab.seq2seq.loading import load_run
from seqlab.seq2seq.task import train
from seqlab.seq2seq.train_config import Seq2SeqTrainConfig

PATHS_TASKS: tuple[str, ...] = ("copy", "reverse", "dates")
ARCHS_COMPARED: tuple[str, ...] = ("rnn", "rnn-attention", "transformer")
COLORS = {"rnn": "tab:red", "rnn-attention": "tab:blue", "transformer": "tab:green"}
TEST_SEED_OFFSET = 2_000_003
CLEAR_GAP = 0.2  # differences of exact match the report calls clear (half of it for "attention adds")
TRAIN_SHARE = 2 / 3  # of the remaining budget per run; the rest pays for evaluation and figures


@dataclass(frozen=True)
class PathsSettings:
    """The experiment's budget. ``reference_d_model`` sizes the Transformer; the RNNs get the
    d_model that brings their parameter count closest to it (within 10%)."""

    train_lengths: tuple[int, int] = (1, 10)
    test_max_len: int = 16
    train_size: int = 20000
    test_per_length: int = 50
    dates_test_size: int = 500
    reference_d_model: int = 32
    layers: int = 2
    num_heads: int = 4
    symbol_steps: int = 600
    dates_steps: int = 1200
    batch_size: int = 64
    lr: float = 3e-3
    warmup_steps: int = 50
    budget_minutes: float = 9.0  # time caps keep the whole experiment near this (goal: <= 10 min)


FULL = PathsSettings()
FAST = PathsSettings(train_lengths=(1, 6), test_max_len=9, train_size=1000, test_per_length=10, dates_test_size=60,
                     reference_d_model=16, layers=1, symbol_steps=40, dates_steps=40, batch_size=32,
                     lr=1e-2, warmup_steps=5, budget_minutes=1.0)


def _train_config(settings: PathsSettings, task: str, arch: str, d_model: int, out: Path, seed: int,
                  threads: int | None, progress: bool, max_seconds: float | None) -> Seq2SeqTrainConfig:
    symbol = task in SYMBOL_TASKS
    steps = settings.symbol_steps if symbol else settings.dates_steps
    return Seq2SeqTrainConfig(
        out_dir=str(out / "runs" / f"{task}_{arch}"), task=task,
        min_len=settings.train_lengths[0] if symbol else None, max_len=settings.train_lengths[1] if symbol else None,
        train_size=settings.train_size, valid_size=min(500, settings.dates_test_size),
        eval_batches=-(-100 // settings.batch_size),  # about 100 pairs
        arch=arch, d_model=d_model, num_heads=settings.num_heads, num_layers=settings.layers,
        context_length=settings.test_max_len + 2 if symbol else None, max_steps=steps,
        batch_size=settings.batch_size, lr=settings.lr, warmup_steps=settings.warmup_steps, eval_interval=steps,
        checkpoint_interval=steps, time_budget_s=max_seconds, seed=seed, device="cpu", threads=threads,
        progress=progress, overwrite=True)


def sized_configs(settings: PathsSettings, task: str, seed: int) -> dict[str, Seq2SeqConfig]:
    """The three architectures' model configs for ``task``, parameter counts matched to the
    Transformer of ``reference_d_model``."""
    probe = _train_config(settings, task, "transformer", settings.reference_d_model, Path("."), seed, None, False, None)
    src_vocab, tgt_vocab = build_vocabs(probe, load_pairs(probe)[0])
    max_seq_len = settings.test_max_len + 2 if task in SYMBOL_TASKS else 64
    base = Seq2SeqConfig("transformer", src_vocab.size, tgt_vocab.size, d_model=settings.reference_d_model,
                         num_heads=settings.num_heads, num_encoder_layers=settings.layers,
                         num_decoder_layers=settings.layers, max_seq_len=max_seq_len)
    target = count_parameters(build_model(base, device="meta"))
    return {arch: base if arch == "transformer" else size_for_parameters(arch, target, base)
            for arch in ARCHS_COMPARED}


def evaluation_pairs(settings: PathsSettings, task: str, seed: int, train_sources: set[str]) -> list[tuple[str, str]]:
    """Symbol tasks: ``test_per_length`` pairs at every length 1..test_max_len (lengths past the
    training range are unseen by construction). Dates: pairs whose sources were not trained on."""
    if task in SYMBOL_TASKS:
        pairs = []
        for length in range(1, settings.test_max_len + 1):
            pairs += make_pairs(task, settings.test_per_length, seed=seed + TEST_SEED_OFFSET + length,
                                lengths=(length, length))
        return pairs
    return make_pairs(task, settings.dates_test_size, seed=seed + TEST_SEED_OFFSET, exclude=train_sources)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _range_accuracy(by_length: dict[int, dict[str, float]], low: int, high: int) -> float | None:
    """Exact match over all test pairs with length in [low, high] (weighted by count)."""
    rows = [v for n, v in by_length.items() if low <= int(n) <= high]
    total = sum(v["count"] for v in rows)
    return sum(v["exact_match"] * v["count"] for v in rows) / total if total else None


def alignment_share(dep: torch.Tensor, task: str) -> float | None:
    """Mean share of each output's Jacobian mass on the source position it must read: position t
    for copy, S-1-t for reverse (rows past the source length, e.g. EOS, are skipped)."""
    if task not in ("copy", "reverse"):
        return None
    T, S = dep.shape
    shares = []
    for t in range(min(T, S)):
        row = dep[t]
        total = float(row.sum())
        if total > 0:
            shares.append(float(row[t if task == "copy" else S - 1 - t]) / total)
    return _mean(shares)


def _example_pair(task: str, settings: PathsSettings, seed: int) -> tuple[str, str]:
    if task in SYMBOL_TASKS:
        length = settings.train_lengths[1]
        return make_pairs(task, 1, seed=seed + 7, lengths=(length, length))[0]
    candidates = make_pairs(task, 50, seed=seed + 7)
    return max(candidates, key=lambda p: len(p[0]))  # a long written-out format shows the alignment best


def _save_figure(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100)


def _labels(vocab, ids: list[int]) -> list[str]:
    return [vocab.decode([i]).replace(" ", "\u2423") or "?" for i in ids]


def draw_attention(path: Path, maps: list[torch.Tensor], src_labels: list[str], tgt_labels: list[str],
                   title: str) -> None:
    """One panel per decoder layer: the layer's attention over the source, mean over heads."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(6.0, 3.6 * len(maps) + 1), 4.0), layout="constrained")
    axes = fig.subplots(1, len(maps), squeeze=False)[0]
    for layer, (axis, weights) in enumerate(zip(axes, maps)):
        axis.imshow(weights[0].float().mean(0).numpy(), cmap="viridis", vmin=0, aspect="auto")
        axis.set_xticks(range(len(src_labels)), src_labels, fontsize=7)
        axis.set_yticks(range(len(tgt_labels)), tgt_labels, fontsize=7)
        axis.set_xlabel("source")
        axis.set_title(f"layer {layer}" if len(maps) > 1 else "attention", fontsize=9)
    axes[0].set_ylabel("output (predicting)")
    fig.suptitle(title, fontsize=10)
    _save_figure(fig, path)


def draw_dependency(path: Path, deps: dict[str, torch.Tensor], src_labels: list[str], tgt_labels: list[str],
                    title: str) -> None:
    """One panel per architecture: Jacobian norm of each output's logits w.r.t. each source
    embedding, each row scaled to sum to 1."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.4 * len(deps) + 1, 3.6), layout="constrained")
    axes = fig.subplots(1, len(deps), squeeze=False)[0]
    for axis, (arch, dep) in zip(axes, deps.items()):
        rows = dep / dep.sum(-1, keepdim=True).clamp_min(1e-12)
        axis.imshow(rows.numpy(), cmap="magma", vmin=0, aspect="auto")
        axis.set_xticks(range(len(src_labels)), src_labels, fontsize=7)
        axis.set_yticks(range(len(tgt_labels)), tgt_labels, fontsize=7)
        axis.set_xlabel("source position")
        axis.set_title(arch, fontsize=9)
    axes[0].set_ylabel("output position")
    fig.suptitle(title, fontsize=10)
    _save_figure(fig, path)


def draw_paths(path: Path, results: dict[str, Any]) -> None:
    """Exact match vs length, one panel per task, one line per architecture; the lengths beyond
    training are shaded."""
    from matplotlib.figure import Figure

    tasks = list(results["tasks"])
    fig = Figure(figsize=(4.6 * len(tasks), 3.8), layout="constrained")
    axes = fig.subplots(1, len(tasks), squeeze=False)[0]
    for axis, task in zip(axes, tasks):
        info = results["tasks"][task]
        for arch, run in info["archs"].items():
            points = sorted((int(n), v["exact_match"]) for n, v in run["by_length"].items() if v["count"] >= 5)
            axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                      color=COLORS.get(arch), label=f"{arch} ({run['parameters'] / 1000:.0f}k)")
        if info.get("train_lengths"):
            axis.axvspan(info["train_lengths"][1] + 0.5, info["test_max_len"] + 0.5, color="grey", alpha=0.15,
                         label="longer than training")
        axis.set_ylim(-0.03, 1.03)
        axis.set_xlabel("source length (characters)")
        axis.set_title(task)
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("exact match")
    axes[0].legend(fontsize=8, loc="best")
    _save_figure(fig, path)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def write_report(path: Path, results: dict[str, Any]) -> str:
    """report.md from the measured numbers; every sentence about the curves is chosen by them."""
    s = results["settings"]
    lines = ["# Information paths: RNN vs RNN + attention vs Transformer", "",
             f"Measured on {results['machine']['processor']} with {results['machine']['threads']} torch thread(s), "
             f"torch {results['machine']['torch']}; total wall time {results['total_seconds']:.0f} s"
             f"{' (--fast smoke settings: the numbers say little)' if results['fast'] else ''}.", "",
             f"Each model has {s['layers']} encoder and {s['layers']} decoder layer(s); the RNNs' width is chosen so "
             "their parameter counts are within 10% of the Transformer's. Symbol tasks train on source lengths "
             f"{s['train_lengths'][0]}-{s['train_lengths'][1]} and are tested at every length up to "
             f"{s['test_max_len']} ({s['test_per_length']} pairs per length).", ""]
    capped = [f"{task}/{arch} ({run['steps']} steps)" for task, info in results["tasks"].items()
              for arch, run in info["archs"].items() if run["status"] == "time limit"]
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
                row += f"{_fmt(run['in_range_exact_match'])} | {_fmt(run['beyond_exact_match'])} |"
            else:
                row += f"{_fmt(run['exact_match'])} |"
            if task in ("copy", "reverse"):
                share = run.get("alignment_share")
                row += f" {'n/a' if share is None else f'{share:.2f}'} |"
            lines.append(row)
        lines += [""] + [f"- {sentence}" for sentence in _findings(task, info)] + [""]
    lines += ["## Figures", "", "- `paths.png`: exact match vs source length, one line per architecture "
              "(shaded: longer than any training source).",
              "- `attention_{task}_{arch}.png`: attention of each output over the source, mean over heads "
              "(teacher-forced on the reference target).",
              "- `dependency_{task}.png`: Jacobian norm of each output's logits w.r.t. each source "
              "embedding, rows scaled to sum to 1. The *alignment share* in the tables is the mean share of "
              "a row on the source position that output must copy (1.0 = depends on that symbol only).", ""]
    text = "\n".join(lines)
    atomic_write_text(path, text)
    return text


def _findings(task: str, info: dict[str, Any]) -> list[str]:
    """Sentences about one task, each chosen by comparing the measured numbers."""
    archs = info["archs"]
    out = []
    if not info.get("train_lengths"):
        ranked = sorted(archs, key=lambda a: archs[a]["exact_match"], reverse=True)
        best, worst = ranked[0], ranked[-1]
        gap = archs[best]["exact_match"] - archs[worst]["exact_match"]
        out.append(f"Best: {best} at {_fmt(archs[best]['exact_match'])}; lowest: {worst} at "
                   f"{_fmt(archs[worst]['exact_match'])}"
                   + (" (a gap of under 5 points: at this budget the architectures are about even)." if gap < 0.05
                      else f" ({gap * 100:.0f} points apart)."))
        return out
    low, high = info["train_lengths"]
    third = max(1, (high - low + 1) // 3)
    drops = {}
    for arch, run in archs.items():
        short = _range_accuracy(run["by_length"], low, low + third - 1)
        long = _range_accuracy(run["by_length"], high - third + 1, high)
        if short is not None and long is not None:
            drops[arch] = (short, long, short - long)
    rnn = archs.get("rnn")
    if "rnn" in drops:
        short, long, drop = drops["rnn"]
        others = {a: d for a, d in drops.items() if a != "rnn"}
        span = (f"from {_fmt(short)} on the shortest trained sources (lengths {low}-{low + third - 1}) to "
                f"{_fmt(long)} on the longest ({high - third + 1}-{high})")
        better = {a: d for a, d in others.items() if d[1] >= long + CLEAR_GAP and d[2] <= drop - CLEAR_GAP}
        worse = {a: d for a, d in others.items() if a not in better}

        def listing(group):
            return ", ".join(f"{a} {_fmt(d[0])} -> {_fmt(d[1])}" for a, d in group.items())

        if drop >= 0.2 and better and not worse:
            out.append(f"The plain RNN falls {span}, clearly more than the attention models ({listing(better)}): "
                       "consistent with the whole source having to pass through one fixed-size state.")
        elif drop >= 0.2 and better:
            out.append(f"The plain RNN falls {span}. {', '.join(better)} holds up on the longest sources "
                       f"({listing(better)}), consistent with the bottleneck; {', '.join(worse)} also falls "
                       f"({listing(worse)}), so attention alone did not remove the drop at this budget"
                       + ("; it stopped at the time cap, so it may simply be undertrained." if any(
                           archs[a].get("status") == "time limit" for a in worse) else "."))
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
                       f"({_fmt(rnn['in_range_exact_match'])} -> {_fmt(attn['in_range_exact_match'])}) at about the "
                       "same parameter count: a direct path from every source position helps here.")
        else:
            out.append(f"Within the trained lengths attention changes exact match by {diff * 100:+.0f} points "
                       f"({_fmt(rnn['in_range_exact_match'])} -> {_fmt(attn['in_range_exact_match'])}): no clear gain "
                       "at this budget.")
    beyond = {a: r["beyond_exact_match"] for a, r in archs.items() if r["beyond_exact_match"] is not None}
    if beyond:
        best = max(beyond, key=beyond.get)
        listing = ", ".join(f"{a} {_fmt(v)}" for a, v in beyond.items())
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


def run_paths(out: str | Path, *, fast: bool = False, tasks: tuple[str, ...] = PATHS_TASKS, seed: int = 0,
              threads: int | None = None, progress: bool = True, settings: PathsSettings | None = None,
              say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the experiment into ``out``; returns the results written to ``results.json``.

    ``threads`` defaults to 1: these models are small, and one thread is the fastest on a shared
    2-core machine (more threads mostly wait on each other)."""
    import matplotlib

    matplotlib.use("Agg")
    settings = settings or (FAST if fast else FULL)
    say = say or (lambda message: print(message, flush=True))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    threads = threads or 1
    saved_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "settings": asdict(settings), "fast": fast, "seed": seed, "tasks": {},
        "machine": {"processor": platform.processor() or platform.machine(), "threads": threads,
                    "torch": torch.__version__}}
    runs_left = len(tasks) * len(ARCHS_COMPARED)
    try:
        for task in tasks:
            configs = sized_configs(settings, task, seed)
            symbol = task in SYMBOL_TASKS
            info: dict[str, Any] = {"train_lengths": list(settings.train_lengths) if symbol else None,
                                    "test_max_len": settings.test_max_len if symbol else None, "archs": {}}
            example = _example_pair(task, settings, seed)
            deps: dict[str, torch.Tensor] = {}
            labels = None
            for arch in ARCHS_COMPARED:
                # each run may train for its share of the time left, less a third kept for evaluation
                left = 60 * settings.budget_minutes - (time.perf_counter() - started)
                cap = max(5.0, TRAIN_SHARE * left / runs_left)
                runs_left -= 1
                cfg = _train_config(settings, task, arch, configs[arch].d_model, out, seed, threads, progress,
                                    max_seconds=cap)
                say(f"paths: {task} / {arch}: d_model {configs[arch].d_model}, "
                    f"{count_parameters(build_model(configs[arch], device='meta')):,} parameters")
                t0 = time.perf_counter()
                result = train(cfg, say=lambda message: None)
                train_seconds = time.perf_counter() - t0
                run = load_run(cfg.out_dir, device="cpu")
                train_pairs = load_pairs(cfg)[0]
                pairs = evaluation_pairs(settings, task, seed, {s for s, _ in train_pairs})
                scored = evaluate_translations(run.model, pairs, run.src_vocab, run.tgt_vocab)
                lengths = [len(s) for s, _ in pairs]
                by_length = accuracy_by_length(scored.hypotheses, scored.references, lengths)
                record = {"parameters": count_parameters(run.model), "d_model": run.model.config.d_model,
                          "steps": result.steps, "train_seconds": round(train_seconds, 2),
                          "status": "time limit" if result.stopped_by == "time budget" else result.status,
                          "final_train_loss": result.train_loss, "exact_match": scored.exact_match,
                          "token_accuracy": scored.token_accuracy,
                          "by_length": {str(n): v for n, v in by_length.items()}}
                if symbol:
                    record["in_range_exact_match"] = _range_accuracy(by_length, *settings.train_lengths)
                    record["beyond_exact_match"] = _range_accuracy(by_length, settings.train_lengths[1] + 1,
                                                                   settings.test_max_len)
                src_ids = run.src_vocab.encode(example[0])
                tgt_ids = [BOS_ID, *run.tgt_vocab.encode(example[1])]
                labels = (_labels(run.src_vocab, src_ids), _labels(run.tgt_vocab, tgt_ids[1:]) + ["</s>"])
                with torch.no_grad():
                    maps = run.model.attention_maps(torch.tensor([src_ids]), torch.tensor([tgt_ids]))
                if maps:
                    draw_attention(out / f"attention_{task}_{arch}.png", maps, *labels,
                                   title=f"{arch} on {task}\n{example[0]!r} -> {example[1]!r}")
                dep = dependency_map(run.model, torch.tensor(src_ids), torch.tensor(tgt_ids)).detach().float()
                deps[arch] = dep
                record["alignment_share"] = alignment_share(dep, task)
                info["archs"][arch] = record
                say(f"paths: {task} / {arch}: {result.steps} steps in {train_seconds:.0f} s, exact match "
                    f"{scored.exact_match:.1%}")
            draw_dependency(out / f"dependency_{task}.png", deps, *labels,
                            title=f"{task}: which source positions move each output\n{example[0]!r} -> {example[1]!r}")
            results["tasks"][task] = info
    finally:
        torch.set_num_threads(saved_threads)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    draw_paths(out / "paths.png", results)
    atomic_write_text(out / "results.json", json.dumps(results, indent=2) + "\n")
    write_report(out / "report.md", results)
    return results


__all__ = ["FAST", "FULL", "PATHS_TASKS", "PathsSettings", "run_paths"]
