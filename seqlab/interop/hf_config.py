"""A Llama ``config.json`` (transformers' ``LlamaConfig``) <-> seqlab's :class:`ModelConfig`.

The fields that carry over (seqlab <- Llama)::

    vocab_size      vocab_size                  num_heads       num_attention_heads
    d_model         hidden_size                 num_kv_heads    num_key_value_heads (GQA)
    num_layers      num_hidden_layers           rope_theta      rope_parameters.rope_theta (or rope_theta)
    d_ff            intermediate_size           norm_eps        rms_norm_eps
    context_length  max_position_embeddings     tie_embeddings  tie_word_embeddings

Everything else a Llama can say must be its default, or it is refused naming the field
(:class:`UnsupportedModelError`): RoPE scaling, biases, another activation, a head size that is not
``hidden_size / num_attention_heads``, sliding windows, quantized weights, another architecture. Missing fields take
LlamaConfig's defaults (``rms_norm_eps`` 1e-6, ``rope_theta`` 10000, ``max_position_embeddings`` 2048).

seqlab -> Llama needs a pre-norm RMSNorm model with RoPE and SwiGLU (the defaults); the ablations
(``norm="none"``, ``norm_position="post"``, ``positional="nope"``, ``ffn="silu"``) have no Llama
equivalent and are refused by field.
"""

from __future__ import annotations

import json
from typing import Any

from seqlab.model.config import ModelConfig

ARCHITECTURE = "LlamaForCausalLM"
# ModelConfig field -> the value a Llama has
LLAMA_SHAPE = {"norm": "rmsnorm", "norm_position": "pre", "positional": "rope", "ffn": "swiglu"}
_WHY = {"norm": "Llama normalises with RMSNorm", "norm_position": "Llama normalises before each sublayer",
        "positional": "Llama rotates queries and keys (RoPE)", "ffn": "Llama's feed-forward is SwiGLU"}
# LlamaConfig defaults for fields a config.json may leave out
_DEFAULTS = {"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 2048,
             "tie_word_embeddings": False, "hidden_act": "silu"}


class UnsupportedModelError(ValueError):
    """A model one side cannot express; the message names the file (or run) and the field."""


def check_llama_expressible(config: ModelConfig, source: str) -> None:
    """Raise :class:`UnsupportedModelError` naming the first field Llama cannot express."""
    for field, wanted in LLAMA_SHAPE.items():
        value = getattr(config, field)
        if value != wanted:
            raise UnsupportedModelError(
                f"{source}: model config {field}={value!r} cannot be exported as a Llama ({_WHY[field]}: "
                f"{field}={wanted!r}); only models trained without that ablation can be exported")


def to_llama_config(config: ModelConfig, *, bos_token_id: int | None, eos_token_id: int | None,
                    dtype: str = "float32") -> dict[str, Any]:
    """The ``config.json`` of a ``LlamaForCausalLM`` with ``config``'s shapes (check it first with
    :func:`check_llama_expressible`). RoPE θ is written both as transformers 5 reads it
    (``rope_parameters``) and as transformers 4 does (``rope_theta``)."""
    return {
        "architectures": [ARCHITECTURE],
        "model_type": "llama",
        "vocab_size": config.vocab_size,
        "hidden_size": config.d_model,
        "intermediate_size": config.d_ff,
        "num_hidden_layers": config.num_layers,
        "num_attention_heads": config.num_heads,
        "num_key_value_heads": config.num_kv_heads or config.num_heads,
        "head_dim": config.d_head,
        "max_position_embeddings": config.context_length,
        "rms_norm_eps": config.norm_eps,
        "rope_theta": config.rope_theta,
        "rope_parameters": {"rope_type": "default", "rope_theta": config.rope_theta},
        "rope_scaling": None,
        "hidden_act": "silu",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "mlp_bias": False,
        "pretraining_tp": 1,
        "tie_word_embeddings": config.tie_embeddings,
        "bos_token_id": bos_token_id,
        "eos_token_id": eos_token_id,
        "initializer_range": 0.02,
        "use_cache": True,
        "torch_dtype": dtype,
        "dtype": dtype,
    }


def json_type(value: Any) -> str:
    """What a JSON value is, in words: 'the string "16"', 'a list', 'true'."""
    if isinstance(value, str):
        return f"the string {json.dumps(value)}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return f"the fractional number {value!r}"
    if isinstance(value, int):
        return f"the integer {value}"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _number(values: dict[str, Any], key: str, source: str, kind: type = int) -> Any:
    value = values.get(key, _DEFAULTS.get(key))
    if value is None:
        raise UnsupportedModelError(f"{source}: {key} is missing")
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise UnsupportedModelError(f"{source}: {key} must be {'a number' if kind is float else 'an integer'}, "
                                    f"got {json_type(value)}")
    return kind(value)


def _check_architecture(values: dict[str, Any], source: str) -> None:
    """``architectures`` must be ["LlamaForCausalLM"] (or absent, with model_type "llama")."""
    model_type = values.get("model_type")
    if "architectures" in values:
        architectures = values["architectures"]
        if not isinstance(architectures, list):
            raise UnsupportedModelError(f"{source}: architectures must be a list, e.g. [\"{ARCHITECTURE}\"], got "
                                        f"{json_type(architectures)}")
        if architectures != [ARCHITECTURE]:
            raise UnsupportedModelError(f"{source}: architectures {architectures!r} is not supported; seqlab "
                                        f"imports {ARCHITECTURE} (model_type \"llama\") only")
    elif model_type is None:
        raise UnsupportedModelError(f"{source} has neither \"architectures\" nor \"model_type\", so it is not a "
                                    f"transformers model config; seqlab imports {ARCHITECTURE} folders (config.json "
                                    f"with \"architectures\": [\"{ARCHITECTURE}\"])")
    if model_type not in (None, "llama"):
        raise UnsupportedModelError(f"{source}: model_type {model_type!r} is not supported; seqlab imports "
                                    f"{ARCHITECTURE} (model_type \"llama\") only")


def _rope_theta(values: dict[str, Any], source: str) -> float:
    """θ from ``rope_parameters`` (transformers 5) or ``rope_theta``; any scaling is refused."""
    scaling = values.get("rope_scaling")
    if scaling not in (None, {}) and not (isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type"))
                                          == "default"):
        raise UnsupportedModelError(f"{source}: rope_scaling {scaling!r} is not supported (seqlab's RoPE has no "
                                    f"scaling; only rope_type 'default')")
    parameters = values.get("rope_parameters")
    if parameters is not None:
        if not isinstance(parameters, dict):
            raise UnsupportedModelError(f"{source}: rope_parameters must be an object, got {parameters!r}")
        kind = parameters.get("rope_type", parameters.get("type", "default"))
        if kind != "default":
            raise UnsupportedModelError(f"{source}: rope_parameters.rope_type {kind!r} is not supported (seqlab's "
                                        f"RoPE has no scaling; only 'default')")
        if "rope_theta" in parameters:
            return _number(parameters, "rope_theta", f"{source}: rope_parameters", float)
    return _number(values, "rope_theta", source, float)


def from_llama_config(values: Any, source: str) -> dict[str, Any]:
    """ModelConfig fields (a dict for ``ModelConfig(**...)``) from a Llama ``config.json``'s values.

    ``source`` (the file) starts every error.
    """
    if not isinstance(values, dict):
        raise UnsupportedModelError(f"{source}: expected a JSON object of LlamaConfig fields")
    _check_architecture(values, source)
    for key, harmless, has in (("attention_bias", (None, False), "no biases"), ("mlp_bias", (None, False), "no biases"),
                               ("sliding_window", (None,), "no sliding window"),
                               ("use_sliding_window", (None, False), "no sliding window"),
                               ("hidden_act", (None, "silu"), "SiLU (SwiGLU) only"),
                               ("quantization_config", (None, {}), "unquantized float32/bf16/fp16 weights only: "
                                                                   "import the model the quantized one was made from")):
        if values.get(key) not in harmless:
            raise UnsupportedModelError(f"{source}: {key} {values[key]!r} is not supported (seqlab's Llama has {has})")
    heads = _number(values, "num_attention_heads", source)
    hidden = _number(values, "hidden_size", source)
    kv_heads = heads if values.get("num_key_value_heads") is None else _number(values, "num_key_value_heads", source)
    if heads < 1 or hidden % heads:
        raise UnsupportedModelError(f"{source}: hidden_size {hidden} is not a multiple of num_attention_heads {heads}")
    head_dim = values.get("head_dim")
    if head_dim is not None:
        head_dim = _number(values, "head_dim", source)
    if head_dim is not None and head_dim != hidden // heads:
        raise UnsupportedModelError(f"{source}: head_dim {head_dim} is not supported (seqlab's heads are "
                                    f"hidden_size / num_attention_heads = {hidden // heads} wide)")
    if kv_heads < 1 or heads % kv_heads:
        raise UnsupportedModelError(f"{source}: num_attention_heads {heads} is not a multiple of "
                                    f"num_key_value_heads {kv_heads}")
    result: dict[str, Any] = {
        "vocab_size": _number(values, "vocab_size", source),
        "context_length": _number(values, "max_position_embeddings", source),
        "d_model": hidden,
        "num_layers": _number(values, "num_hidden_layers", source),
        "num_heads": heads,
        "d_ff": _number(values, "intermediate_size", source),
        "rope_theta": _rope_theta(values, source),
        "norm_eps": _number(values, "rms_norm_eps", source, float),
    }
    if kv_heads != heads:
        result["num_kv_heads"] = kv_heads
    tied = values.get("tie_word_embeddings", _DEFAULTS["tie_word_embeddings"])
    if not isinstance(tied, bool):
        raise UnsupportedModelError(f"{source}: tie_word_embeddings must be true or false, got {tied!r}")
    if tied:
        result["tie_embeddings"] = True
    return result
