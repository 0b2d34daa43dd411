"""Model hyperparameters as one dataclass, validated up front.

Each field also carries what a training command needs to offer it as a setting (metadata ``help``,
``choices``, and ``setting_default`` for a field the model requires but a run may leave out):
``seqlab train``'s flags and TOML keys are made from these fields, so a field added here becomes
``--field-name`` with no other edit (:func:`model_setting_fields`).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any

# every normalisation layer of seqlab.model.norm.make_norm; each family allows a subset
NORMS = ("layernorm", "rmsnorm", "none")
LM_NORMS = tuple(name for name in NORMS if name != "layernorm")  # the LM: RMSNorm or none (ablation)
NORM_POSITIONS = ("pre", "post")
POSITIONALS = ("rope", "nope")
FFNS = ("swiglu", "silu", "none")  # "none": attention-only blocks (no MLP, no second norm)
# how attention is computed; not part of the weights (see seqlab.model.attention.attention_backend):
# the readable formula, the cache-blocked CPU kernel, torch's fused kernel, the Triton FlashAttention-2
ATTENTIONS = ("auto", "reference", "chunked", "sdpa", "flash")


def check_attention(attention: str) -> str:
    """Return `attention` if it names a backend, else raise a ValueError listing them."""
    if attention not in ATTENTIONS:
        raise ValueError(f"unknown attention backend {attention!r}; choose one of {ATTENTIONS}")
    return attention


def check_kv_heads(num_heads: int, num_kv_heads: int) -> int:
    """Return num_kv_heads if it is a positive divisor of num_heads, else raise a ValueError saying why.

    Example: 8 query heads work with 8 (MHA), 4, 2 (GQA: groups of 4 query heads share a key/value
    head) or 1 (MQA) key/value heads; check_kv_heads(8, 3) raises.
    """
    if isinstance(num_kv_heads, bool) or not isinstance(num_kv_heads, int) or num_kv_heads <= 0:
        raise ValueError(f"num_kv_heads must be a positive integer (or None for num_heads), got {num_kv_heads!r}")
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"num_heads ({num_heads}) must be divisible by num_kv_heads ({num_kv_heads}): each "
                         f"key/value head serves a group of num_heads / num_kv_heads query heads")
    return num_kv_heads


def default_d_ff(d_model: int, ffn: str) -> int:
    """SwiGLU: about 8/3 * d_model rounded to a multiple of 64 (keeps the parameter count of a
    4*d_model two-matrix FFN with three matrices); plain SiLU or ReLU FFN: 4 * d_model; no FFN
    ("none", attention-only blocks): 0."""
    if ffn == "none":
        return 0
    if ffn in ("silu", "relu"):
        return 4 * d_model
    return max(64, int(round(8 * d_model / 3 / 64)) * 64)


def _field(default: Any, help: str, **metadata: Any) -> Any:
    """A ModelConfig field with the help text (and choices) of its training setting."""
    return field(default=default, metadata={"help": help, **metadata})


def _required(help: str, setting_default: Any) -> Any:
    """A field every ModelConfig must be given; a training run that leaves it out gets ``setting_default``."""
    return field(metadata={"help": help, "setting_default": setting_default})


def _choices(values: tuple[str, ...]) -> str:
    return " | ".join(values)


@dataclass
class ModelConfig:
    """The shape and options of a :class:`seqlab.model.TransformerLM` (its only list of them)."""

    vocab_size: int = _required("vocabulary size (default: from the data's meta.json)", None)
    context_length: int = _required("tokens per training sequence", 128)
    d_model: int = _required("model width", 128)
    num_layers: int = _required("Transformer blocks", 4)
    num_heads: int = _required("attention heads", 4)
    d_ff: int | None = _field(None, "feed-forward width (default: 8/3 d_model for SwiGLU, 4 d_model for SiLU)")
    rope_theta: float = _field(10000.0, "RoPE base")
    norm: str = _field("rmsnorm", _choices(LM_NORMS), choices=LM_NORMS)
    norm_position: str = _field("pre", _choices(NORM_POSITIONS), choices=NORM_POSITIONS)
    positional: str = _field("rope", _choices(POSITIONALS), choices=POSITIONALS)
    ffn: str = _field("swiglu", _choices(FFNS), choices=FFNS)
    attention: str = _field(
        "auto", "attention backend: auto (chunked on CPU, sdpa on CUDA, reference on MPS and under --compile on "
        "CPU) | reference (the formula) | chunked (cache-blocked CPU kernel) | sdpa (torch's fused kernel) | flash "
        "(Triton FlashAttention-2; a padded batch falls back to auto's choice); not part of the weights",
        choices=ATTENTIONS)
    num_kv_heads: int | None = _field(None, "key/value heads, dividing num_heads (default: num_heads; fewer = "
                                            "grouped-query attention, 1 = multi-query)")
    tie_embeddings: bool = _field(False, "the output layer reuses the token embedding matrix")
    norm_eps: float = _field(1e-5, "RMSNorm epsilon (added to the mean square); checkpoints without it: 1e-5")

    def __post_init__(self) -> None:
        for name in ("vocab_size", "context_length", "d_model", "num_layers", "num_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"ModelConfig.{name} must be a positive integer, got {value!r}")
        for name, value, allowed in (
            ("norm", self.norm, LM_NORMS),
            ("norm_position", self.norm_position, NORM_POSITIONS),
            ("positional", self.positional, POSITIONALS),
            ("ffn", self.ffn, FFNS),
            ("attention", self.attention, ATTENTIONS),
        ):
            if value not in allowed:
                raise ValueError(f"ModelConfig.{name} must be one of {allowed}, got {value!r}")
        if self.d_model % self.num_heads != 0:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})"
            )
        if self.num_kv_heads is None:
            self.num_kv_heads = self.num_heads
        check_kv_heads(self.num_heads, self.num_kv_heads)
        if not isinstance(self.tie_embeddings, bool):
            raise ValueError(f"ModelConfig.tie_embeddings must be true or false, got {self.tie_embeddings!r}")
        d_head = self.d_model // self.num_heads
        if self.positional == "rope" and d_head % 2 != 0:
            raise ValueError(f"RoPE needs an even head dimension, got d_model/num_heads = {d_head}")
        if self.d_ff is None:
            self.d_ff = default_d_ff(self.d_model, self.ffn)
        elif self.ffn == "none":
            if self.d_ff != 0:
                raise ValueError(f"ModelConfig.d_ff={self.d_ff!r} with ffn='none': an attention-only model has no "
                                 "feed-forward; leave d_ff unset (or 0)")
        elif isinstance(self.d_ff, bool) or not isinstance(self.d_ff, int) or self.d_ff <= 0:
            raise ValueError(f"ModelConfig.d_ff must be a positive integer or None, got {self.d_ff!r}")
        if not (isinstance(self.rope_theta, (int, float)) and self.rope_theta > 0):
            raise ValueError(f"ModelConfig.rope_theta must be a positive number, got {self.rope_theta!r}")
        self.rope_theta = float(self.rope_theta)
        if isinstance(self.norm_eps, bool) or not isinstance(self.norm_eps, (int, float)) or \
                not 0 < self.norm_eps < 1:
            raise ValueError(f"ModelConfig.norm_eps must be a number in (0, 1), got {self.norm_eps!r}")
        self.norm_eps = float(self.norm_eps)

    @classmethod
    def from_dict(cls, values: dict[str, Any], source: str = "model config") -> "ModelConfig":
        """A ModelConfig from a dict of its fields (e.g. a checkpoint's ``model_config``), refusing
        unknown and missing fields by name. ``source`` names where the dict came from.

        Example: ``ModelConfig.from_dict({"vocab_size": 50, ..., "flash": True}, "ckpt.pt")`` raises
        ``ValueError: ckpt.pt: unknown model config field 'flash' ...``: the file was probably
        written by a newer seqlab whose models have that setting."""
        if not isinstance(values, dict):
            raise ValueError(f"{source}: expected a dict of ModelConfig fields, got {type(values).__name__}")
        known = [f.name for f in fields(cls)]
        unknown = [key for key in values if key not in known]
        if unknown:
            names = ", ".join(repr(key) for key in unknown)
            raise ValueError(f"{source}: unknown model config field{'s' if len(unknown) > 1 else ''} {names}; "
                             f"this seqlab knows {', '.join(known)}. Check the spelling; a checkpoint or config "
                             "with such a field may come from a newer seqlab (upgrade seqlab to read it)")
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        missing = [name for name in required if name not in values]
        if missing:
            raise ValueError(f"{source}: model config is missing required field(s) {', '.join(missing)}")
        try:
            return cls(**values)
        except ValueError as error:
            raise ValueError(f"{source}: {error}") from None

    @property
    def d_head(self) -> int:
        return self.d_model // self.num_heads

    @property
    def d_kv(self) -> int:
        """Width of the key (and of the value) projection: num_kv_heads * d_head."""
        return self.num_kv_heads * self.d_head


def model_setting_fields(config_class: type, section: str, *, skip: tuple[str, ...] = (),
                         among: dict[str, str] | None = None):
    """A class decorator (applied before ``@dataclass``) giving a settings class one field per field of
    the dataclass ``config_class``, except ``skip``: the same name, type, default (``setting_default``
    for a required one, which then also accepts None when its default is None), help and choices, in
    ``section``. The model's fields are so declared once, in ``config_class``.

    The new fields follow the class's own; ``among`` ({own field: config field}) instead sets own
    fields among them, each right after the named config field, the block where the first of them
    was declared (so flags keep their order).

    Example: ``TrainConfig`` gets ``d_model: int = 128`` with the help "model width" from
    ``ModelConfig.d_model``, hence ``--d-model`` and the TOML key ``d_model`` (flat or in ``[model]``).
    """
    among = among or {}

    def add(cls: type) -> type:
        own = dict(cls.__dict__.get("__annotations__", {}))
        generated: dict[str, str] = {}
        for f in fields(config_class):
            if f.name in skip:
                continue
            if f.name in own:
                raise TypeError(f"{cls.__name__}.{f.name} is declared twice: it is a field of {config_class.__name__}")
            default = f.metadata.get("setting_default", f.default)
            if default is MISSING:
                raise TypeError(f"{config_class.__name__}.{f.name} needs a default or a setting_default")
            kind = str(f.type)
            if default is None and "None" not in kind:
                kind = f"{kind} | None"
            generated[f.name] = kind
            metadata = {key: value for key, value in f.metadata.items() if key != "setting_default"}
            setattr(cls, f.name, field(default=default, metadata={"section": section, **metadata}))
        for mine, after in among.items():
            if mine not in own or after not in generated:
                raise TypeError(f"among: {cls.__name__} declares no {mine!r}, or {after!r} is not a field it gets "
                                f"from {config_class.__name__}")
        block: dict[str, str] = {}
        for name, kind in generated.items():
            block[name] = kind
            block.update((mine, own[mine]) for mine, after in among.items() if after == name)
        annotations: dict[str, str] = {}
        for name, kind in own.items():
            if name in among:
                annotations.update(block)
                continue
            annotations[name] = kind
        annotations.update(block)  # no-op where among placed it already
        cls.__annotations__ = annotations
        return cls

    return add
