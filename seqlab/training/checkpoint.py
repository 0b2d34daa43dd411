"""Saving and restoring model + optimizer + iteration (atomically), and the RNG states a resume needs."""

from __future__ import annotations

import os
import random
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from seqlab.atomic import atomic_path
from seqlab.inference.loading import (  # noqa: F401 (reading a checkpoint is shared with inference)
    WRAPPER_PREFIXES,
    describe_state_dict_mismatch,
    load_model_from_checkpoint,
    load_weights,
    read_checkpoint,
    strip_wrapper_prefixes,
    unwrap_model,
)

def _model_config_dict(model: torch.nn.Module) -> dict | None:
    config = getattr(unwrap_model(model), "config", None)
    if config is None:
        return None
    return asdict(config) if is_dataclass(config) else dict(config)


def save_checkpoint(model: torch.nn.Module, optimizer: torch.optim.Optimizer | None, iteration: int,
                    out: str | os.PathLike | IO[bytes], *, extra: dict | None = None) -> None:
    """Write {"model", "optimizer", "iteration", "model_config", "extra"} with torch.save.

    `out` is a path (written to a temporary file in the same folder, then renamed: never
    half-written) or a writable binary file object. `extra` holds plain Python values/tensors.
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
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        torch.save(payload, handle)
        handle.flush()
        os.fsync(handle.fileno())  # on disk before the rename makes it the checkpoint


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


# -- RNG state (saved in a checkpoint's extra, so a resumed run draws the same numbers) ------


def capture_rng_state() -> dict[str, Any]:
    """Python, NumPy-global and torch RNG states as plain values/tensors (loadable weights_only)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state = {
        "python": random.getstate(),
        "numpy": {"kind": kind, "keys": keys.tolist(), "pos": int(pos), "has_gauss": int(has_gauss),
                  "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict[str, Any]) -> None:
    """Put back the states of :func:`capture_rng_state` (CUDA only with the same device count)."""
    random.setstate(_to_tuple(state["python"]))
    n = state["numpy"]
    np.random.set_state((n["kind"], np.array(n["keys"], dtype=np.uint32), n["pos"], n["has_gauss"],
                         n["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


def _to_tuple(value: Any) -> Any:
    return tuple(_to_tuple(v) for v in value) if isinstance(value, (list, tuple)) else value
