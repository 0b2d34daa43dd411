"""Checkpoint files: writing them atomically, reading them back with clear errors, and listing them.

A checkpoint is a ``torch.save`` dict::

    {"model": state dict, "optimizer": state dict or None, "iteration": completed steps,
     "model_config": the model's config fields (rebuilds the model), "extra": run state}

Weights of a compiled or DDP-wrapped model are stored under the plain keys, so every checkpoint
loads into a plain model; ``extra`` holds what a resume needs (:mod:`seqlab.runs.state`).

Worked example::

    save_checkpoint(model, optimizer, 100, "RUN/checkpoints/step_0000100.pt", extra={"tokens": 12800})
    payload = read_checkpoint("RUN/checkpoints/step_0000100.pt")     # tensors on the CPU
    load_payload(payload, model, optimizer)                          # -> 100
    model, payload = load_model_from_checkpoint("RUN/checkpoints/latest.pt")   # a TransformerLM

A disk that fills up during a save raises :class:`DiskFullError`, which says so in words; the file
the save would have replaced is untouched.
"""

from __future__ import annotations

import errno
import os
import pickle
import shutil
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any

import torch

from seqlab.atomic import atomic_path

WRAPPER_PREFIXES = ("_orig_mod.", "module.")  # torch.compile, DistributedDataParallel
DISK_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class DiskFullError(OSError):
    """No space was left on the disk while a checkpoint was written; nothing was replaced.
    ``previous`` (step, path): the checkpoint the run can be resumed from, named in the message."""

    def __init__(self, path: Path, free_bytes: int | None, previous: tuple[int, Path] | None = None):
        free = "" if free_bytes is None else f" ({free_bytes / 2**20:,.1f} MiB free)"
        self.path, self.free_bytes = path, free_bytes
        self.message = (f"the disk is full{free}: could not write the checkpoint {path}; nothing was "
                        "replaced (the half-written file was removed)")
        if previous is not None:
            self.message += (f"; the previous checkpoint {previous[1]} (step {previous[0]}) is intact: free some "
                             "space, then continue with --resume")
        super().__init__(errno.ENOSPC, self.message)

    def __str__(self) -> str:
        return self.message


def is_disk_full(error: BaseException) -> bool:
    """An OSError with ENOSPC/EDQUOT, or torch's zip writer failing the way a full disk makes it fail:
    its RuntimeError ("[enforce fail at inline_container.cc:672] . unexpected pos 896 vs 790") holds
    the file's ENOSPC as its context, or says "No space left" / "file write failed"."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return True
        text = str(error)
        if isinstance(error, RuntimeError) and ("No space left" in text or "file write failed" in text):
            return True
        error = error.__cause__ or error.__context__
    return False


def free_bytes(directory: Path) -> int | None:
    try:
        return shutil.disk_usage(directory).free
    except OSError:
        return None


def unwrap_model(model: torch.nn.Module) -> torch.nn.Module:
    """The plain module inside torch.compile / DDP wrappers."""
    while True:
        inner = getattr(model, "_orig_mod", None) or getattr(model, "module", None)
        if not isinstance(inner, torch.nn.Module):
            return model
        model = inner


def strip_wrapper_prefixes(state_dict: dict[str, Any]) -> dict[str, Any]:
    """Remove leading `_orig_mod.` / `module.` from every key (any order, repeated)."""
    stripped = {}
    for key, value in state_dict.items():
        while key.startswith(WRAPPER_PREFIXES):
            key = key.split(".", 1)[1]  # each prefix is one dotted name
        stripped[key] = value
    return stripped


def _model_config_dict(model: torch.nn.Module) -> dict | None:
    config = getattr(unwrap_model(model), "config", None)
    if config is None:
        return None
    return asdict(config) if is_dataclass(config) else dict(config)


# -- writing ------------------------------------------------------------------------------------


def save_checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None, iteration: int,
                    out: str | os.PathLike | IO[bytes], *, extra: dict | None = None) -> None:
    """Write {"model", "optimizer", "iteration", "model_config", "extra"} with torch.save.

    `out` is a path (written to a temporary file in the same folder, then renamed: never
    half-written) or a writable binary file object. `extra` holds plain Python values/tensors.
    A full disk raises :class:`DiskFullError` (the temporary file is removed).
    """
    payload = {
        "model": strip_wrapper_prefixes(unwrap_model(model).state_dict()),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "iteration": int(iteration),
        "model_config": _model_config_dict(model),
        "extra": dict(extra) if extra else {},
    }
    if not isinstance(out, (str, os.PathLike)):
        torch.save(payload, out)
        return
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as handle:
            torch.save(payload, handle)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename makes it the checkpoint
    except (OSError, RuntimeError) as error:
        if is_disk_full(error):
            raise DiskFullError(path, free_bytes(path.parent)) from error
        raise


# -- reading ------------------------------------------------------------------------------------


def read_checkpoint(src: str | os.PathLike | IO[bytes], *, mmap: bool = False) -> dict:
    """The raw payload (tensors on CPU) with keys model, optimizer, iteration, model_config, extra.

    ``mmap=True`` (a path only) maps the file instead of reading it: a tensor's bytes are read when
    it is used, so a caller that needs the weights but not the optimizer state reads only those.
    """
    if isinstance(src, (str, os.PathLike)):
        _check_checkpoint_file(Path(src))
    try:
        payload = torch.load(src, map_location="cpu", weights_only=True,
                             mmap=mmap and isinstance(src, (str, os.PathLike)))
    except PermissionError:
        raise
    except Exception as error:  # damaged bytes fail in many ways (zip reader, unpickler, decoding)
        # torch's own messages (a page on weights_only, miniz internals) do not name the file
        raise ValueError(f"{src} is not a readable seqlab checkpoint: {_unreadable_reason(error)}") from error
    if not isinstance(payload, dict) or "model" not in payload or "iteration" not in payload:
        raise ValueError(f"{src} is not a seqlab checkpoint (expected a dict with 'model' and 'iteration')")
    payload.setdefault("optimizer", None)
    payload.setdefault("model_config", None)
    payload.setdefault("extra", {})
    return payload


def _check_checkpoint_file(path: Path) -> None:
    """Raise FileNotFoundError or IsADirectoryError (with how to fix it) unless ``path`` is a file."""
    if path.is_dir():
        hint = (f"; it looks like a run, use --run {path} (or {path / 'checkpoints' / 'latest.pt'})"
                if (path / "checkpoints").is_dir() else "; give a .pt file inside it")
        raise IsADirectoryError(f"checkpoint {path} is a directory, not a checkpoint file{hint}")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")


def _unreadable_reason(error: Exception) -> str:
    if isinstance(error, EOFError):
        return "the file is empty or ends early"
    if isinstance(error, pickle.UnpicklingError):
        return "it is not a torch.save file of tensors and plain Python values"
    return "the file is truncated or corrupt"


def describe_state_dict_mismatch(expected: dict[str, torch.Tensor], found: dict[str, torch.Tensor]) -> str:
    """Human-readable differences between a model's state dict and a checkpoint's ('' if none)."""
    problems = []
    missing = [k for k in expected if k not in found]
    unexpected = [k for k in found if k not in expected]
    if missing:
        problems.append(f"missing from checkpoint: {', '.join(missing[:8])}" + (" ..." if len(missing) > 8 else ""))
    if unexpected:
        problems.append(f"not in model: {', '.join(unexpected[:8])}" + (" ..." if len(unexpected) > 8 else ""))
    for key in expected:
        if key in found and tuple(expected[key].shape) != tuple(found[key].shape):
            problems.append(
                f"{key}: checkpoint shape {tuple(found[key].shape)} vs model shape {tuple(expected[key].shape)}"
            )
    return "; ".join(problems)


def load_weights(model: torch.nn.Module, payload: dict, problem: str) -> None:
    """Load the payload's weights (wrapper prefixes stripped) into `model`; a key or shape mismatch
    raises ValueError("{problem}: <the mismatches>")."""
    state = strip_wrapper_prefixes(payload["model"])
    mismatch = describe_state_dict_mismatch(model.state_dict(), state)
    if mismatch:
        raise ValueError(f"{problem}: {mismatch}")
    model.load_state_dict(state, strict=True)


def load_checkpoint(src: str | os.PathLike | IO[bytes], model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer | None = None) -> int:
    """Restore model (and optimizer) state from `src`; return the saved iteration.

    Keys with or without `_orig_mod.` / `module.` prefixes load into plain or wrapped models.
    A checkpoint of a different architecture raises ValueError naming the mismatched keys/shapes.
    """
    return load_payload(read_checkpoint(src), model, optimizer, source=src)


def load_payload(payload: dict, model: torch.nn.Module, optimizer: torch.optim.Optimizer | None = None, *,
                 source: str | os.PathLike | IO[bytes] = "checkpoint") -> int:
    """:func:`load_checkpoint` for a payload already read with :func:`read_checkpoint` (so a caller
    that also needs the payload's extra state reads the file once); ``source`` names it in errors."""
    load_weights(unwrap_model(model), payload, f"checkpoint {source} does not match the model architecture")
    if optimizer is not None:
        if payload["optimizer"] is None:
            raise ValueError(f"checkpoint {source} holds no optimizer state")
        optimizer.load_state_dict(payload["optimizer"])
    return int(payload["iteration"])


def load_model_from_checkpoint(src: str | os.PathLike | IO[bytes], device: torch.device | str | None = None):
    """Build a TransformerLM from the checkpoint's model_config and load its weights.

    Returns (model in eval mode on `device`, raw payload).
    """
    from seqlab.model import ModelConfig, TransformerLM

    payload = read_checkpoint(src)
    if not payload.get("model_config"):
        raise ValueError(f"checkpoint {src} has no model_config; build the model yourself and use load_checkpoint")
    config = ModelConfig.from_dict(payload["model_config"], f"checkpoint {src}")
    model = TransformerLM.from_config(config, device=device)
    load_weights(model, payload, f"checkpoint {src} weights do not match its model_config")
    model.eval()
    return model, payload


# -- the checkpoints/ folder of a run -------------------------------------------------------------


def checkpoint_path(run: str | Path | None = None, checkpoint: str | Path | None = None) -> Path:
    """The checkpoint file of a run (RUN/checkpoints/latest.pt) or the file itself; exactly one
    of ``run`` and ``checkpoint``. Raises FileNotFoundError naming what is missing."""
    if (run is None) == (checkpoint is None):
        raise ValueError("give exactly one of run (a `seqlab train` directory) and checkpoint (a .pt file)")
    if run is not None:
        path = Path(run) / "checkpoints" / "latest.pt"
        if not path.is_file():
            raise FileNotFoundError(f"{run}: no checkpoints/latest.pt (is it a `seqlab train` run?)")
        return path
    path = Path(checkpoint)
    _check_checkpoint_file(path)
    return path


def checkpoint_files(ckpt_dir: Path) -> list[Path]:
    """The checkpoints in ``ckpt_dir`` (latest.pt and step_*.pt), oldest name first."""
    if not ckpt_dir.is_dir():
        return []
    return sorted(p for p in ckpt_dir.iterdir() if p.name == "latest.pt" or
                  (p.name.startswith("step_") and p.suffix == ".pt"))


def remove_old_checkpoints(old: list[Path], keep: set[Path]) -> None:
    """Delete an overwritten run's checkpoints once the new run has saved its own (``keep``)."""
    for path in old:
        if path not in keep:
            path.unlink(missing_ok=True)
