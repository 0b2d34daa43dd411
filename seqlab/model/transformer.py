"""The decoder-only Transformer language model."""

from __future__ import annotations

from dataclasses import asdict

import torch
from torch import nn

from seqlab.model.block import TransformerBlock
from seqlab.model.config import ModelConfig, check_attention
from seqlab.model.embedding import Embedding
from seqlab.model.kv_cache import KVCache
from seqlab.model.linear import Linear
from seqlab.model.norm import make_norm
from seqlab.model.rmsnorm import Identity
from seqlab.model.taps import or_none


class TransformerLM(nn.Module):
    """token_embeddings -> num_layers x TransformerBlock -> ln_final -> lm_head.

    Built from a ModelConfig (its fields are the model's only list of settings). Ablations:
      norm="none"           no RMSNorm anywhere (ln1, ln2, ln_final are identities)
      norm_position="post"  post-norm blocks; no final norm, as in the original post-norm Transformer
      positional="nope"     no positional information at all (causal mask only)
      ffn="silu"            w2(silu(w1 x)) with d_ff = 4 * d_model instead of SwiGLU

    num_kv_heads (default num_heads): key/value heads of grouped-query attention (1 = multi-query);
    the k/v projections and the KV cache shrink by num_heads / num_kv_heads.
    tie_embeddings=True: lm_head.weight IS token_embeddings.weight (one Parameter, counted, decayed
    and updated once; the state dict lists it under both names, as torch does for shared parameters,
    and torch.save stores it once). It keeps the lm_head's initialisation (std sqrt(2 / (d_model +
    vocab_size))): the embedding's std 1 would start the logits at std ~sqrt(d_model).
    norm_eps is the RMSNorm epsilon (1e-5; a Llama brought in from Hugging Face may use 1e-6).

    attention="auto" | "reference" | "chunked" | "sdpa" | "flash" chooses how attention is computed
    (same weights and, up to rounding, same results; seqlab.model.attention): "auto" runs the
    cache-blocked kernel on a CPU in eager mode, torch's fused kernel (sdpa) on CUDA and the
    reference formula on MPS and under torch.compile on a CPU; "flash" (Triton) falls back to
    auto's choice for a padded batch. set_attention() switches it later, e.g. after loading a
    checkpoint saved with another backend (seqlab.lm.load_model does, to "auto" by default).
    """

    def __init__(self, config: ModelConfig | int | None = None, *fields, device=None, dtype=None, **named):
        """``TransformerLM(config)`` builds the model a :class:`ModelConfig` describes; the fields of
        one may be given instead, as ModelConfig takes them: ``TransformerLM(50, 16, 32, 2, 4,
        norm="none")`` is ``TransformerLM(ModelConfig(50, 16, 32, 2, 4, norm="none"))``."""
        super().__init__()
        if isinstance(config, ModelConfig):
            if fields or named:
                raise TypeError("TransformerLM(config) takes no other model fields; change them in the "
                                "ModelConfig (dataclasses.replace(config, ...))")
            config = ModelConfig(**asdict(config))  # a copy: set_attention changes the model's own
        elif config is None:
            config = ModelConfig(*fields, **named)
        else:
            config = ModelConfig(config, *fields, **named)
        self.config = cfg = config
        theta = cfg.rope_theta if cfg.positional == "rope" else None
        self.token_embeddings = Embedding(cfg.vocab_size, cfg.d_model, device=device, dtype=dtype)
        self.layers = nn.ModuleList(
            TransformerBlock(cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.context_length, theta, norm=cfg.norm,
                             norm_position=cfg.norm_position, ffn=cfg.ffn, attention=cfg.attention,
                             num_kv_heads=cfg.num_kv_heads, norm_eps=cfg.norm_eps, device=device,
                             dtype=dtype)
            for _ in range(cfg.num_layers)
        )
        if cfg.norm_position == "post":
            self.ln_final = Identity()
        else:
            self.ln_final = make_norm(cfg.norm, cfg.d_model, device=device, dtype=dtype, eps=cfg.norm_eps)
        self.lm_head = Linear(cfg.d_model, cfg.vocab_size, device=device, dtype=dtype)
        if cfg.tie_embeddings:
            self.token_embeddings.weight = self.lm_head.weight

    @classmethod
    def from_config(cls, config: ModelConfig, device=None, dtype=None) -> "TransformerLM":
        """The same as ``TransformerLM(config, device=device, dtype=dtype)``."""
        return cls(config, device=device, dtype=dtype)

    @property
    def context_length(self) -> int:
        return self.config.context_length

    def set_attention(self, attention: str) -> None:
        """Switch every layer to the attention backend `attention` (no weight changes)."""
        self.config.attention = check_attention(attention)
        for layer in self.layers:
            layer.attn.attention = attention

    def new_kv_cache(self) -> KVCache:
        return KVCache(self.config.num_layers)

    def num_parameters(self, include_embeddings: bool = True) -> int:
        """Distinct parameters (a tied embedding counts once); without embeddings the token embedding
        matrix is left out (with tied embeddings that is the lm_head too)."""
        total = sum(p.numel() for p in self.parameters())
        if not include_embeddings:
            total -= self.token_embeddings.weight.numel()
        return total

    def forward(self, ids: torch.Tensor, token_positions: torch.Tensor | None = None,
                kv_cache: KVCache | None = None, padding_mask: torch.Tensor | None = None, *,
                return_hidden: bool = False, taps=None) -> torch.Tensor:
        """ids (batch, seq) int -> logits (batch, seq, vocab_size).

        token_positions: (seq,) or (batch, seq); default cache_length + 0..seq-1.
        kv_cache: append this call's keys/values and attend to everything cached.
        padding_mask: (batch, seq) bool, True = real token; padded keys are never attended to.
        return_hidden: return the final hidden states (batch, seq, d_model) instead, the lm_head's
        input: logits = hidden @ lm_head.weight.T (the training engine's fused loss reads them).
        taps: a seqlab.model.taps.Taps: read or replace named activations (embed, layers.{i}.resid_pre,
        layers.{i}.attn.pattern, ..., ln_final.scale; the list is seqlab.model.taps.POINTS); its
        ``enter`` rows join the batch at their layer (ids then holds the rows that start at the
        embedding, possibly none: shape (0, seq)).
        """
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (batch, seq), got {tuple(ids.shape)}")
        batch, seq = ids.shape
        past = kv_cache.length if kv_cache is not None else 0
        if past + seq > self.config.context_length:
            if past:
                raise ValueError(
                    f"{past} cached + {seq} new positions exceed context_length "
                    f"{self.config.context_length}; re-prefill the last tokens to slide the window"
                )
            raise ValueError(
                f"sequence length {seq} exceeds the model's context_length {self.config.context_length}"
            )
        if padding_mask is not None and tuple(padding_mask.shape) != (batch, seq):
            raise ValueError(
                f"padding_mask must have shape (batch, seq) = {(batch, seq)}, got {tuple(padding_mask.shape)}"
            )
        key_padding_mask = padding_mask
        if kv_cache is not None:
            key_padding_mask = kv_cache.extend_padding_mask(batch, seq, padding_mask, device=ids.device)

        hidden = self.run_blocks(ids, token_positions, kv_cache, key_padding_mask, taps)
        return hidden if return_hidden else self.lm_head(hidden)

    def run_blocks(self, ids: torch.Tensor, token_positions: torch.Tensor | None, kv_cache,
                   key_padding_mask: torch.Tensor | None, taps=None) -> torch.Tensor:
        """Embedding, blocks and final norm -> hidden states (batch, seq, d_model), without forward's
        checks of shapes and context (forward checks, then calls this). ``key_padding_mask`` covers
        every key the cache will hold. The compiled decode step of a static KV cache
        (seqlab.inference.windows) calls it directly, with positions and mask it computed itself."""
        taps = or_none(taps)
        x = taps.tap("embed", self.token_embeddings(ids))  # raises on an id the vocabulary lacks (check_token_ids)
        for index, layer in enumerate(self.layers):
            x = taps.enter(index, x)  # rows that start at this layer (Taps(enter=...))
            x = layer(x, token_positions, kv_cache=kv_cache, layer_index=index,
                      key_padding_mask=key_padding_mask, taps=taps.scope(f"layers.{index}"))
        if taps.wants("ln_final.scale"):
            taps.tap("ln_final.scale", self.ln_final.scale(x))
        return taps.tap("ln_final.normalized", self.ln_final(x))
