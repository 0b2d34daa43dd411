"""The induction experiment (``seqlab induction``): how does attention move information by content?

One attention layer cannot find "the token that followed the last time this token appeared": a
key holds only its own token and position, and the repeat distance changes from example to
example. Two layers can: a first-layer head copies each token's predecessor into its position (a
previous-token head), and a second-layer head matches the current token against that copy and
attends to the token after it (an induction head).

Four models train one after another on :mod:`seqlab.induction.task` through the shared engine:
``attn1``, ``attn2`` (attention-only, one and two layers), ``mlp2`` (two layers with MLPs) and
``lstm``. Eval hooks log the in-context loss and every head's scores at each evaluation; after
training the repeat accuracy is measured at each repeat distance. OUT/ gets ``results.json``
(:mod:`~seqlab.induction.results`), ``induction.png`` (:mod:`~seqlab.induction.figures`),
``report.md`` and ``runs/{model}/`` (engine runs: config.json, log.jsonl, checkpoints).

The loop (lock, stale files, signals, resume) is :class:`seqlab.training.campaign.Campaign`: the
same command run again skips finished models and resumes an interrupted one from its checkpoint
(the same batches: the same weights as an uninterrupted run); Ctrl-C or SIGTERM saves the model
in training, writes results.json and exits 130 or 143.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqlab.induction.results import (
    COMMAND,
    FIGURE_FILE,
    REPORT_FILE,
    add_model,
    check_out,
    new_results,
    start_over,
    write_results,
)
from seqlab.induction.settings import FAST, FULL, MODELS, InductionSettings
from seqlab.induction.task import (
    RepeatTrainConfig,
    accuracy_by_distance,
    load_trained,
    train,
)
from seqlab.runs.log import read_jsonl
from seqlab.runs.state import TrainState
from seqlab.runs.status import Status
from seqlab.training.campaign import RESUME_HINT, Campaign, interrupted_line, torch_threads
from seqlab.runs.experiment import ExperimentResults

CURVE_KEYS = ("val_loss", "loss_first_half", "loss_repeat", "in_context_loss", "repeat_accuracy")


def train_config(settings: InductionSettings, name: str, out: Path, seed: int, threads: int | None,
                 progress: bool, *, resume: bool = False) -> RepeatTrainConfig:
    """The engine settings of one model of the experiment."""
    spec = MODELS[name]
    return RepeatTrainConfig(
        out_dir=str(out / "runs" / name), vocab_size=settings.vocab_size, half=settings.half,
        min_repeat=settings.min_repeat, arch=spec.arch, d_model=settings.d_model, num_layers=spec.layers,
        num_heads=settings.num_heads, ffn=spec.ffn, max_steps=settings.steps_of(name), batch_size=settings.batch_size,
        lr=settings.lr, warmup_steps=settings.warmup_steps, weight_decay=settings.weight_decay,
        eval_interval=settings.eval_interval, eval_batches=settings.eval_batches,
        checkpoint_interval=settings.eval_interval, log_interval=settings.eval_interval, seed=seed, device="cpu",
        threads=threads, progress=progress, resume=resume)


def _best(record: dict[str, Any], role: str, layer: int | None = None) -> float | None:
    prefix = f"heads/{role}/" + ("" if layer is None else f"L{layer}H")
    values = [v for k, v in record.items() if k.startswith(prefix)]
    return max(values) if values else None


def learning_curve(run_dir: Path, layers: int) -> dict[str, list]:
    """Per evaluation of the run's log.jsonl: the in-context metrics, the best last-layer head's
    induction score and the best first-layer head's previous-token score (None for the LSTM)."""
    evals = [r for r in read_jsonl(run_dir / "log.jsonl", drop_torn_last_line=True) if "in_context_loss" in r]
    curve: dict[str, list] = {"steps": [r["step"] for r in evals]}
    for key in CURVE_KEYS:
        curve[key] = [r.get(key) for r in evals]
    curve["induction"] = [_best(r, "induction", layers - 1) for r in evals]
    curve["previous_token"] = [_best(r, "previous_token", 0) for r in evals]
    return curve


def induction_bump(curve: dict[str, list]) -> dict[str, Any] | None:
    """The evaluation interval in which the in-context loss fell the most, with the best
    last-layer head's induction score at its two ends (None with fewer than two evaluations)."""
    losses = curve["in_context_loss"]
    if len(losses) < 2:
        return None
    drops = [losses[i] - losses[i + 1] for i in range(len(losses) - 1)]
    i = max(range(len(drops)), key=drops.__getitem__)
    score = curve["induction"]
    return {"from_step": curve["steps"][i], "to_step": curve["steps"][i + 1], "loss_drop": drops[i],
            "induction_before": score[i], "induction_after": score[i + 1]}


def model_record(settings: InductionSettings, name: str, out: Path, seed: int, trained: dict[str, Any]) -> dict[str, Any]:
    """The record of one trained model: its curves, its final scores and its accuracy by distance."""
    spec = MODELS[name]
    cfg = train_config(settings, name, out, seed, None, False)
    model = load_trained(out / "runs" / name, cfg)
    curve = learning_curve(out / "runs" / name, spec.layers)
    final = {key: curve[key][-1] if curve[key] else None for key in (*CURVE_KEYS, "induction", "previous_token")}
    return {"label": spec.label, "arch": spec.arch, "layers": spec.layers, "ffn": spec.ffn,
            "parameters": sum(p.numel() for p in model.parameters()), **trained, "curve": curve, "final": final,
            "bump": induction_bump(curve),
            "by_distance": accuracy_by_distance(model, list(settings.distances), half=settings.half,
                                                vocab_size=settings.vocab_size, rows=settings.distance_rows,
                                                seed=seed)}


def _say_default(message: str) -> None:
    print(message, flush=True)


def run_induction(out: str | Path, *, fast: bool = False, seed: int = 0, threads: int | None = None,
                  progress: bool = True, settings: InductionSettings | None = None,
                  say: Callable[[str], None] | None = None, overwrite: bool = False,
                  step_callbacks: list[Callable] | tuple = ()) -> dict[str, Any]:
    """Run the experiment into ``out`` (or continue the one there); returns the results written to
    results.json, whose ``"status"`` is "completed" or "interrupted" (by a signal, or a step
    callback's ``request_stop``). ``out`` must be new, empty or this experiment's own folder with
    the same settings and seed (:func:`seqlab.induction.results.check_out`); it is locked while
    the experiment runs. ``threads`` defaults to 1 (the models are small; on a shared 2-core
    machine one thread is the fastest)."""
    import matplotlib

    matplotlib.use("Agg")
    out = Path(out)
    settings = settings or (FAST if fast else FULL)
    say = say or _say_default
    threads = threads or 1
    campaign = Campaign(out, COMMAND, what="the induction experiment", say=say, prefix="induction: ",
                        hint=f"{RESUME_HINT} (finished models are kept, the interrupted one resumes from its checkpoint)",
                        check=lambda: check_out(out, settings, seed=seed, fast=fast, overwrite=overwrite))
    ledger = ExperimentResults(lambda document: write_results(out, document))
    results, save_results = ledger.results, ledger.save
    points: list[_Model] = []

    def prepare(saved: dict[str, Any] | None) -> None:
        if saved is None and overwrite:
            start_over(out)
        ledger.begin(saved, new_results(settings, fast=fast, seed=seed), threads=threads)
        points[:] = [_Model(name, out / "runs" / name) for name in MODELS if name not in results["models"]]
        if saved is not None:
            say(f"induction: continuing the experiment in {out}: {len(MODELS) - len(points)} of {len(MODELS)} "
                "models done earlier")

    def train_one(model: _Model, state: TrainState | None, callbacks: list[Callable], engine_say: Callable[[str], None]):
        index = list(MODELS).index(model.name) + 1
        steps = settings.steps_of(model.name)
        what = f"resuming at step {state.step} of {steps}" if state is not None else f"{steps} steps"
        say(f"induction: model {index}/{len(MODELS)} {model.name} ({MODELS[model.name].label}): {what}")
        cfg = train_config(settings, model.name, out, seed, threads, progress, resume=state is not None)
        return train(cfg, step_callbacks=[*callbacks, *step_callbacks],
                     say=lambda message: engine_say(f"induction: {model.name}: {message}"))

    def record(model: _Model, result: Any, state: TrainState | None) -> None:
        if result is not None:
            trained = {"steps": result.steps, "train_seconds": round(result.elapsed, 2)}
        else:  # killed between its last step and its record: the checkpoint says how far it got
            trained = {"steps": state.step, "train_seconds": round(state.elapsed, 2)}
        evaluated = model_record(settings, model.name, out, seed, trained)
        add_model(results, model.name, evaluated)
        save_results()
        final = evaluated["final"]
        score = "" if final["induction"] is None else f", best last-layer induction score {final['induction']:.2f}"
        say(f"induction: {model.name}: {trained['steps']} steps in {trained['train_seconds']:.0f} s, in-context loss "
            f"{final['in_context_loss']:+.2f} nats, repeat accuracy {final['repeat_accuracy']:.0%}{score}")

    def interrupted(model: _Model, result: Any) -> None:
        say(f"induction: {model.name}: {interrupted_line(result)}")

    def summarize(status: Status) -> None:
        results["stop_signal"] = campaign.stop.signal
        save_results(status)
        if status is not Status.RUNNING and results["models"]:
            from seqlab.induction.figures import draw_induction
            from seqlab.induction.report import write_report

            draw_induction(out / FIGURE_FILE, results)
            write_report(out / REPORT_FILE, results)

    with torch_threads(threads):
        campaign.run(points, prepare=prepare, recorded=lambda model: results["models"].get(model.name),
                     reached_end=lambda model, state: state.step >= settings.steps_of(model.name), train_one=train_one,
                     record=record, summarize=summarize, interrupted=interrupted)
    return results


@dataclass
class _Model:
    """One model of the experiment: a point of its campaign."""

    name: str
    run_dir: Path
