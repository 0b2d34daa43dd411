"""Run logs: a JSONL file (one record per line) and optional Weights & Biases / TensorBoard mirrors.

Every record has ``step`` and ``wallclock`` (seconds of training, continued across resumes); train
records add ``train_loss``, ``lr``, ``grad_norm`` and ``tokens``; eval records add ``val_loss``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any


class JsonlLog:
    """Append-only JSONL log that survives resumes without duplicated steps."""

    def __init__(self, path: str | Path, *, resume_step: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume_step is None:
            self.path.write_text("")
        else:
            self._truncate_after(resume_step)
        self._fh = self.path.open("a", encoding="utf-8")

    def _truncate_after(self, step: int) -> None:
        """Drop records written after the checkpoint we resume from (they will be redone).

        A run killed (or out of disk) in the middle of an append leaves a torn last line such as
        ``{"step": 40, "wallc``; it is dropped with a warning. A bad line elsewhere still raises."""
        from seqlab.atomic import atomic_write_text

        records = read_jsonl(self.path, drop_torn_last_line=True) if self.path.exists() else []
        kept = [r for r in records if r.get("step", 0) <= step]
        atomic_write_text(self.path, "".join(json.dumps(r) + "\n" for r in kept))

    def write(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_jsonl(path: str | Path, *, drop_torn_last_line: bool = False) -> list[dict[str, Any]]:
    """The records of a JSONL file; a line that is not JSON raises ValueError naming it.

    With ``drop_torn_last_line`` an unparseable *last* line (an append cut short) is left out with
    a warning instead; an unparseable line followed by others still raises.
    """
    with Path(path).open(encoding="utf-8") as fh:
        lines = [(number, line) for number, line in enumerate(fh, 1) if line.strip()]
    records = []
    for index, (number, line) in enumerate(lines):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if drop_torn_last_line and index == len(lines) - 1:
                warnings.warn(f"{path}, line {number}: the last line is incomplete JSON (a write cut short by "
                              "a kill or a full disk); dropped it", RuntimeWarning, stacklevel=2)
                break
            raise ValueError(f"{path}, line {number}: invalid JSON ({exc})") from None
    return records


class Trackers:
    """Optional experiment trackers, created only when asked for; a missing package is a clear error."""

    def __init__(self, *, run_dir: Path, config: dict[str, Any], wandb: bool = False,
                 wandb_project: str = "seqlab", tensorboard: bool = False):
        self._wandb = self._tb = None
        if wandb:
            try:
                import wandb as wandb_module
            except ImportError:
                raise RuntimeError("--wandb was asked for but the package `wandb` is not installed "
                                   "(pip install wandb)") from None
            self._wandb = wandb_module.init(project=wandb_project, dir=str(run_dir), config=config,
                                            name=run_dir.name, resume="allow")
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                raise RuntimeError("--tensorboard was asked for but the package `tensorboard` is not "
                                   "installed (pip install tensorboard)") from None
            self._tb = SummaryWriter(log_dir=str(run_dir / "tensorboard"))

    def log(self, record: dict[str, Any]) -> None:
        step = record["step"]
        values = {k: v for k, v in record.items() if k != "step" and isinstance(v, (int, float))}
        if self._wandb is not None:
            self._wandb.log(values, step=step)
        if self._tb is not None:
            for key, value in values.items():
                self._tb.add_scalar(key, value, step)

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()
        if self._tb is not None:
            self._tb.close()


class RunLog:
    """Everything a run records (main process): RUN/log.jsonl, the optional trackers, the history
    of records, and RUN/loss_curve.png redrawn after each evaluation.

    A resumed run (``resume_step``) keeps the records up to that step and drops later ones.
    """

    def __init__(self, run_dir: Path, config: dict[str, Any], *, resume_step: int | None,
                 plot_title: str) -> None:
        from seqlab.training.plots import plot_loss_curve

        self._plot = plot_loss_curve
        self.run_dir, self.plot_title = run_dir, plot_title
        self.jsonl = JsonlLog(run_dir / "log.jsonl", resume_step=resume_step)
        self.trackers = Trackers(run_dir=run_dir, config=config, wandb=config.get("wandb", False),
                                 wandb_project=config.get("wandb_project", "seqlab"),
                                 tensorboard=config.get("tensorboard", False))
        self.history = read_jsonl(run_dir / "log.jsonl")

    def write(self, record: dict[str, Any]) -> None:
        """Append a train record (step, wallclock, train_loss, lr, ...) everywhere."""
        self.jsonl.write(record)
        self.trackers.log(record)
        self.history.append(record)

    def write_eval(self, record: dict[str, Any]) -> None:
        """Append an eval record (step, wallclock, val_loss, tokens) and redraw the loss curve."""
        self.write(record)
        self._plot(self.history, self.run_dir / "loss_curve.png", title=self.plot_title)

    def close(self) -> None:
        self.jsonl.close()
        self.trackers.close()
