"""The training loop behind ``seqlab train``.

One optimizer step draws one *global* batch of ``batch_size * grad_accum_steps * world_size``
windows from a seeded NumPy generator, identical on every process. Process ``r`` takes its rows
and splits them into ``grad_accum_steps`` micro-batches; each micro-batch loss is divided by
``grad_accum_steps`` and DDP averages over processes, so the update equals one step on the whole
global batch, whatever the split. The generator's state is part of every checkpoint, so a resumed
run draws exactly the batches the uninterrupted run would have drawn.

The run directory's files are described in :mod:`seqlab.training.run_dir`.

Step numbers in logs and checkpoints count completed optimizer steps (1 = after the first update).
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from seqlab.accounting.costs import training_step_flops
from seqlab.atomic import link_or_copy
from seqlab.model import TransformerLM
from seqlab.model.loss import cross_entropy
from seqlab.runtime import autocast_context, compile_model, peak_flops, resolve_device, resolve_precision
from seqlab.training.batching import get_batch
from seqlab.training.checkpoint import (
    capture_rng_state,
    load_checkpoint,
    read_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
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
from seqlab.training.interrupt import sigint_requests_stop
from seqlab.training.logging_utils import RunLog
from seqlab.training.optimizer import AdamW
from seqlab.training.run_dir import write_run_files
from seqlab.training.schedule import lr_cosine_schedule

class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the run stopped without saving the bad state."""


@dataclass
class TrainResult:
    run_dir: Path
    steps: int                      # completed optimizer steps
    total_steps: int
    status: str                     # "completed" | "interrupted"
    train_loss: float | None = None  # mean over the last log interval
    val_loss: float | None = None    # last evaluation
    tokens_per_second: float = 0.0   # training steps only (eval and checkpoints excluded)
    tokens_seen: int = 0
    elapsed: float = 0.0             # wallclock of the run, across resumes
    history: list[dict[str, Any]] = field(default_factory=list)


# -- the trainer -----------------------------------------------------------------------------


class Trainer:
    """Builds the model, optimizer and data from a TrainConfig and runs (or resumes) the loop.

    ``step_callbacks`` are called as ``callback(trainer, step)`` after each completed step; they may
    call :meth:`request_stop` (Ctrl-C does the same), after which the trainer saves a checkpoint
    and returns with status "interrupted".
    """

    def __init__(self, config: TrainConfig, *, step_callbacks: list[Callable] | None = None):
        self.config = config
        self.step_callbacks = list(step_callbacks or [])
        self._stop_reason: str | None = None

    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop_reason = reason

    # -- setup ------------------------------------------------------------------------------
    def _setup(self) -> None:
        cfg = self.config
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
        for split in ("train", "valid"):
            tokens = len(getattr(self.data, split))
            if tokens <= cfg.context_length:
                raise ValueError(f"{Path(cfg.data_dir) / (split + '.npy')} has {tokens} tokens; context_length "
                                 f"{cfg.context_length} needs at least {cfg.context_length + 1}")

        torch.manual_seed(cfg.seed)  # same initial weights on every process
        self.raw_model = TransformerLM.from_config(self.model_config, device=device)
        self.optimizer = AdamW(self._param_groups(), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps,
                               weight_decay=cfg.weight_decay)
        self.scaler = torch.amp.GradScaler("cuda") if self.precision == "fp16" else None
        self.sampler = np.random.default_rng(cfg.seed)
        self.step = 0
        self.tokens_seen = 0
        self.elapsed_before = 0.0
        if cfg.resume:
            self._load_latest()
        elif (self.ckpt_dir / "latest.pt").exists() and not cfg.overwrite:
            raise FileExistsError(f"{self.run_dir} already holds a run ({self.ckpt_dir / 'latest.pt'}); continue it "
                                  "with --resume, start over with --overwrite, or choose another --out-dir")
        self._compile_tried = False
        self.model = self._wrap(self.raw_model)

    def _param_groups(self) -> list[dict]:
        """Weight decay on matrices only (norm gains are 1-D and are not decayed)."""
        params = [p for p in self.raw_model.parameters() if p.requires_grad]
        return [{"params": [p for p in params if p.dim() >= 2]},
                {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]

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

    def _load_latest(self) -> None:
        latest = self.ckpt_dir / "latest.pt"
        if not latest.is_file():
            raise FileNotFoundError(f"--resume: {latest} does not exist (nothing to resume in {self.run_dir})")
        payload = read_checkpoint(latest)  # for the extra state; load_checkpoint checks the architecture
        load_checkpoint(latest, self.raw_model, self.optimizer)
        extra = payload["extra"]
        self.step = int(payload["iteration"])
        self.sampler.bit_generator.state = extra["sampler"]
        self.tokens_seen = int(extra.get("tokens", 0))
        self.elapsed_before = float(extra.get("wallclock", 0.0))
        if "rng" in extra:
            restore_rng_state(extra["rng"])
        if self.scaler is not None and extra.get("grad_scaler"):
            self.scaler.load_state_dict(extra["grad_scaler"])
        saved_batch = extra.get("global_batch")
        if saved_batch is not None and saved_batch != self.global_batch:
            self._say(f"resume: global batch changed from {saved_batch} to {self.global_batch} sequences; "
                      "batches will differ from the original run")
        self._say(f"resume: continuing from {latest} at step {self.step}")

    @property
    def global_batch(self) -> int:
        return self.config.batch_size * self.config.grad_accum_steps * self.dist.world_size

    def _say(self, message: str) -> None:
        if self.dist.is_main:
            from tqdm import tqdm

            tqdm.write(message, file=sys.stderr)

    # -- the pieces of one step ---------------------------------------------------------------
    def learning_rate(self, step: int) -> float:
        """Warm-up then cosine reaching min_lr exactly at the last step (step is 0-based)."""
        last = self.total_steps  # schedule iterations 1..total_steps; 0 would mean lr = 0
        warmup = min(self.config.warmup_steps, last)
        return lr_cosine_schedule(step + 1, self.config.lr, self.config.final_lr, warmup, last)

    def _my_rows(self, micro: int) -> slice:
        """Rows of the global batch for this process's micro-batch ``micro``."""
        b = self.config.batch_size
        start = (self.dist.rank * self.config.grad_accum_steps + micro) * b
        return slice(start, start + b)

    def train_step(self, step: int) -> tuple[float, float, float]:
        """One optimizer step; returns (mean loss over the global batch, grad norm, lr).

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

    def _train_step(self, step: int) -> tuple[float, float, float]:
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
        # the mean over all processes, so every process sees the same value (and stops on NaN together)
        loss_value = all_reduce_mean(loss_sum.item() / cfg.grad_accum_steps, self.dist, self.device)
        return loss_value, float(grad_norm), lr

    @torch.no_grad()
    def evaluate(self) -> float:
        """Mean loss over eval_batches global batches of fixed validation windows.

        The windows are the same at every evaluation and do not depend on how the global batch
        is split into processes and micro-batches.
        """
        cfg = self.config
        sampler = np.random.default_rng(cfg.seed + 1)
        self.model.eval()
        losses = []
        for _ in range(cfg.eval_batches):
            inputs, targets = get_batch(self.data.valid, self.global_batch, cfg.context_length, "cpu",
                                        generator=sampler)
            for micro in range(cfg.grad_accum_steps):
                rows = self._my_rows(micro)
                with autocast_context(self.precision, self.device):
                    logits = self.raw_model(inputs[rows].to(self.device))
                losses.append(cross_entropy(logits.float(), targets[rows].to(self.device)))
        self.model.train()
        return all_reduce_mean(torch.stack(losses).mean().item(), self.dist, self.device)

    def save(self, step: int) -> Path | None:
        """Write step_{step:07d}.pt and point latest.pt at it (both atomic); main process only."""
        if not self.dist.is_main:
            return None
        extra = {
            "config": self.config.to_dict(),
            "rng": capture_rng_state(),
            "sampler": self.sampler.bit_generator.state,
            "tokens": self.tokens_seen,
            "wallclock": self.elapsed(),
            "global_batch": self.global_batch,
            "world_size": self.dist.world_size,
        }
        if self.scaler is not None:
            extra["grad_scaler"] = self.scaler.state_dict()
        path = self.ckpt_dir / f"step_{step:07d}.pt"
        save_checkpoint(self.raw_model, self.optimizer, step, path, extra=extra)
        latest = link_or_copy(path, self.ckpt_dir / "latest.pt")  # same bytes, no second write
        self.last_checkpoint = (step, latest)
        return latest

    def elapsed(self) -> float:
        return self.elapsed_before + (time.perf_counter() - self._started)

    # -- run --------------------------------------------------------------------------------
    def run(self) -> TrainResult:
        self._setup()
        try:
            with sigint_requests_stop(self._ctrl_c):
                return self._loop()
        finally:
            cleanup_distributed(self.dist)

    def _loop(self) -> TrainResult:
        from tqdm import tqdm

        cfg, main = self.config, self.dist.is_main
        self._started = time.perf_counter()
        self.last_checkpoint = (self.step, self.ckpt_dir / "latest.pt") if cfg.resume else None
        run_log = None
        if main:
            write_run_files(cfg, self.model_config, world_size=self.dist.world_size,
                            total_steps=self.total_steps)
            run_log = RunLog(self.run_dir, self.config.to_dict(), resume_step=self.step if cfg.resume else None,
                             plot_title=f"{self.run_dir.name}: {self.raw_model.num_parameters():,} parameters")
        # MFU on a GPU: model FLOPs per step over the step time, as a share of the peak
        peak = peak_flops(self.device, self.precision)
        flops_per_step = training_step_flops(self.model_config, cfg.context_length,
                                             cfg.batch_size * cfg.grad_accum_steps) if peak else None
        tokens_per_step = cfg.tokens_per_step(self.dist.world_size)
        result = TrainResult(self.run_dir, self.step, self.total_steps, "completed")
        step_time, session_steps = 0.0, 0
        smooth_dt: float | None = None  # moving average of the step time, for the progress bar
        window_losses: list[float] = []
        bar = tqdm(total=self.total_steps, initial=self.step, desc="train", unit="step", dynamic_ncols=True,
                   disable=not (main and cfg.progress), file=sys.stderr)
        if self.step == 0 and self.total_steps > 0:
            self._say(f"training {self.raw_model.num_parameters():,} parameters for {self.total_steps} steps "
                      f"({tokens_per_step:,} tokens/step) on {self.device}, {self.precision}")
        try:
            for step in range(self.step, self.total_steps):
                # 1. one optimizer step (reading the loss waits for the GPU)
                t0 = time.perf_counter()
                loss, grad_norm, lr = self.train_step(step)
                dt = time.perf_counter() - t0
                step_time, session_steps, done = step_time + dt, session_steps + 1, step + 1
                if not math.isfinite(loss):
                    raise NonFiniteLossError(self._nonfinite_message(done, loss))
                self.step, self.tokens_seen = done, self.tokens_seen + tokens_per_step
                window_losses.append(loss)
                last = done == self.total_steps
                # 2. progress bar: loss, lr, tokens/s (smoothed) and MFU
                smooth_dt = dt if smooth_dt is None else 0.9 * smooth_dt + 0.1 * dt
                postfix = f"loss {loss:.3f} lr {lr:.2e} {tokens_per_step / smooth_dt:,.0f} tok/s"
                if flops_per_step:
                    postfix += f" MFU {flops_per_step / smooth_dt / peak:.1%}"
                bar.set_postfix_str(postfix, refresh=False)
                bar.update(1)
                # 3. log the mean training loss of the interval
                if done % cfg.log_interval == 0 or last:
                    result.train_loss = sum(window_losses) / len(window_losses)
                    window_losses = []
                    if run_log is not None:
                        run_log.write({"step": done, "wallclock": round(self.elapsed(), 3),
                                       "train_loss": result.train_loss, "lr": lr, "grad_norm": grad_norm,
                                       "tokens": self.tokens_seen,
                                       "tokens_per_second": round(tokens_per_step / dt, 1)})
                # 4. evaluate, 5. checkpoint
                if done % cfg.eval_interval == 0 or last:
                    result.val_loss = self.evaluate()
                    if run_log is not None:
                        run_log.write_eval({"step": done, "wallclock": round(self.elapsed(), 3),
                                            "val_loss": result.val_loss, "tokens": self.tokens_seen})
                        bar.write(f"step {done}: val loss {result.val_loss:.4f}", file=sys.stderr)
                if done % cfg.checkpoint_interval == 0 or last:
                    self.save(done)
                # 6. callbacks, and a requested stop (Ctrl-C) saves and ends the run
                for callback in self.step_callbacks:
                    callback(self, done)
                if any_true(self._stop_reason is not None, self.dist, self.device) and not last:
                    self.save(done)
                    result.status = "interrupted"
                    self._say(f"{self._stop_reason or 'stopped'}: saved {self.ckpt_dir / 'latest.pt'} at step "
                              f"{done}; continue with --resume")
                    break
        finally:
            bar.close()
            if run_log is not None:
                run_log.close()
        result.steps = self.step
        result.tokens_seen = self.tokens_seen
        result.tokens_per_second = session_steps * tokens_per_step / step_time if step_time else 0.0
        result.elapsed = self.elapsed()
        result.history = run_log.history if run_log is not None else []
        return result

    def _nonfinite_message(self, step: int, loss: float) -> str:
        if self.last_checkpoint is not None:
            kept = f"the last good checkpoint is {self.last_checkpoint[1]} (step {self.last_checkpoint[0]})"
        else:
            kept = "no checkpoint was saved yet"
        return (f"step {step}: the training loss is {loss}; stopping without saving this state; {kept}. "
                f"Try a lower --lr, more --warmup-steps or --grad-clip.")

    def _ctrl_c(self) -> bool:
        """First Ctrl-C: finish the step, save, exit (True). A second one: interrupt at once (False)."""
        if self._stop_reason is not None:
            return False
        self._stop_reason = "interrupted (Ctrl-C)"
        self._say("Ctrl-C: saving a checkpoint after this step (press again to quit without saving)")
        return True


def train(config: TrainConfig, *, step_callbacks: list[Callable] | None = None) -> TrainResult:
    """Train (or resume) the run described by ``config``; see :class:`Trainer`."""
    return Trainer(config, step_callbacks=step_callbacks).run()
