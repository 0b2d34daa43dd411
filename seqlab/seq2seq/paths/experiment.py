"""The information-paths experiment (``seqlab paths``): how far does information travel, and how?

Three encoder-decoders of about the same size train on the same tasks: ``rnn`` (the decoder sees
the source only through the encoder's final state, one fixed-size vector), ``rnn-attention`` (each
decoder step also reads every encoder state) and ``transformer`` (every output attends to every
source position). On ``copy`` and ``reverse`` they train on sources of ``train_lengths`` and are
tested at every length up to ``test_max_len``, past anything seen in training; ``dates`` adds a
real translation task.

OUT/ holds ``results.json`` (every number), ``paths.png`` (exact match against length), the
attention and dependency maps, ``report.md`` and ``runs/{task}_{arch}/`` (ordinary ``seqlab
seq2seq`` runs). Each model is trained, then evaluated, then recorded in results.json, so a rerun
continues where the last one stopped. The loop (lock, signals, resume) is
:class:`seqlab.training.campaign.Campaign`: Ctrl-C or SIGTERM lets the model in training save its
checkpoint, writes where things stand, and exits 130 or 143.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from seqlab.model.taps import attention_patterns
from seqlab.runs.state import TrainState
from seqlab.runs.status import Status
from seqlab.runs.log import read_jsonl
from seqlab.seq2seq.build import build_model, size_for_parameters
from seqlab.seq2seq.build import num_parameters
from seqlab.seq2seq.builtin_tasks import SYMBOL_TASKS, make_pairs
from seqlab.seq2seq.config import BOS_ID, Seq2SeqConfig
from seqlab.seq2seq.data import build_vocabs, load_pairs
from seqlab.seq2seq.evaluation import evaluate_translations
from seqlab.seq2seq.inspection import dependency_map
from seqlab.seq2seq.loading import load_run
from seqlab.seq2seq.metrics import accuracy_by_length
from seqlab.seq2seq.paths.figures import draw_attention, draw_dependency, draw_paths
from seqlab.seq2seq.paths.report import write_report
from seqlab.seq2seq.paths.results import (
    FIGURE_FILE,
    REPORT_FILE,
    add_record,
    check_out,
    model_key,
    new_results,
    range_accuracy,
    start_over,
    task_entry,
    write_results,
)
from seqlab.seq2seq.paths.settings import (
    ARCHS_COMPARED,
    FAST,
    FULL,
    PATHS_TASKS,
    TEST_SEED_OFFSET,
    TRAIN_SHARE,
    PathsSettings,
    model_names,
    run_name,
)
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.task import train
from seqlab.training.campaign import RESUME_HINT, Campaign, interrupted_line, torch_threads
from seqlab.runs.experiment import ExperimentResults


def train_config(settings: PathsSettings, task: str, arch: str, d_model: int, out: Path, seed: int,
                 threads: int | None, progress: bool, max_seconds: float | None, *, resume: bool = False
                 ) -> Seq2SeqTrainConfig:
    """The ``seqlab seq2seq train`` settings of one model of the experiment."""
    symbol = task in SYMBOL_TASKS
    steps = settings.symbol_steps if symbol else settings.dates_steps
    return Seq2SeqTrainConfig(
        out_dir=str(out / "runs" / run_name(task, arch)), task=task,
        min_len=settings.train_lengths[0] if symbol else None, max_len=settings.train_lengths[1] if symbol else None,
        train_size=settings.train_size, valid_size=min(500, settings.dates_test_size),
        eval_batches=-(-100 // settings.batch_size),  # about 100 pairs
        arch=arch, d_model=d_model, num_heads=settings.num_heads, num_layers=settings.layers,
        context_length=settings.test_max_len + 2 if symbol else None, max_steps=steps,
        batch_size=settings.batch_size, lr=settings.lr, warmup_steps=settings.warmup_steps, eval_interval=steps,
        checkpoint_interval=steps, time_budget_s=max_seconds, seed=seed, device="cpu", threads=threads,
        progress=progress, resume=resume)


def sized_configs(settings: PathsSettings, task: str, seed: int) -> dict[str, Seq2SeqConfig]:
    """The three architectures' model configs for ``task``, parameter counts matched to the
    Transformer of ``reference_d_model``."""
    probe = train_config(settings, task, "transformer", settings.reference_d_model, Path("."), seed, None, False, None)
    src_vocab, tgt_vocab = build_vocabs(probe, load_pairs(probe)[0])
    max_seq_len = settings.test_max_len + 2 if task in SYMBOL_TASKS else 64
    base = Seq2SeqConfig("transformer", src_vocab.size, tgt_vocab.size, d_model=settings.reference_d_model,
                         num_heads=settings.num_heads, num_encoder_layers=settings.layers,
                         num_decoder_layers=settings.layers, context_length=max_seq_len)
    target = num_parameters(build_model(base, device="meta"))
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
    return sum(shares) / len(shares) if shares else None


def example_pair(task: str, settings: PathsSettings, seed: int) -> tuple[str, str]:
    """The pair the attention and dependency figures show."""
    if task in SYMBOL_TASKS:
        length = settings.train_lengths[1]
        return make_pairs(task, 1, seed=seed + 7, lengths=(length, length))[0]
    candidates = make_pairs(task, 50, seed=seed + 7)
    return max(candidates, key=lambda p: len(p[0]))  # a long written-out format shows the alignment best


def _labels(vocab, ids: list[int]) -> list[str]:
    return [vocab.decode([i]).replace(" ", "\u2423") or "?" for i in ids]


def _example_ids(run, example: tuple[str, str]) -> tuple[list[int], list[int], tuple[list[str], list[str]]]:
    """(source ids, BOS + target ids, (source labels, output labels)) of the example pair."""
    src_ids = run.src_vocab.encode(example[0])
    tgt_ids = [BOS_ID, *run.tgt_vocab.encode(example[1])]
    return src_ids, tgt_ids, (_labels(run.src_vocab, src_ids), _labels(run.tgt_vocab, tgt_ids[1:]) + ["</s>"])


def example_dependency(run, example: tuple[str, str]) -> torch.Tensor:
    src_ids, tgt_ids, _ = _example_ids(run, example)
    return dependency_map(run.model, torch.tensor(src_ids), torch.tensor(tgt_ids)).detach().float()


def _last_train_loss(run_dir: Path) -> float | None:
    records = read_jsonl(run_dir / "log.jsonl", drop_torn_last_line=True) if (run_dir / "log.jsonl").is_file() else []
    return next((r["train_loss"] for r in reversed(records) if isinstance(r.get("train_loss"), (int, float))), None)


def evaluate_model(cfg: Seq2SeqTrainConfig, settings: PathsSettings, task: str, arch: str, seed: int,
                   trained: dict[str, Any], example: tuple[str, str], out: Path) -> dict[str, Any]:
    """The record of one trained model: exact match by source length on unseen test pairs, the
    attention figure, the alignment share of its dependency map."""
    run = load_run(cfg.out_dir, device="cpu")
    train_pairs = load_pairs(cfg)[0]
    pairs = evaluation_pairs(settings, task, seed, {s for s, _ in train_pairs})
    scored = evaluate_translations(run.model, pairs, run.src_vocab, run.tgt_vocab)
    by_length = accuracy_by_length(scored.hypotheses, scored.references, [len(s) for s, _ in pairs])
    record = {"parameters": num_parameters(run.model), "d_model": run.model.config.d_model, **trained,
              "exact_match": scored.exact_match, "token_accuracy": scored.token_accuracy,
              "by_length": {str(n): v for n, v in by_length.items()}}
    if task in SYMBOL_TASKS:
        record["in_range_exact_match"] = range_accuracy(by_length, *settings.train_lengths)
        record["beyond_exact_match"] = range_accuracy(by_length, settings.train_lengths[1] + 1, settings.test_max_len)
    src_ids, tgt_ids, labels = _example_ids(run, example)
    maps = attention_patterns(run.model, torch.tensor([src_ids]), torch.tensor([tgt_ids]))
    if len(maps):
        draw_attention(out / f"attention_{task}_{arch}.png", maps, *labels,
                       title=f"{arch} on {task}\n{example[0]!r} -> {example[1]!r}")
    record["alignment_share"] = alignment_share(example_dependency(run, example), task)
    return record


def draw_task_dependency(out: Path, task: str, example: tuple[str, str], run_dirs: dict[str, Path]) -> None:
    """dependency_{task}.png from the task's saved runs (some may come from an earlier invocation)."""
    deps, labels = {}, None
    for arch, run_dir in run_dirs.items():
        run = load_run(run_dir, device="cpu")
        deps[arch] = example_dependency(run, example)
        labels = _example_ids(run, example)[2]
    draw_dependency(out / f"dependency_{task}.png", deps, *labels,
                    title=f"{task}: can output step t still reach source position s? (the same measurement as "
                          f"`seqlab interpret depends`)\n{example[0]!r} -> {example[1]!r}")


def _say_default(message: str) -> None:
    print(message, flush=True)


def run_paths(out: str | Path, *, fast: bool = False, tasks: tuple[str, ...] = PATHS_TASKS, seed: int = 0,
              threads: int | None = None, progress: bool = True, settings: PathsSettings | None = None,
              say: Callable[[str], None] | None = None, overwrite: bool = False,
              step_callbacks: list[Callable] | tuple = ()) -> dict[str, Any]:
    """Run the experiment into ``out`` (or continue the one there); returns the results written to
    ``results.json``. Their ``"status"`` is "completed", or "interrupted" (by a signal, then
    ``"stop_signal"`` holds it, or by a step callback's stop request).

    ``out`` must be new, empty, or this experiment's own folder: the same settings and seed
    continue it (finished models are kept, an interrupted one resumes with its own time cap, so
    without a cap to the weights of an uninterrupted run; new ``tasks`` are added to the earlier
    ones); anything else is refused unless ``overwrite``, which starts over (see
    :func:`seqlab.seq2seq.paths.results.check_out`). ``out`` is locked while the experiment runs
    (:class:`seqlab.runs.lock.RunLock`): a second one into it is refused (``RunLockedError``), so
    two processes never merge their results.json over each other. ``step_callbacks`` go to every model's
    training engine (they may ``request_stop``, which stops the experiment as a signal does).
    ``threads`` defaults to 1: these models are small, and one thread is the fastest on a shared
    2-core machine (more threads mostly wait on each other)."""
    settings = settings or (FAST if fast else FULL)
    return _run_locked(Path(out), tasks=tuple(dict.fromkeys(tasks)), seed=seed, fast=fast, threads=threads,
                       progress=progress, settings=settings, say=say or _say_default, overwrite=overwrite,
                       step_callbacks=step_callbacks)


def _run_locked(out: Path, *, tasks: tuple[str, ...], seed: int, fast: bool, threads: int | None, progress: bool,
                settings: PathsSettings, say: Callable[[str], None], overwrite: bool,
                step_callbacks: list[Callable] | tuple) -> dict[str, Any]:
    import matplotlib

    matplotlib.use("Agg")
    threads = threads or 1
    campaign = Campaign(out, "seqlab paths", what="the paths experiment", say=say, prefix="paths: ",
                        hint=f"{RESUME_HINT} (finished models are kept, the interrupted one resumes from its "
                             "checkpoint)",
                        check=lambda: check_out(out, settings, seed=seed, fast=fast, overwrite=overwrite))
    ledger = ExperimentResults(lambda document: write_results(out, document))
    results, save_results = ledger.results, ledger.save
    started = time.perf_counter()
    tasks_seen: dict[str, tuple[dict[str, Any], dict[str, Seq2SeqConfig], tuple[str, str]]] = {}
    left = {"runs": 0}

    def prepare(saved: dict[str, Any] | None) -> None:
        if saved is None and overwrite:
            start_over(out)
        ledger.begin(saved, new_results(settings, fast=fast, seed=seed), threads=threads)
        for key in ("trained", "caps"):  # models trained but not evaluated; time caps of started models
            results.setdefault(key, {})
        names = model_names(tasks)
        todo = [(t, a) for t, a in names if a not in results["tasks"].get(t, {}).get("archs", {})]
        points[:] = [_Model(t, a, out / "runs" / run_name(t, a)) for t, a in todo]
        left["runs"] = sum(model_key(t, a) not in results["trained"] for t, a in todo)
        if saved is not None:
            others = [t for t in results["tasks"] if t not in tasks]
            say(f"paths: continuing the experiment in {out}: {len(names) - len(todo)} of {len(names)} models done "
                "earlier" + (f"; the results of {', '.join(others)} are kept" if others else ""))

    def task_setup(task: str):
        if task not in tasks_seen:
            entry = task_entry(results, task, settings, symbol=task in SYMBOL_TASKS)
            tasks_seen[task] = (entry, sized_configs(settings, task, seed), example_pair(task, settings, seed))
        return tasks_seen[task]

    def reached_end(model: _Model, state: TrainState) -> bool:
        cap = results["caps"].get(model.key)
        steps = settings.symbol_steps if model.task in SYMBOL_TASKS else settings.dates_steps
        return model.key in results["trained"] or state.step >= steps or (cap is not None and state.elapsed >= cap)

    def train_one(model: _Model, state: TrainState | None, callbacks: list[Callable], engine_say: Callable[[str], None]):
        _, configs, _ = task_setup(model.task)
        d_model = configs[model.arch].d_model
        left["runs"] -= 1
        steps = settings.symbol_steps if model.task in SYMBOL_TASKS else settings.dates_steps
        if state is not None:
            cap = results["caps"].get(model.key)  # the run's own cap: its schedule follows it
            what = f"resuming at step {state.step} of {steps}"
        else:
            cap = None if settings.budget_minutes is None else round(max(
                5.0, TRAIN_SHARE * (60 * settings.budget_minutes - (time.perf_counter() - started)) / (left["runs"] + 1)), 1)
            what = f"d_model {d_model}, {num_parameters(build_model(configs[model.arch], device='meta')):,} parameters"
            results["caps"][model.key] = cap
            save_results()
        say(f"paths: {model.name}: {what}")
        cfg = train_config(settings, model.task, model.arch, d_model, out, seed, threads, progress, cap,
                           resume=state is not None)
        return train(cfg, step_callbacks=[*callbacks, *step_callbacks],
                     say=lambda message: engine_say(f"paths: {model.name}: {message}"))

    def record(model: _Model, result: Any, state: TrainState | None) -> None:
        entry, configs, example = task_setup(model.task)
        trained = results["trained"].get(model.key)
        if result is not None:
            trained = {"steps": result.steps, "train_seconds": round(result.elapsed, 2),
                       "status": Status(result.status).value, "final_train_loss": result.train_loss}
        elif trained is None:  # killed between training and its record: its checkpoint says how it ended
            steps = settings.symbol_steps if model.task in SYMBOL_TASKS else settings.dates_steps
            trained = {"steps": state.step, "train_seconds": round(state.elapsed, 2),
                       "status": (Status.COMPLETED if state.step >= steps else Status.TIME_BUDGET).value,
                       "final_train_loss": _last_train_loss(model.run_dir)}
        results["trained"][model.key] = trained
        save_results()
        cfg = train_config(settings, model.task, model.arch, configs[model.arch].d_model, out, seed, threads,
                           progress, None)
        evaluated = evaluate_model(cfg, settings, model.task, model.arch, seed, trained, example, out)
        add_record(results, model.task, model.arch, evaluated, entry)
        results["caps"].pop(model.key, None)
        save_results()
        say(f"paths: {model.name}: {trained['steps']} steps in {trained['train_seconds']:.0f} s, "
            f"exact match {evaluated['exact_match']:.1%}")
        if all(a in entry["archs"] for a in ARCHS_COMPARED):
            draw_task_dependency(out, model.task, example,
                                 {a: out / "runs" / run_name(model.task, a) for a in ARCHS_COMPARED})

    def interrupted(model: _Model, result: Any) -> None:
        say(f"paths: {model.name}: {interrupted_line(result)}")

    def summarize(status: Status) -> None:
        results["stop_signal"] = campaign.stop.signal
        save_results(status)
        if status is not Status.RUNNING and results["tasks"]:
            draw_paths(out / FIGURE_FILE, results)
            write_report(out / REPORT_FILE, results)

    points: list[_Model] = []
    with torch_threads(threads):
        campaign.run(points, prepare=prepare, recorded=lambda model: None, reached_end=reached_end,
                     train_one=train_one, record=record, summarize=summarize, interrupted=interrupted)
    return results


@dataclass
class _Model:
    """One model of the experiment: a point of its campaign."""

    task: str
    arch: str
    run_dir: Path

    @property
    def key(self) -> str:
        return model_key(self.task, self.arch)

    @property
    def name(self) -> str:
        return f"{self.task} / {self.arch}"
