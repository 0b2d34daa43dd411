"""What ``seqlab induction`` trains: the task's size, the four models, the budget
(:class:`InductionSettings`, with :data:`FULL` and the ``--fast`` smoke settings :data:`FAST`).
Standard library only."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class ModelSpec:
    """One model of the experiment: its family, depth and feed-forward, and its name in figures."""

    arch: str      # "transformer" | "lstm"
    layers: int
    ffn: str       # "none" = attention-only (the LSTM ignores it)
    label: str


MODELS: dict[str, ModelSpec] = {
    "attn1": ModelSpec("transformer", 1, "none", "1-layer attention-only"),
    "attn2": ModelSpec("transformer", 2, "none", "2-layer attention-only"),
    "mlp2": ModelSpec("transformer", 2, "swiglu", "2-layer with MLPs"),
    "lstm": ModelSpec("lstm", 1, "none", "LSTM"),
}


@dataclass(frozen=True)
class InductionSettings:
    """The experiment's size. Examples are ``2 * half`` random ids from ``vocab_size`` ending in a
    repeated segment whose length (the repeat distance) is drawn in ``min_repeat .. half``;
    every model trains ``steps`` optimizer steps of ``batch_size`` examples and is evaluated every
    ``eval_interval`` steps (the LSTM ``lstm_steps``, the Transformer with MLPs ``mlp_steps`` when
    given); after training, the repeat accuracy is measured at each distance of ``distances`` on
    ``distance_rows`` new examples each."""

    vocab_size: int = 32
    half: int = 16
    min_repeat: int = 4
    d_model: int = 64
    num_heads: int = 4
    steps: int = 2000
    lstm_steps: int = 800  # the LSTM's steps are the slowest (a loop over positions); it plateaus early
    # None: ``steps``; added after results were written without it, which trained mlp2 ``steps``
    mlp_steps: int | None = field(default=None, metadata={"added": "0.3.0"})
    batch_size: int = 32
    lr: float = 3e-3
    warmup_steps: int = 50
    weight_decay: float = 0.0
    eval_interval: int = 50
    eval_batches: int = 4
    distances: tuple[int, ...] = (4, 6, 8, 10, 12, 14, 16)
    distance_rows: int = 128

    def steps_of(self, name: str) -> int:
        """Optimizer steps of model ``name``."""
        if MODELS[name].arch == "lstm":
            return self.lstm_steps
        return self.mlp_steps if MODELS[name].ffn != "none" and self.mlp_steps is not None else self.steps

    def to_json(self) -> dict[str, Any]:
        """The settings as results.json keeps them (tuples become lists)."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}


FULL = InductionSettings()
# attn1 against attn2 is the comparison --fast keeps (a larger batch and learning rate form the
# induction head in a few hundred steps); mlp2 and the LSTM train a few steps, for the plumbing
FAST = InductionSettings(vocab_size=16, half=8, min_repeat=4, d_model=64, num_heads=4, steps=300, mlp_steps=70,
                         lstm_steps=70, batch_size=128, lr=8e-3, warmup_steps=20, eval_interval=60, eval_batches=2,
                         distances=(4, 6, 8), distance_rows=64)
