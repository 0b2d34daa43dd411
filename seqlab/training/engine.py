"""The training loop behind ``seqlab train`` and ``seqlab seq2seq train``: one engine, any task.

A task (:mod:`seqlab.training.task`) says what is learned; the engine does the rest, the same for
every task: schedule, AdamW, clipping, precision, compile, DDP and accumulation, signals, the time
budget, evaluation and checkpoints, non-finite guards, exact resume, the run lock, log and progress::

    result = Engine(LanguageModelTask(config)).run()       # TrainResult: status, steps, losses

    with Engine.build(task) as engine:                     # a probe of the step time
        loss, grad_norm, lr = engine.train_step(0)

One optimizer step draws one global batch of ``batch_size * grad_accum_steps * world_size`` examples
from a seeded NumPy generator, the same on every process; each process takes its rows, and each
micro-batch's loss is weighted by its share of the batch's target tokens, so any split equals one
step on the whole batch. The generator's state is in every checkpoint (from before the batch drawn
ahead while the device computes), so a resumed run draws exactly the batches of an uninterrupted one.

On the GPU path losses are read from the device only at log, eval, checkpoint and last steps
(:class:`~seqlab.training.guards.StepReader`); under DDP a stop request is agreed on at those steps.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from seqlab.atomic import link_or_copy
from seqlab.model.checks import on_gpu_path
from seqlab.runs.checkpoint import (
    DiskFullError,
    checkpoint_files,
    is_disk_full,
    remove_old_checkpoints,
    save_checkpoint,
)
from seqlab.runs.directory import check_out_dir, remove_foreign_files, remove_run_temporaries
from seqlab.runs.kinds import KINDS, Kind, check_kind, describe_metrics, kind_hint, run_kind
from seqlab.runs.lock import RunLock, RunLockedError
from seqlab.runs.state import TrainState
from seqlab.runs.status import Status
from seqlab.runtime import compile_model, peak_flops, resolve_device, resolve_precision
from seqlab.training.clipping import clip_grad_norm
from seqlab.training.distributed import (
    DistributedContext,
    all_reduce_mean,
    any_true,
    barrier,
    cleanup_distributed,
    leave_to_main_process,
    setup_distributed,
)
from seqlab.training.guards import NonFiniteLossError, StepReader, check_finite_weights
from seqlab.training.interrupt import signal_name, signals_request_stop
from seqlab.training.memory import build_if_it_fits
from seqlab.training.optimizer import AdamW, weight_decay_groups
from seqlab.training.progress import StepReporter, start_message
from seqlab.training.result import TrainResult
from seqlab.training.run_log import RunLog
from seqlab.training.run_state import check_work_left, restore_run, run_extra
from seqlab.training.schedule import RunSchedule, plan_schedule
from seqlab.training.task import Drawn, EvalContext, Facts, Task
from seqlab.training.task_loss import TaskLoss, fused_loss_wanted

__all__ = ["Engine", "NonFiniteLossError", "TrainResult"]


class Engine:
    """Runs (or resumes) one training run of ``task``.

    ``step_callbacks`` are called as ``callback(engine, step)`` after each completed step; they may
    call :meth:`request_stop` (Ctrl-C and SIGTERM do the same), after which the engine saves a
    checkpoint and returns with status "interrupted". ``clock`` gives the seconds that elapsed
    time and ``time_budget_s`` are measured in (a test passes a fake one); ``say`` receives the
    messages for the user (default: stderr, main process only).

    ``eval_hooks`` are called as ``hook(model, where) -> dict[str, float]`` at every evaluation,
    after the task's own metrics (same model, eval mode, no gradients; ``where`` the
    :class:`~seqlab.training.task.EvalContext`); their metrics join the task's in the evaluation
    record of log.jsonl, e.g. the head scores of ``seqlab train --track-heads``.
    """

    def __init__(self, task: Task, *, step_callbacks: list[Callable] | None = None,
                 clock: Callable[[], float] = time.perf_counter, say: Callable[[str], None] | None = None,
                 eval_hooks: list[Callable] | None = None):
        self.task = task
        self.config = task.config
        self.text = KINDS[Kind(task.kind)]  # the words of every message about this kind of run
        self.step_callbacks = list(step_callbacks or [])
        self.eval_hooks = list(eval_hooks or [])
        self._clock = clock
        self._say_to = say
        self._stop_reason: str | None = None
        self._stop_signal: int | None = None
        self.lock: RunLock | None = None
        self.run_dir = Path(self.config.out_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        # set by prepare(): until then messages are the main process's and nothing is built
        self.prepared = False
        self.dist = DistributedContext()
        self.device: torch.device = torch.device("cpu")
        self.precision = "fp32"
        self.pin_memory = False           # batches drawn into page-locked memory (a CUDA device)
        self.total_steps = 0
        self.raw_model: torch.nn.Module | None = None
        self.model: torch.nn.Module | None = None   # what a step calls: TaskLoss, maybe compiled, maybe DDP
        self.compiled = False
        self._compile_tried = False
        self.fused_loss = False
        self.optimizer: AdamW | None = None
        self.scaler: torch.amp.GradScaler | None = None
        self.sampler = np.random.default_rng(self.config.seed)
        self._ahead: tuple[dict, Drawn] | None = None  # (sampler state before it, the next step's batch)
        self.step = 0                      # completed optimizer steps
        self.tokens_seen = 0
        self.step_tokens = 0               # the last step's target tokens over all processes
        self.elapsed_before = 0.0          # training seconds before this session
        self.shared_elapsed = 0.0          # the same on every process (it sets the rate)
        self.log_window: list[float] = []
        self.old_checkpoints: list[Path] = []  # --overwrite: the old run's, replaced at the first save
        self.schedule: RunSchedule | None = None
        self.schedule_notes: list[str] = []
        self.last_checkpoint: tuple[int, Path] | None = None
        self.run_log: RunLog | None = None
        self.report: StepReporter | None = None
        self._started = clock()

    @classmethod
    def build(cls, task: Task, **options) -> Engine:
        """An engine with everything set up (:meth:`prepare`), ready for :meth:`train_step`; use it
        as a context manager, or call :meth:`close`."""
        engine = cls(task, **options)
        try:
            engine.prepare()
        except BaseException:
            engine.close()
            raise
        return engine

    def __enter__(self) -> Engine:
        if not self.prepared:
            self.prepare()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop_reason = reason

    # -- setup ------------------------------------------------------------------------------
    def prepare(self) -> None:
        """Check the run directory and take its lock, set up the device and processes, read the
        data, build the model and optimizer, and restore the checkpoint on ``--resume``."""
        cfg, task, text = self.config, self.task, self.text
        check_out_dir(self.run_dir, resume=cfg.resume, flag=text.out_flag, command=text.train_command)
        if cfg.resume:
            check_kind(self.run_dir, task.kind, "resume")
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        device = resolve_device(cfg.device)
        self.dist = setup_distributed(device.type)
        if device.type == "cuda" and self.dist.enabled:
            device = torch.device("cuda", self.dist.local_rank)
        self.device = device
        self.precision = resolve_precision(cfg.precision, device)
        task.prepare(self._say)
        self.total_steps = cfg.total_steps(self.dist.world_size)
        torch.manual_seed(cfg.seed)  # same initial weights on every process
        self.raw_model = build_if_it_fits(task.build_model, device, "choose a smaller --d-model or --num-layers")
        self.pin_memory = device.type == "cuda"  # batches drawn into page-locked memory: asynchronous copies
        self.fused_loss = fused_loss_wanted(cfg.fused_loss, next(self.raw_model.parameters()))
        self.optimizer = AdamW(weight_decay_groups(self.raw_model), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                               eps=cfg.eps, weight_decay=cfg.weight_decay)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.sampler = np.random.default_rng(cfg.seed)
        self._ahead: tuple[dict, Drawn] | None = None  # (sampler state before it, the next step's batch)
        if not cfg.resume and (self.ckpt_dir / "latest.pt").exists() and not cfg.overwrite:
            found = run_kind(self.run_dir)
            what = KINDS[found].description if found else "a run"
            go_on = "continue it with --resume" if found in (None, task.kind) else kind_hint(found, "resume", self.run_dir)
            raise FileExistsError(f"{self.run_dir} already holds {what} ({self.ckpt_dir / 'latest.pt'}); {go_on}, start "
                                  f"over with --overwrite, or choose another {text.out_flag}")
        self._lock_run_dir()
        if self.dist.is_main:
            remove_run_temporaries(self.run_dir)
        state = TrainState()
        if cfg.resume:
            state = restore_run(self.ckpt_dir / "latest.pt", self.raw_model, self.optimizer, self.sampler,
                                self.scaler, global_batch=self.global_batch, say=self._say, check=task.check_resume,
                                config=cfg, data_note=task.resume_data_note,
                                work_left=lambda saved: check_work_left(cfg, saved, self.total_steps,
                                                                        task.step_limit(self.total_steps)))
        self.step, self.tokens_seen, self.elapsed_before = state.step, state.tokens, state.elapsed
        self.log_window = state.log_window
        # --overwrite: the old run's files stay until this run has saved its first checkpoint
        self.old_checkpoints = checkpoint_files(self.ckpt_dir) if cfg.overwrite and not cfg.resume else []
        check_work_left(cfg, state, self.total_steps, task.step_limit(self.total_steps))
        self.schedule, self.schedule_notes = plan_schedule(
            lr=cfg.lr, min_lr=cfg.final_lr, warmup_steps=cfg.warmup_steps, total_steps=self.total_steps,
            saved_horizon=state.horizon, reschedule=cfg.reschedule, time_budget_s=cfg.time_budget_s)
        self.shared_elapsed = self.elapsed_before  # the same on every process (it sets the rate)
        self.last_checkpoint = (self.step, self.ckpt_dir / "latest.pt") if cfg.resume else None
        self.model = self._wrap(self.raw_model)
        self._started = self._clock()
        self.prepared = True

    def _lock_run_dir(self) -> None:
        """Take the run directory's lock (main process); every process stops if it is held elsewhere."""
        refused = None
        if self.dist.is_main:
            self.lock = RunLock(self.run_dir, self.text.train_command)
            try:
                self.lock.acquire()
            except RunLockedError as error:
                refused, self.lock = error, None
        if any_true(refused is not None, self.dist, self.device):
            raise refused or RunLockedError(f"{self.run_dir} is in use by another process (see the main process)")

    def _wrap(self, model: torch.nn.Module, *, compile: bool | None = None) -> torch.nn.Module:
        """What the training step calls: the model and its loss (:class:`TaskLoss`, batch -> loss),
        optionally compiled as one region, DDP-wrapped when distributed."""
        self.compiled = False
        model = TaskLoss(model, self.task, precision=self.precision, device=self.device, fused=self.fused_loss,
                         pad_vocab_multiple=self.config.pad_vocab_multiple)
        if self.config.compile if compile is None else compile:
            model, reason = compile_model(model, self.device)
            if reason:
                self._say(f"compile: switched off ({reason}); training eagerly")
            else:
                self.compiled = True
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            model = DistributedDataParallel(model, device_ids=ids)
        return model

    @property
    def global_batch(self) -> int:
        return self.config.batch_size * self.config.grad_accum_steps * self.dist.world_size

    def _say(self, message: str) -> None:
        if not self.dist.is_main:
            return
        if self._say_to is not None:
            self._say_to(message)
            return
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)

    # -- the pieces of one step ---------------------------------------------------------------
    def learning_rate(self, step: int) -> float:
        """Warm-up then cosine reaching min_lr at the schedule's last step, or when the time budget
        is spent (step is 0-based; see :class:`seqlab.training.schedule.RunSchedule`)."""
        return self.schedule.rate(step, self.shared_elapsed)

    def _my_rows(self, micro: int) -> slice:
        """Rows of the global batch for this process's micro-batch ``micro``."""
        b = self.config.batch_size
        start = (self.dist.rank * self.config.grad_accum_steps + micro) * b
        return slice(start, start + b)

    def train_step(self, step: int) -> tuple[torch.Tensor, torch.Tensor, float]:
        """One optimizer step; returns (this process's share of the loss, grad norm, lr), the first
        two as scalar tensors on the device, not yet read (:class:`~seqlab.training.guards.StepReader`
        reads them). ``self.step_tokens`` is the step's target tokens over all processes.

        The first step of a compiled model is a trial: if compilation fails there, the step is
        redone eagerly with the same batch, after a message.
        """
        if not self.compiled or self._compile_tried:
            return self._train_step(step)
        sampler_state, ahead = self.sampler.bit_generator.state, self._ahead
        try:
            return self._train_step(step)
        except Exception as error:  # noqa: BLE001 - any compiler failure means "train eagerly"
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
            self._say(f"compile: the compiled model failed ({type(error).__name__}: {first_line[:200]}); "
                      "switched off, training eagerly")
            self.sampler.bit_generator.state, self._ahead = sampler_state, ahead
            self.optimizer.zero_grad(set_to_none=True)
            self.model = self._wrap(self.raw_model, compile=False)
            return self._train_step(step)
        finally:
            self._compile_tried = True

    def _train_step(self, step: int) -> tuple[torch.Tensor, torch.Tensor, float]:
        cfg, task = self.config, self.task
        lr = self.learning_rate(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        drawn = self._next_batch()
        self.step_tokens = drawn.tokens
        loss_sum = torch.zeros((), device=self.device)
        for micro in range(cfg.grad_accum_steps):
            batch = task.select(drawn, self._my_rows(micro), self.device)
            last_micro = micro == cfg.grad_accum_steps - 1
            sync = contextlib.nullcontext() if (last_micro or not self.dist.enabled) else self.model.no_sync()
            with sync:
                loss = self.model(batch) * (batch.tokens * self.dist.world_size / max(1, drawn.tokens))
                (self.scaler.scale(loss) if self.scaler else loss).backward()
            loss_sum += loss.detach()
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        clip = cfg.grad_clip if cfg.grad_clip > 0 else math.inf
        grad_norm = clip_grad_norm(self.raw_model.parameters(), clip)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if step + 1 < self.total_steps:  # the device is busy with this step: draw the next batch now
            self._ahead = (self.sampler.bit_generator.state, task.draw(self.sampler, self.global_batch,
                                                                          pin_memory=self.pin_memory))
        # the gradient norm is the same on every process (DDP averaged the gradients); the loss is
        # averaged over processes when it is read
        return loss_sum, grad_norm.to(self.device, torch.float32), lr

    def _next_batch(self) -> Drawn:
        """The batch drawn ahead at the end of the last step, or (first step, after a resume) a new one."""
        if self._ahead is not None:
            drawn, self._ahead = self._ahead[1], None
            return drawn
        return self.task.draw(self.sampler, self.global_batch, pin_memory=self.pin_memory)

    @property
    def sampler_state(self) -> dict:
        """The batch generator's state a checkpoint holds: from before any batch drawn ahead."""
        return self._ahead[0] if self._ahead is not None else self.sampler.bit_generator.state

    def evaluate_metrics(self) -> dict[str, float]:
        """The task's validation metrics and the eval hooks' (eval mode, no gradients), averaged
        over processes."""
        cfg = self.config
        self.model.eval()
        where = EvalContext(self.device, self.precision, [self._my_rows(m) for m in range(cfg.grad_accum_steps)],
                            self.global_batch)
        try:
            with torch.no_grad():
                metrics = self.task.evaluate(self.raw_model, where)
                for hook in self.eval_hooks:
                    metrics = {**metrics, **hook(self.raw_model, where)}
        finally:
            self.model.train()
        return {name: all_reduce_mean(value, self.dist, self.device) for name, value in metrics.items()}

    def save(self, step: int) -> Path | None:
        """Write the checkpoint of ``step`` (step_{step:07d}.pt and latest.pt pointing at it, or only
        latest.pt, as the task wants), atomically; main process only. The first save of a run that
        replaces an old one also replaces the old run's files (see the module docstring)."""
        if not self.dist.is_main:
            return None
        check_finite_weights(self.raw_model.parameters(), step, self.last_checkpoint)
        extra = run_extra(config=self.config, state=self.train_state(), global_batch=self.global_batch,
                          world_size=self.dist.world_size, scaler=self.scaler)
        latest = self.ckpt_dir / "latest.pt"
        path = self.ckpt_dir / f"step_{step:07d}.pt" if self.task.keep_step_checkpoints else latest
        try:
            save_checkpoint(self.raw_model, self.optimizer, step, path, extra=extra)
            if path != latest:
                link_or_copy(path, latest)  # same bytes, no second write
        except (OSError, RuntimeError) as error:
            if is_disk_full(error):
                raise DiskFullError(path, getattr(error, "free_bytes", None), self.last_checkpoint) from error
            raise
        self.last_checkpoint = (step, latest)
        if self.old_checkpoints:  # --overwrite: the new run's files replace the old run's only now
            self._write_run_files()
            remove_old_checkpoints(self.old_checkpoints, keep={path, latest})
            self.old_checkpoints = []
        if self.run_log is not None:
            self.run_log.commit()
        return latest

    def train_state(self) -> TrainState:
        """What a checkpoint of this moment saves besides weights and optimizer."""
        window = self.report.window if self.report is not None else self.log_window
        return TrainState(step=self.step, tokens=self.tokens_seen, elapsed=self.elapsed(), sampler=self.sampler_state,
                          log_window=list(window), horizon=self.schedule.horizon)

    def _write_run_files(self) -> None:
        if self.config.overwrite and not self.config.resume:  # a run of the other kind leaves nothing behind
            remove_foreign_files(self.run_dir, self.task.kind)
        self.task.write_run_files(self.run_dir, world_size=self.dist.world_size, total_steps=self.total_steps,
                                  parameters=self.raw_model_parameters)

    @property
    def raw_model_parameters(self) -> int:
        return sum(p.numel() for p in self.raw_model.parameters())

    def elapsed(self) -> float:
        return self.elapsed_before + (self._clock() - self._started)

    # -- run --------------------------------------------------------------------------------
    def run(self) -> TrainResult:
        """Set up and train. Under torchrun an error that every process meets alike (an existing or
        locked run directory, a resume that does not fit, missing data, a NaN loss) is raised on the
        main process only; the others exit quietly with status 1 (:class:`LeftToMainProcess`), so
        the user reads the message once."""
        try:
            try:
                self.prepare()
            except (ValueError, OSError, RunLockedError) as error:  # settings, files: the same on every process
                leave_to_main_process(error)
                raise
            with signals_request_stop(self._on_signal):
                try:
                    result = self._loop()
                except NonFiniteLossError as error:  # the losses are averaged over processes: all see it
                    leave_to_main_process(error)
                    raise
            barrier(self.dist)  # every process done (saved, logged) before the group goes
            return result
        finally:
            self.close()

    def close(self) -> None:
        """Release the run directory and leave the process group (``run`` does; call it after using
        :meth:`prepare` and :meth:`train_step` directly, as a probe of the step time does)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        cleanup_distributed(self.dist)

    def _loop(self) -> TrainResult:
        cfg, task, main = self.config, self.task, self.dist.is_main
        self._started = self._clock()
        parameters = self.raw_model_parameters
        facts = task.facts(self.global_batch)
        if main:
            if not self.old_checkpoints:  # with an old run to overwrite, at the first save (see save)
                self._write_run_files()
            self.run_log = RunLog(self.run_dir, cfg.to_dict(), resume_step=self.step if cfg.resume else None,
                                  plot_title=self._plot_title(facts, parameters),
                                  staged=bool(self.old_checkpoints))
        # MFU on a GPU: model FLOPs per token times tokens/s, as a share of the peak
        peak = peak_flops(self.device, self.precision)
        per_token = task.flops_per_token() if peak else None
        result = TrainResult(self.run_dir, self.step, self.total_steps, Status.COMPLETED, parameters=parameters)
        self.report = report = StepReporter(
            self.run_log, total=self.total_steps, initial=self.step, show_bar=main and cfg.progress,
            flops_per_token=per_token / self.dist.world_size if per_token else None,  # this process's share
            peak_flops=peak, time_budget_s=cfg.time_budget_s, window=self.log_window,
            label=self.text.progress_label.format(model=facts.model))
        self._say_start(facts)
        reader = StepReader(self.dist, grad_scaler=self.scaler is not None)
        read_every_step = not on_gpu_path(next(self.raw_model.parameters()))
        try:
            for step in range(self.step, self.total_steps):
                # 1. one optimizer step; its loss and gradient norm stay on the device for now
                compiling = self.compiled and not self._compile_tried
                t0 = time.perf_counter()
                loss, grad_norm, lr = self.train_step(step)
                dt = time.perf_counter() - t0
                done = step + 1
                reader.add(done, loss, grad_norm)
                if compiling:
                    self._say(f"compile: step {done} took {dt:.1f} s (compiling); it is left out of tokens/s")
                self.step, self.tokens_seen = done, self.tokens_seen + self.step_tokens
                out_of_time = self._time_is_up()
                last = done == self.total_steps or out_of_time
                log, evaluate, save = (done % n == 0 or last for n in (cfg.log_interval, cfg.eval_interval,
                                                                        cfg.checkpoint_interval))
                # 2. read (one wait for the GPU; NaN stops the run here), progress bar, log interval's mean
                read = read_every_step or log or evaluate or save
                losses, norm = reader.read(self.last_checkpoint) if read else ([], None)
                report.step(done, losses=losses, lr=lr, grad_norm=norm, seconds=dt, compiling=compiling,
                            write_log=log, wallclock=self.elapsed(), tokens=self.tokens_seen,
                            step_tokens=self.step_tokens)
                # 3. evaluate (a task's target metric may end the run here), 4. checkpoint
                target = None
                if evaluate:
                    result.metrics = self.evaluate_metrics()
                    result.val_loss = result.metrics.get("val_loss")
                    report.evaluation(done, result.metrics, wallclock=self.elapsed(), tokens=self.tokens_seen,
                                      describe=describe_metrics(result.metrics))
                    target = None if last else task.early_stop(result.metrics)
                if save or target:
                    self.save(done)
                if out_of_time:
                    result.status, result.stopped_by = Status.TIME_BUDGET, "time budget"
                    self._say(f"time budget of {cfg.time_budget_s:g} s spent at step {done}; saved "
                              f"{self.ckpt_dir / 'latest.pt'}")
                    break
                if target:
                    result.status, result.stopped_by = Status.TARGET_REACHED, target
                    self._say(f"{target}: saved {self.ckpt_dir / 'latest.pt'} at step {done}")
                    break
                # 5. callbacks, and a requested stop (Ctrl-C, SIGTERM) saves and ends the run
                for callback in self.step_callbacks:
                    callback(self, done)
                asked = self._stop_reason is not None
                if (read or not self.dist.enabled) and any_true(asked, self.dist, self.device) and not last:
                    report.take(reader.read(self.last_checkpoint)[0])  # a NaN since the last read stops it unsaved
                    self.save(done)
                    result.status, result.stopped_by = Status.INTERRUPTED, self._stop_reason or "stopped"
                    result.stop_signal = self._stop_signal
                    self._say(f"{result.stopped_by}: saved {self.ckpt_dir / 'latest.pt'} at step "
                              f"{done}; continue with --resume")
                    break
        finally:
            report.close()
        result.steps, result.tokens_seen, result.elapsed = self.step, self.tokens_seen, self.elapsed()
        result.train_loss, result.train_loss_steps = report.final_loss()
        result.tokens_per_second, result.excluded_steps = report.speed.tokens_per_second, report.speed.excluded
        result.history = self.run_log.history if self.run_log is not None else []
        result.headline = describe_metrics(result.metrics) if result.metrics else None
        return result

    def _plot_title(self, facts: Facts, parameters: int) -> str:
        return self.text.plot_title.format(run_name=self.run_dir.name, model=facts.model, data=Path(facts.data).name,
                                           parameters=parameters)

    def _say_start(self, facts: Facts) -> None:
        """The start line, the schedule's notes, and a word before a first step that compiles."""
        if self.step == 0:
            text = self.text
            details = text.start_details.format(model=facts.model, data=facts.data, examples=facts.examples)
            size = text.step_size.format(tokens=facts.tokens_per_step, rows=self.global_batch)
            self._say(start_message(self.raw_model_parameters, self.total_steps, self.config.time_budget_s, size,
                                    f"{self.device}, {self.precision}") + (f"; {details}" if details else ""))
        for note in self.schedule_notes:
            self._say(note)
        if self.compiled:
            self._say(f"compile: compiling the model for {self.device} during the first step (this can take "
                      "a minute); that step is left out of tokens/s")

    def _time_is_up(self) -> bool:
        """Whether the time budget is spent; also updates the elapsed time the rate follows, which
        every process takes from the same all-reduce (so all use the same rate and stop together)."""
        if self.config.time_budget_s is None:
            return False
        self.shared_elapsed = all_reduce_mean(self.elapsed(), self.dist, self.device)
        return self.shared_elapsed >= self.config.time_budget_s

    def _on_signal(self, signum: int) -> bool:
        """First Ctrl-C / SIGTERM: finish the step, save, exit (True). A second one: stop at once (False)."""
        if self._stop_reason is not None:
            return False
        name = signal_name(signum)
        self._stop_reason, self._stop_signal = f"interrupted ({name})", signum
        self._say(f"{name}: saving a checkpoint after this step (send it again to quit without saving)")
        return True
