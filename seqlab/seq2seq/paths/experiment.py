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

Outputs in OUT/: ``results.json`` (every number, :mod:`~seqlab.seq2seq.paths.results`),
``paths.png`` (exact match vs length, one line per architecture), ``attention_{task}_{arch}.png``
(the attention models' alignments), ``dependency_{task}.png`` (Jacobian-norm dependency maps:
which source positions move each output) (:mod:`~seqlab.seq2seq.paths.figures`), ``report.md``
(the numbers and what they show, :mod:`~seqlab.seq2seq.paths.report`), and ``runs/{task}_{arch}/``
(ordinary ``seqlab seq2seq`` runs, trained by the engine: ``translate`` and ``eval`` work on them).

Each model goes through three stages, and results.json records each as it ends, so the same
command run again continues where the last one stopped:

1. **train** (:func:`seqlab.seq2seq.task.train`); a run with a checkpoint but no training outcome
   was interrupted and is resumed (the engine's ``--resume``, with its original time cap: the same
   batches and state, so without a time cap the weights equal those of an uninterrupted run);
2. **evaluate** on test pairs never trained on, by source length, with attention and dependency maps;
3. **done**: the record joins its task in results.json; a rerun skips it.

Ctrl-C or SIGTERM stops the whole experiment (:func:`seqlab.training.interrupt.signals_stop_runs`):
the model in training saves its checkpoint, a model being evaluated finishes its evaluation, no
other model starts, results.json, report.md and paths.png say where it stands, and ``seqlab
paths`` exits 130 or 143. A second signal quits at once.
"""

from __future__ import annotations

import contextlib
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from seqlab.atomic import remove_stale_temporaries
from seqlab.runs.checkpoint import read_checkpoint
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
from seqlab.training.interrupt import StopRequest, signal_name, signals_stop_runs


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


def saved_progress(run_dir: Path) -> dict[str, Any] | None:
    """Where an interrupted model's run stands, from its checkpoint: {"step", "wallclock",
    "max_steps", "time_budget_s", "finished"}; None when it has no checkpoint."""
    latest = run_dir / "checkpoints" / "latest.pt"
    if not latest.is_file():
        return None
    payload = read_checkpoint(latest, mmap=True)
    extra, step = payload["extra"], int(payload["iteration"])
    config = extra.get("config") or {}
    budget, wallclock = config.get("time_budget_s"), float(extra.get("wallclock") or 0.0)
    max_steps = config.get("max_steps")
    finished = (isinstance(max_steps, int) and step >= max_steps) or (budget is not None and wallclock >= budget)
    return {"step": step, "wallclock": wallclock, "max_steps": max_steps, "time_budget_s": budget,
            "finished": finished}


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
    with torch.no_grad():
        maps = run.model.attention_maps(torch.tensor([src_ids]), torch.tensor([tgt_ids]))
    if maps:
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
                    title=f"{task}: which source positions move each output\n{example[0]!r} -> {example[1]!r}")


def _say_default(message: str) -> None:
    print(message, flush=True)


def run_paths(out: str | Path, *, fast: bool = False, tasks: tuple[str, ...] = PATHS_TASKS, seed: int = 0,
              threads: int | None = None, progress: bool = True, settings: PathsSettings | None = None,
              say: Callable[[str], None] | None = None, overwrite: bool = False,
              step_callbacks: list[Callable] | tuple = ()) -> dict[str, Any]:
    """Run the experiment into ``out`` (or continue the one there); returns the results written to
    ``results.json``. Their ``"status"`` is "complete", or "interrupted" (by a signal, then
    ``"stop_signal"`` holds it, or by a step callback's stop request).

    ``out`` must be new, empty, or this experiment's own folder: the same settings and seed
    continue it (finished models are kept, an interrupted one resumes, new ``tasks`` are added to
    the earlier ones); anything else is refused unless ``overwrite``, which starts over (see
    :func:`seqlab.seq2seq.paths.results.check_out`). ``out`` is locked while the experiment runs
    (:class:`seqlab.runs.lock.RunLock`): a second one into it is refused (``RunLockedError``), so
    two processes never merge their results.json over each other. ``step_callbacks`` go to every model's
    training engine (they may ``request_stop``, which stops the experiment as a signal does).
    ``threads`` defaults to 1: these models are small, and one thread is the fastest on a shared
    2-core machine (more threads mostly wait on each other)."""
    from seqlab.runs.lock import RunLock

    settings = settings or (FAST if fast else FULL)
    out = Path(out)
    check_out(out, settings, seed=seed, fast=fast, overwrite=overwrite)  # refusals before OUT is created
    with RunLock(out, "seqlab paths"):  # a second `seqlab paths` into OUT is refused (RunLockedError)
        return _run_locked(out, tasks=tasks, seed=seed, fast=fast, threads=threads, progress=progress,
                           settings=settings, say=say or _say_default, overwrite=overwrite,
                           step_callbacks=step_callbacks)


def _run_locked(out: Path, *, tasks: tuple[str, ...], seed: int, fast: bool, threads: int | None, progress: bool,
                settings: PathsSettings, say: Callable[[str], None], overwrite: bool,
                step_callbacks: list[Callable] | tuple) -> dict[str, Any]:
    import matplotlib

    matplotlib.use("Agg")
    saved = check_out(out, settings, seed=seed, fast=fast, overwrite=overwrite)  # again, under the lock
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(out)
    if saved is None and overwrite:
        start_over(out)
    threads = threads or 1
    results = saved or new_results(settings, fast=fast, seed=seed)
    results.update(status="running", stop_signal=None, machine={
        "processor": platform.processor() or platform.machine(), "threads": threads, "torch": torch.__version__})
    results.setdefault("trained", {})
    earlier = float(results.get("total_seconds") or 0.0)
    started = time.perf_counter()

    def save_results(status: str | None = None) -> None:
        if status is not None:
            results["status"] = status
        results["total_seconds"] = round(earlier + time.perf_counter() - started, 1)
        write_results(out, results)

    save_results()  # from here on OUT is this experiment's folder: a rerun continues it
    todo = [(t, a) for t, a in model_names(tasks) if a not in results["tasks"].get(t, {}).get("archs", {})]
    if saved is not None:
        done = len(model_names(tasks)) - len(todo)
        others = [t for t in results["tasks"] if t not in tasks]
        say(f"paths: continuing the experiment in {out}: {done} of {len(model_names(tasks))} models done earlier"
            + (f"; the results of {', '.join(others)} are kept" if others else ""))
    runs_left = sum(model_key(t, a) not in results["trained"] for t, a in todo)
    saved_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    stop = StopRequest()
    try:
        with signals_stop_runs(stop, say, "the paths experiment"):
            for task in tasks:
                pending = [a for t, a in todo if t == task]
                if not pending or stop.stopped:
                    continue
                entry = task_entry(results, task, settings, symbol=task in SYMBOL_TASKS)
                configs = sized_configs(settings, task, seed)
                example = example_pair(task, settings, seed)
                for arch in pending:
                    if stop.stopped:
                        break
                    key, run_dir = model_key(task, arch), out / "runs" / run_name(task, arch)
                    d_model = configs[arch].d_model
                    trained = results["trained"].get(key)
                    if trained is None:
                        state = saved_progress(run_dir)
                        if state is not None and state["finished"]:  # killed between training and its record
                            trained = {"steps": state["step"], "train_seconds": round(state["wallclock"], 2),
                                       "status": "completed" if state["step"] >= (state["max_steps"] or 0)
                                       else "time limit", "final_train_loss": _last_train_loss(run_dir)}
                        else:
                            runs_left -= 1
                            if state is not None:
                                cap = state["time_budget_s"]  # the run's own cap: its schedule follows it
                                what = f"resuming at step {state['step']} of {state['max_steps']}"
                            else:
                                cap = None if settings.budget_minutes is None else round(max(
                                    5.0, TRAIN_SHARE * (60 * settings.budget_minutes - (time.perf_counter() - started))
                                    / (runs_left + 1)), 1)
                                what = f"d_model {d_model}, {num_parameters(build_model(configs[arch], device='meta')):,} parameters"
                            say(f"paths: {task} / {arch}: {what}")
                            cfg = train_config(settings, task, arch, d_model, out, seed, threads, progress, cap,
                                               resume=state is not None)
                            result = train(cfg, step_callbacks=[stop.engine_callback, *step_callbacks],
                                           say=lambda message, name=f"{task} / {arch}": say(f"paths: {name}: {message}"))
                            if stop.note(result):
                                say(f"paths: {task} / {arch}: interrupted at step {result.steps} of {result.total_steps} "
                                    f"(checkpoint saved)")
                                break
                            trained = {"steps": result.steps, "train_seconds": round(result.elapsed, 2),
                                       "status": "time limit" if result.stopped_by == "time budget" else result.status,
                                       "final_train_loss": result.train_loss}
                        results["trained"][key] = trained
                        save_results()
                    cfg = train_config(settings, task, arch, d_model, out, seed, threads, progress, None)
                    record = evaluate_model(cfg, settings, task, arch, seed, trained, example, out)
                    add_record(results, task, arch, record, entry)
                    save_results()
                    say(f"paths: {task} / {arch}: {trained['steps']} steps in {trained['train_seconds']:.0f} s, "
                        f"exact match {record['exact_match']:.1%}")
                if all(a in entry["archs"] for a in ARCHS_COMPARED):
                    draw_task_dependency(out, task, example, {a: out / "runs" / run_name(task, a) for a in ARCHS_COMPARED})
        results["stop_signal"] = stop.signal
        status = "interrupted" if stop.stopped else "complete"
        if status == "interrupted":
            say(f"paths: stopped{' by ' + signal_name(stop.signal) if stop.signal else ''}; rerun the same command "
                "to continue (finished models are kept, the interrupted one resumes from its checkpoint)")
        save_results(status)
        if results["tasks"]:
            draw_paths(out / FIGURE_FILE, results)
            write_report(out / REPORT_FILE, results)
    except BaseException:
        results["stop_signal"] = stop.signal
        with contextlib.suppress(Exception):  # the error itself matters more
            save_results("interrupted")  # what is done stays done; the same command continues
        raise
    finally:
        torch.set_num_threads(saved_threads)
    return results
