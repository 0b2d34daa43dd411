"""The training loop behind ``seqlab train``.

One optimizer step draws one *global* batch of ``batch_size * grad_accum_steps * world_size``
windows from a seeded NumPy generator, identical on every process. Process ``r`` takes its rows
and splits them into ``grad_accum_steps`` micro-batches; each micro-batch loss is divided by
``grad_accum_steps`` and DDP averages over processes, so the update equals one step on the whole
global batch, whatever the split. The generator's state is part of every checkpoint, so a resumed
run draws exactly the batches the uninterrupted run would have drawn.

The run directory's files are described in :mod:`seqlab.training.run_dir`.

Step numbers in logs and checkpoints count completed optimizer steps (1 = after the first update).

Stopping early: Ctrl-C or SIGTERM (see :mod:`seqlab.training.interrupt`) finishes the step, saves
and returns "interrupted"; ``time_budget_s`` ends the run when its seconds are spent; a non-finite
loss or gradient norm stops it without saving (:mod:`seqlab.training.guards`).

On the GPU path losses are read from the device only at log, eval, checkpoint and last steps and
before a save (:class:`~seqlab.training.guards.StepReader`); under DDP there a stop request is agreed
on only at those steps, so it is honoured at the next one (one process stops at once).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from seqlab.accounting.costs import training_step_flops
from seqlab.atomic import link_or_copy
from seqlab.model import TransformerLM
from seqlab.model.checks import on_gpu_path
from seqlab.model.loss import cross_entropy
from seqlab.runtime import autocast_context, compile_model, peak_flops, resolve_device, resolve_precision
from seqlab.training.batching import get_batch
from seqlab.training.checkpoint import save_checkpoint
from seqlab.training.clipping import clip_grad_norm
from seqlab.training.config import TrainConfig
from seqlab.training.data import PreparedData
from seqlab.training.distributed import (
    DistributedContext,
    all_reduce_mean,
    any_true,
    cleanup_distributed,
    setup_distributed,
)
from seqlab.training.evaluation import validation_loss
from seqlab.training.guards import NonFiniteLossError, StepReader, check_finite_weights
from seqlab.training.interrupt import signal_name, signals_request_stop
from seqlab.training.logging_utils import RunLog
from seqlab.training.optimizer import AdamW, weight_decay_groups
from seqlab.training.progress import StepReporter, start_message
from seqlab.training.result import TrainResult
from seqlab.training.run_dir import (
    check_run_dir,
    checkpoint_files,
    remove_old_checkpoints,
    remove_run_temporaries,
    write_run_files,
)
from seqlab.training.run_state import RunState, check_work_left, restore_run, run_extra
from seqlab.training.schedule import plan_schedule

__all__ = ["NonFiniteLossError", "Trainer", "TrainResult", "train"]


class Trainer:
    """Builds the model, optimizer and data from a TrainConfig and runs (or resumes) the loop.

    ``step_callbacks`` are called as ``callback(trainer, step)`` after each completed step; they may
    call :meth:`request_stop` (Ctrl-C and SIGTERM do the same), after which the trainer saves a
    checkpoint and returns with status "interrupted". ``clock`` gives the seconds that elapsed
    time and ``time_budget_s`` are measured in (a test passes a fake one).
    """

    def __init__(self, config: TrainConfig, *, step_callbacks: list[Callable] | None = None,
                 clock: Callable[[], float] = time.perf_counter):
        self.config = config
        self.step_callbacks = list(step_callbacks or [])
        self._clock = clock
        self._stop_reason: str | None = None
        self._stop_signal: int | None = None

    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop_reason = reason

    # -- setup ------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
        check_run_dir(cfg)
        if not cfg.data_dir:
            raise ValueError("config: data_dir is required (a directory made by `seqlab prepare`)")
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        device = resolve_device(cfg.device)
        self.dist: DistributedContext = setup_distributed(device.type)
        if device.type == "cuda" and self.dist.enabled:
            device = torch.device("cuda", self.dist.local_rank)
        self.device = device
        self.precision = resolve_precision(cfg.precision, device)
        self.run_dir = Path(cfg.out_dir)
        self.ckpt_dir = self.run_dir / "checkpoints"
        self.data = PreparedData.open(cfg.data_dir, cfg.vocab_size)
        self.model_config = cfg.model_config(self.data.vocab_size)
        self.total_steps = cfg.total_steps(self.dist.world_size)
        self.data.check_context_length(cfg.context_length)
        torch.manual_seed(cfg.seed)  # same initial weights on every process
        self.raw_model = TransformerLM.from_config(self.model_config, device=device)
        self.optimizer = AdamW(weight_decay_groups(self.raw_model), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                               eps=cfg.eps, weight_decay=cfg.weight_decay)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.sampler = np.random.default_rng(cfg.seed)
        if self.dist.is_main:
            remove_run_temporaries(self.run_dir)
        state = RunState()
        if cfg.resume:
            state = restore_run(self.ckpt_dir / "latest.pt", self.raw_model, self.optimizer, self.sampler,
                                self.scaler, global_batch=self.global_batch, say=self._say)
        self.step, self.tokens_seen, self.elapsed_before = state.step, state.tokens_seen, state.elapsed_before
        if not cfg.resume and (self.ckpt_dir / "latest.pt").exists() and not cfg.overwrite:
            raise FileExistsError(f"{self.run_dir} already holds a run ({self.ckpt_dir / 'latest.pt'}); continue it "
                                  "with --resume, start over with --overwrite, or choose another --out-dir")
        # --overwrite: the old run's checkpoints stay until this run has saved its first one
        self.old_checkpoints = checkpoint_files(self.ckpt_dir) if cfg.overwrite and not cfg.resume else []
        check_work_left(cfg, state, self.total_steps)
        self.schedule, self.schedule_notes = plan_schedule(
            lr=cfg.lr, min_lr=cfg.final_lr, warmup_steps=cfg.warmup_steps, total_steps=self.total_steps,
            saved_horizon=state.schedule_steps, reschedule=cfg.reschedule, time_budget_s=cfg.time_budget_s)
        self.shared_elapsed = self.elapsed_before  # the same on every process (it sets the rate)
        self.last_checkpoint = (self.step, self.ckpt_dir / "latest.pt") if cfg.resume else None
        self._compile_tried = False
        self.model = self._wrap(self.raw_model)

    def _wrap(self, model: torch.nn.Module, *, compile: bool | None = None) -> torch.nn.Module:
        """The model the training step calls: optionally compiled, DDP-wrapped when distributed."""
        self.compiled = False
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
        if self.dist.is_main:
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
        """One optimizer step; returns (this process's mean loss, grad norm, lr), the first two as
        scalar tensors on the device, not yet read (:class:`~seqlab.training.guards.StepReader` reads them).

        The first step of a compiled model is a trial: if compilation fails there, the step is
        redone eagerly with the same batch, after a message.
        """
        if not self.compiled or self._compile_tried:
            return self._train_step(step)
        sampler_state = self.sampler.bit_generator.state
        try:
            return self._train_step(step)
        except Exception as error:  # noqa: BLE001 - any compiler failure means "train eagerly"
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
            self._say(f"compile: the compiled model failed ({type(error).__name__}: {first_line[:200]}); "
                      "switched off, training eagerly")
            self.sampler.bit_generator.state = sampler_state
            self.optimizer.zero_grad(set_to_none=True)
            self.model = self._wrap(self.raw_model, compile=False)
            return self._train_step(step)
        finally:
            self._compile_tried = True

    def _train_step(self, step: int) -> tuple[torch.Tensor, torch.Tensor, float]:
        cfg = self.config
        lr = self.learning_rate(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        inputs, targets = get_batch(self.data.train, self.global_batch, cfg.context_length, "cpu",
                                    generator=self.sampler)
        loss_sum = torch.zeros((), device=self.device)
        for micro in range(cfg.grad_accum_steps):
            rows = self._my_rows(micro)
            x = inputs[rows].to(self.device, non_blocking=True)
            y = targets[rows].to(self.device, non_blocking=True)
            last_micro = micro == cfg.grad_accum_steps - 1
            sync = contextlib.nullcontext() if (last_micro or not self.dist.enabled) else self.model.no_sync()
            with sync:
                with autocast_context(self.precision, self.device):
                    logits = self.model(x)
                loss = cross_entropy(logits.float(), y)
                scaled = loss / cfg.grad_accum_steps
                (self.scaler.scale(scaled) if self.scaler else scaled).backward()
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
        # the gradient norm is the same on every process (DDP averaged the gradients); the loss is
        # averaged over processes when it is read
        return loss_sum / cfg.grad_accum_steps, grad_norm.to(self.device, torch.float32), lr

    def evaluate(self) -> float:
        """Mean validation loss over eval_batches global batches (:mod:`seqlab.training.evaluation`)."""
        cfg = self.config
        self.model.eval()
        loss = validation_loss(self.raw_model, self.data.valid, batches=cfg.eval_batches,
                               global_batch=self.global_batch, context_length=cfg.context_length, seed=cfg.seed,
                               rows=[self._my_rows(m) for m in range(cfg.grad_accum_steps)],
                               precision=self.precision, device=self.device)
        self.model.train()
        return all_reduce_mean(loss, self.dist, self.device)

    def save(self, step: int) -> Path | None:
        """Write step_{step:07d}.pt and point latest.pt at it (both atomic); main process only."""
        if not self.dist.is_main:
            return None
        check_finite_weights(self.raw_model.parameters(), step, self.last_checkpoint)
        extra = run_extra(config=self.config, sampler=self.sampler, tokens=self.tokens_seen,
                          wallclock=self.elapsed(), global_batch=self.global_batch,
                          world_size=self.dist.world_size, schedule_steps=self.schedule.horizon, scaler=self.scaler)
        path = self.ckpt_dir / f"step_{step:07d}.pt"
        save_checkpoint(self.raw_model, self.optimizer, step, path, extra=extra)
        latest = link_or_copy(path, self.ckpt_dir / "latest.pt")  # same bytes, no second write
        self.last_checkpoint = (step, latest)
        if self.old_checkpoints:  # --overwrite: the new run's files replace the old run's only now
            self._write_run_files()
            remove_old_checkpoints(self.old_checkpoints, keep={path, latest})
            self.old_checkpoints = []
        return latest

    def _write_run_files(self) -> None:
        write_run_files(self.config, self.model_config, world_size=self.dist.world_size,
                        total_steps=self.total_steps)

    def elapsed(self) -> float:
        return self.elapsed_before + (self._clock() - self._started)

    # -- run --------------------------------------------------------------------------------
    def run(self) -> TrainResult:
        self._setup()
        try:
            with signals_request_stop(self._on_signal):
                return self._loop()
        finally:
            cleanup_distributed(self.dist)

    def _loop(self) -> TrainResult:
        cfg, main = self.config, self.dist.is_main
        self._started = self._clock()
        run_log = None
        if main:
            if not self.old_checkpoints:  # with an old run to overwrite, at the first save (see save)
                self._write_run_files()
            run_log = RunLog(self.run_dir, self.config.to_dict(), resume_step=self.step if cfg.resume else None,
                             plot_title=f"{self.run_dir.name}: {self.raw_model.num_parameters():,} parameters")
        # MFU on a GPU: model FLOPs per step over the step time, as a share of the peak
        peak = peak_flops(self.device, self.precision)
        flops_per_step = training_step_flops(self.model_config, cfg.context_length,
                                             cfg.batch_size * cfg.grad_accum_steps) if peak else None
        tokens_per_step = cfg.tokens_per_step(self.dist.world_size)
        result = TrainResult(self.run_dir, self.step, self.total_steps, "completed")
        report = StepReporter(run_log, total=self.total_steps, initial=self.step, show_bar=main and cfg.progress,
                              tokens_per_step=tokens_per_step, flops_per_step=flops_per_step, peak_flops=peak,
                              time_budget_s=cfg.time_budget_s)
        self._say_start(tokens_per_step)
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
                self.step, self.tokens_seen = done, self.tokens_seen + tokens_per_step
                out_of_time = self._time_is_up()
                last = done == self.total_steps or out_of_time
                log, evaluate, save = (done % n == 0 or last for n in (cfg.log_interval, cfg.eval_interval,
                                                                        cfg.checkpoint_interval))
                # 2. read (one wait for the GPU; NaN stops the run here), progress bar, log interval's mean
                read = read_every_step or log or evaluate or save
                losses, norm = reader.read(self.last_checkpoint) if read else ([], None)
                report.step(done, losses=losses, lr=lr, grad_norm=norm, seconds=dt, compiling=compiling,
                            write_log=log, wallclock=self.elapsed(), tokens=self.tokens_seen)
                # 3. evaluate, 4. checkpoint
                if evaluate:
                    result.val_loss = self.evaluate()
                    report.evaluation(done, result.val_loss, wallclock=self.elapsed(), tokens=self.tokens_seen)
                if save:
                    self.save(done)
                if out_of_time:
                    result.stopped_by = "time budget"
                    self._say(f"time budget of {cfg.time_budget_s:g} s spent at step {done}; saved "
                              f"{self.ckpt_dir / 'latest.pt'}")
                    break
                # 5. callbacks, and a requested stop (Ctrl-C, SIGTERM) saves and ends the run
                for callback in self.step_callbacks:
                    callback(self, done)
                asked = self._stop_reason is not None
                if (read or not self.dist.enabled) and any_true(asked, self.dist, self.device) and not last:
                    reader.read(self.last_checkpoint)  # a NaN since the last read stops the run unsaved
                    self.save(done)
                    result.status, result.stopped_by = "interrupted", self._stop_reason or "stopped"
                    result.stop_signal = self._stop_signal
                    self._say(f"{result.stopped_by}: saved {self.ckpt_dir / 'latest.pt'} at step "
                              f"{done}; continue with --resume")
                    break
        finally:
            report.close()
        result.steps, result.tokens_seen, result.elapsed = self.step, self.tokens_seen, self.elapsed()
        result.train_loss, result.train_loss_steps = report.train_loss, report.train_loss_steps
        result.tokens_per_second, result.excluded_steps = report.speed.tokens_per_second, report.speed.excluded
        result.history = run_log.history if run_log is not None else []
        return result

    def _say_start(self, tokens_per_step: int) -> None:
        """The start line, the schedule's notes, and a word before a first step that compiles."""
        if self.step == 0:
            self._say(start_message(self.raw_model.num_parameters(), self.total_steps, self.config.time_budget_s,
                                    tokens_per_step, f"{self.device}, {self.precision}"))
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


def train(config: TrainConfig, *, step_callbacks: list[Callable] | None = None) -> TrainResult:
    """Train (or resume) the run described by ``config``; see :class:`Trainer`."""
    return Trainer(config, step_callbacks=step_callbacks).run()
