"""Loading a trained model for inference: from a checkpoint file or from a ``seqlab train`` run.

A checkpoint (written by ``seqlab.training.checkpoint.save_checkpoint``) is a ``torch.save`` dict
``{"model", "optimizer", "iteration", "model_config", "extra"}``; ``model_config`` holds the
ModelConfig fields, so the model can be rebuilt without the training config. A run directory holds
``checkpoints/latest.pt`` and ``tokenizer/``.

Worked example::

    loaded = load_model(run="runs/ts", device="auto")     # RUN/checkpoints/latest.pt + RUN/tokenizer
    ids = loaded.tokenizer.encode("Once upon a time")
    generate(loaded.model, ids, 50)
    model, tokenizer, payload = load_model(checkpoint="step_0000100.pt")   # tokenizer is None here
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import IO, Any, NamedTuple

import torch

from seqlab.model import ModelConfig, TransformerLM
from seqlab.runtime import resolve_device
from seqlab.tokenizer import Tokenizer

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


def load_model_from_checkpoint(src: str | os.PathLike | IO[bytes],
                               device: torch.device | str | None = None) -> tuple[TransformerLM, dict]:
    """Build a TransformerLM from the checkpoint's model_config and load its weights.

    Returns (model in eval mode on `device`, raw payload).
    """
    payload = read_checkpoint(src)
    if not payload.get("model_config"):
        raise ValueError(f"checkpoint {src} has no model_config; build the model yourself and use load_checkpoint")
    config = ModelConfig.from_dict(payload["model_config"], f"checkpoint {src}")
    model = TransformerLM.from_config(config, device=device)
    load_weights(model, payload, f"checkpoint {src} weights do not match its model_config")
    model.eval()
    return model, payload


def check_vocabularies(tokenizer_ids: int, model_ids: int,
                       fix: str = "use the tokenizer the model was trained with") -> None:
    """Raise ValueError unless the tokenizer and the model have the same number of ids.

    The model samples ids 0..model_ids-1 and the tokenizer must decode every one of them, and the
    model must embed every id the tokenizer can produce. ``fix`` ends the message: what the caller's
    user should do (the CLI names its --tokenizer option). Example: a 257-id byte tokenizer with a
    300-id model would let the model sample id 280, which the tokenizer cannot turn into text::

        check_vocabularies(257, 300)   # ValueError: ... ids 257..299 could not be decoded ...
    """
    if tokenizer_ids > model_ids:
        raise ValueError(f"the tokenizer has {tokenizer_ids} ids but the model only {model_ids}: {fix}")
    if tokenizer_ids < model_ids:
        raise ValueError(f"the tokenizer has {tokenizer_ids} ids but the model samples from {model_ids}: "
                         f"ids {tokenizer_ids}..{model_ids - 1} could not be decoded. {fix[:1].upper()}{fix[1:]}")


class LoadedModel(NamedTuple):
    model: TransformerLM        # in eval mode, on the requested device
    tokenizer: Tokenizer | None  # from tokenizer_dir, else RUN/tokenizer when present, else None
    payload: dict               # the raw checkpoint (iteration, extra, ...)


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


def load_model(run: str | Path | None = None, checkpoint: str | Path | None = None, device: str = "cpu",
               tokenizer_dir: str | Path | None = None, attention: str = "auto") -> LoadedModel:
    """Model (eval mode on ``device``: cpu, cuda, cuda:N, mps or auto), tokenizer and payload
    from a run directory or a checkpoint file (exactly one of them).

    ``attention`` is the backend the loaded model runs with (see seqlab.model.attention): "auto"
    picks the one for ``device``, whatever backend the run trained with (the weights are the same).

    The tokenizer comes from ``tokenizer_dir`` (which must exist) or else RUN/tokenizer when the run
    has one; otherwise it is None (evaluation needs no tokenizer).
    """
    path = checkpoint_path(run, checkpoint)
    model, payload = load_model_from_checkpoint(path, device=resolve_device(device))
    model.set_attention(attention)
    if tokenizer_dir is not None:
        if not Path(tokenizer_dir).is_dir():
            raise FileNotFoundError(f"tokenizer directory {tokenizer_dir} does not exist")
    elif run is not None and (Path(run) / "tokenizer").is_dir():
        tokenizer_dir = Path(run) / "tokenizer"
    tokenizer = Tokenizer.load(tokenizer_dir) if tokenizer_dir is not None else None
    return LoadedModel(model, tokenizer, payload)
