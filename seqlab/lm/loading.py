"""Loading a trained model for inference: from a checkpoint file or from a ``seqlab train`` run.

Checkpoint files are read through the run format (:mod:`seqlab.runs.checkpoint`); their
``model_config`` holds the ModelConfig fields, so the model can be rebuilt without the training
config. A language-model run directory holds ``checkpoints/latest.pt`` and ``tokenizer/``; a seq2seq
run given here is refused with the command that reads it.

Worked example::

    loaded = load_model(run="runs/ts", device="auto")     # RUN/checkpoints/latest.pt + RUN/tokenizer
    ids = loaded.tokenizer.encode("Once upon a time")
    generate(loaded.model, ids, 50)
    model, tokenizer, payload = load_model(checkpoint="step_0000100.pt")   # tokenizer is None here
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from seqlab.model import TransformerLM
from seqlab.runs.checkpoint import (
    checkpoint_path,
    load_model_from_checkpoint,
)
from seqlab.runs.kinds import Kind, check_kind
from seqlab.runtime import resolve_device
from seqlab.tokenizer import Tokenizer


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


def load_model(run: str | Path | None = None, checkpoint: str | Path | None = None, device: str = "cpu",
               tokenizer_dir: str | Path | None = None, attention: str = "auto") -> LoadedModel:
    """Model (eval mode on ``device``: cpu, cuda, cuda:N, mps or auto), tokenizer and payload
    from a run directory or a checkpoint file (exactly one of them).

    ``attention`` is the backend the loaded model runs with (see seqlab.model.attention): "auto"
    picks the one for ``device``, whatever backend the run trained with (the weights are the same).

    The tokenizer comes from ``tokenizer_dir`` (which must exist) or else RUN/tokenizer when the run
    has one; otherwise it is None (evaluation needs no tokenizer).
    """
    if run is not None:
        check_kind(run, Kind.LM, "use")  # a seq2seq run: say which command reads it
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
