"""Saving and restoring model + optimizer + iteration (atomically), and the RNG states a resume needs."""

from __future__ import annotations

import os
import pickle
import random
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch

from seqlab.atomic import atomic_path

WRAPPER_PREFIXES = ("_orig_mod.", "module.")  # torch.compile, DistributedDataParallel


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


def read_checkpoint(src: str | os.PathLike | IO[bytes]) -> dict:
    """The raw payload (tensors on CPU) with keys model, optimizer, iteration, model_config, extra."""
    if isinstance(src, (str, os.PathLike)) and not Path(src).is_file():
        raise FileNotFoundError(f"checkpoint {src} does not exist")
    try:
        payload = torch.load(src, map_location="cpu", weights_only=True)
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


def _load_weights(model: torch.nn.Module, payload: dict, problem: str) -> None:
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
    payload = read_checkpoint(src)
    _load_weights(unwrap_model(model), payload, f"checkpoint {src} does not match the model architecture")
    if optimizer is not None:
        if payload["optimizer"] is None:
            raise ValueError(f"checkpoint {src} holds no optimizer state")
        optimizer.load_state_dict(payload["optimizer"])
    return int(payload["iteration"])


def load_model_from_checkpoint(src: str | os.PathLike | IO[bytes], device=None):
    """Build a TransformerLM from the checkpoint's model_config and load its weights.

    Returns (model in eval mode on `device`, raw payload).
    """
    from seqlab.model import ModelConfig, TransformerLM

    payload = read_checkpoint(src)
    if not payload.get("model_config"):
        raise ValueError(f"checkpoint {src} has no model_config; build the model yourself and use load_checkpoint")
    config = ModelConfig(**payload["model_config"])
    model = TransformerLM.from_config(config, device=device)
    _load_weights(model, payload, f"checkpoint {src} weights do not match its model_config")
    model.eval()
    return model, payload


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
