"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), from scratch.

    source ids -> embeddings * sqrt(d) + positions -> N encoder layers -> memory (B, S, d)
    target ids -> embeddings * sqrt(d) + positions -> M decoder layers (each also reads memory)
               -> lm_head -> logits (B, T, tgt_vocab)

Encoder layers: self-attention over the source, then the feed-forward. Decoder layers: causal
self-attention, cross-attention to the memory, the feed-forward. Each sublayer is post-norm (the
paper) or pre-norm. `encode` + `decode_step` decode incrementally: cross-attention keys/values are
computed once and past self-attention keys/values kept in a KVCache. The pieces are the LM's
(MultiHeadAttention, make_ffn, residual), so `attention=` picks the same backends; a padding mask
sends "flash" to auto's choice. The cross-attention weights, which draw the alignment, are read
through the taps (seqlab.model.taps.attention_patterns).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from seqlab.model.attention import MultiHeadAttention
from seqlab.model.block import TransformerBlock
from seqlab.model.config import check_attention
from seqlab.model.embedding import Embedding
from seqlab.model.ffn import make_ffn
from seqlab.model.init import trunc_normal_
from seqlab.model.kv_cache import KVCache
from seqlab.model.linear import Linear
from seqlab.model.norm import make_norm
from seqlab.model.positional import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
)
from seqlab.model.residual import residual
from seqlab.model.taps import or_none
from seqlab.seq2seq.base import Seq2SeqModel, check_ids, check_mask
from seqlab.seq2seq.config import Seq2SeqConfig

ROPE_THETA = 10000.0


class DecoderLayer(nn.Module):
    """self_attn (causal) with ln1, cross_attn over the memory with ln2, ffn with ln3."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, max_seq_len: int, *, norm: str,
                 norm_position: str, ffn: str, theta: float | None = None, attention: str = "auto",
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.norm_position = norm_position
        self.self_attn = MultiHeadAttention(d_model, num_heads, max_seq_len, theta, causal=True,
                                            attention=attention, **kw)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, causal=False, attention=attention, **kw)
        self.ffn = make_ffn(ffn, d_model, d_ff, **kw)
        self.ln1 = make_norm(norm, d_model, **kw)
        self.ln2 = make_norm(norm, d_model, **kw)
        self.ln3 = make_norm(norm, d_model, **kw)

    def forward(self, x: torch.Tensor, cross_kv: tuple[torch.Tensor, torch.Tensor],
                src_padding_mask: torch.Tensor | None, tgt_padding_mask: torch.Tensor | None, *,
                kv_cache: KVCache | None = None, layer_index: int = 0, taps=None) -> torch.Tensor:
        """x (B, T, d) -> (B, T, d). taps (``decoder.layers.{i}``): resid_pre, self_attn_out, resid_mid,
        cross_attn_out, resid_mid_cross, mlp_out, resid_post, and the attentions' points under
        ``self_attn.`` and ``cross_attn.``."""
        taps = or_none(taps)
        self_taps, cross_taps = taps.scope("self_attn"), taps.scope("cross_attn")
        x = taps.tap("resid_pre", x)
        x = residual(x, self.ln1, lambda h: taps.tap("self_attn_out", self.self_attn(
            h, kv_cache=kv_cache, layer_index=layer_index, key_padding_mask=tgt_padding_mask, taps=self_taps)),
            self.norm_position)
        x = taps.tap("resid_mid", x)
        x = residual(x, self.ln2, lambda h: taps.tap("cross_attn_out", self.cross_attn(
            h, memory_kv=cross_kv, key_padding_mask=src_padding_mask, taps=cross_taps)), self.norm_position)
        x = taps.tap("resid_mid_cross", x)
        x = residual(x, self.ln3, lambda h: taps.tap("mlp_out", self.ffn(h)), self.norm_position)
        return taps.tap("resid_post", x)


class _Stack(nn.Module):
    """`layers` plus, for pre-norm, the final norm `ln_final` (post-norm stacks have none)."""

    def __init__(self, layers: list[nn.Module], norm: str, norm_position: str, d_model: int, device=None, dtype=None):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        if norm_position == "pre":
            self.ln_final = make_norm(norm, d_model, device=device, dtype=dtype)
        else:
            self.ln_final = None

    def final_norm(self, x: torch.Tensor) -> torch.Tensor:
        return x if self.ln_final is None else self.ln_final(x)


@dataclass
class TransformerDecoderState:
    """Per decoder layer: the memory's cross-attention keys/values (computed once) and the
    self-attention KVCache of the target positions decoded so far. Batch is dim 0 everywhere."""

    cross_kv: list[tuple[torch.Tensor, torch.Tensor]]
    src_padding_mask: torch.Tensor | None
    cache: KVCache

    @property
    def length(self) -> int:
        return self.cache.length

    def select(self, rows: torch.Tensor) -> "TransformerDecoderState":
        """Keep/repeat/reorder batch rows (beam search)."""
        cache = KVCache(self.cache.num_layers)
        cache.keys = [None if k is None else k[rows] for k in self.cache.keys]
        cache.values = [None if v is None else v[rows] for v in self.cache.values]
        mask = None if self.src_padding_mask is None else self.src_padding_mask[rows]
        return TransformerDecoderState([(k[rows], v[rows]) for k, v in self.cross_kv], mask, cache)


class TransformerSeq2Seq(Seq2SeqModel):
    """Encoder-decoder Transformer; see the module docstring.

    Options: norm "layernorm" | "rmsnorm"; norm_position "post" | "pre"; positional "sinusoidal" |
    "learned" | "rope" (rotary in the self-attentions, nothing added to embeddings); ffn "relu" |
    "swiglu"; shared_embeddings (one table for source and target); tie_embeddings (lm_head uses the
    target embedding matrix); attention, the backend of every attention (not part of the weights;
    set_attention switches it). Linear layers have no bias. d_ff=None: 4 * d_model (relu).
    Embeddings are initialised with std d_model^-0.5, so after the sqrt(d_model) scale they have
    unit size, comparable to the sinusoids.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int, num_heads: int,
                 num_encoder_layers: int, num_decoder_layers: int, d_ff: int | None, context_length: int, *,
                 norm: str = "layernorm", norm_position: str = "post", positional: str = "sinusoidal",
                 ffn: str = "relu", shared_embeddings: bool = False, tie_embeddings: bool = False,
                 attention: str = "auto", device=None, dtype=None):
        super().__init__()
        self.config = config = Seq2SeqConfig(
            "transformer", src_vocab_size, tgt_vocab_size, d_model=d_model, num_heads=num_heads,
            num_encoder_layers=num_encoder_layers, num_decoder_layers=num_decoder_layers, d_ff=d_ff,
            context_length=context_length, norm=norm, norm_position=norm_position, positional=positional,
            ffn=ffn, shared_embeddings=shared_embeddings, tie_embeddings=tie_embeddings, attention=attention,
        )
        kw = dict(device=device, dtype=dtype)
        self.embedding_scale = math.sqrt(d_model)
        self.src_embeddings = Embedding(src_vocab_size, d_model, **kw)
        self.tgt_embeddings = (self.src_embeddings if shared_embeddings
                               else Embedding(tgt_vocab_size, d_model, **kw))
        for table in {id(m): m for m in (self.src_embeddings, self.tgt_embeddings)}.values():
            trunc_normal_(table.weight, std=d_model ** -0.5)
        theta = None
        if positional == "sinusoidal":
            self.positions = SinusoidalPositionalEncoding(d_model, context_length, **kw)
        elif positional == "learned":
            self.src_positions = LearnedPositionalEmbedding(d_model, context_length, **kw)
            self.tgt_positions = LearnedPositionalEmbedding(d_model, context_length, **kw)
        else:  # rope: every self-attention rotates its queries and keys (buffers, no parameters)
            theta = ROPE_THETA
        layer_kw = dict(norm=norm, norm_position=norm_position, ffn=ffn, theta=theta, attention=config.attention,
                        **kw)
        d_ff = config.resolved_d_ff
        # an encoder layer is the language model's block without the causal mask
        self.encoder = _Stack([TransformerBlock(d_model, num_heads, d_ff, context_length, causal=False, **layer_kw)
                               for _ in range(num_encoder_layers)], norm, norm_position, d_model, **kw)
        self.decoder = _Stack([DecoderLayer(d_model, num_heads, d_ff, context_length, **layer_kw)
                               for _ in range(num_decoder_layers)], norm, norm_position, d_model, **kw)
        self.lm_head = Linear(d_model, tgt_vocab_size, **kw)
        if tie_embeddings:
            self.lm_head.weight = self.tgt_embeddings.weight

    @classmethod
    def from_config(cls, config: Seq2SeqConfig, device=None, dtype=None) -> "TransformerSeq2Seq":
        if config.arch != "transformer":
            raise ValueError(f"TransformerSeq2Seq builds arch 'transformer', got {config.arch!r}")
        return cls(config.src_vocab_size, config.tgt_vocab_size, config.d_model, config.num_heads,
                   config.num_encoder_layers, config.num_decoder_layers, config.d_ff, config.context_length,
                   norm=config.norm, norm_position=config.norm_position, positional=config.positional,
                   ffn=config.ffn, shared_embeddings=config.shared_embeddings, tie_embeddings=config.tie_embeddings,
                   attention=config.attention, device=device, dtype=dtype)

    @property
    def max_target_length(self) -> int:
        return self.config.context_length

    def set_attention(self, attention: str) -> None:
        """Switch every attention (encoder, decoder self- and cross-attention) to the backend
        `attention` (no weight changes), as TransformerLM.set_attention does."""
        self.config.attention = check_attention(attention)
        for module in self.modules():
            if isinstance(module, MultiHeadAttention):
                module.attention = attention

    def _add_positions(self, x: torch.Tensor, which: str, offset: int = 0) -> torch.Tensor:
        """x (B, L, d) already scaled -> plus the position vectors of offset..offset+L-1."""
        length = x.shape[1]
        if offset + length > self.config.context_length:  # checked here for a message in the config's words
            raise ValueError(f"{which} positions {offset}..{offset + length - 1} exceed context_length="
                             f"{self.config.context_length}; raise context_length or shorten the sequence")
        if self.config.positional == "sinusoidal":
            return x + self.positions(length, offset).to(x.dtype)
        if self.config.positional == "learned":
            table = self.src_positions if which == "src" else self.tgt_positions
            return x + table(length, offset)
        return x

    def encode_memory(self, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None, taps=None) -> torch.Tensor:
        """Source ids (B, S) -> encoder memory (B, S, d). taps: ``encoder.embed`` (the embedding rows,
        before the scale and positions), ``encoder.layers.{i}.*``, ``encoder.output`` (the memory)."""
        taps = or_none(taps)
        x = taps.tap("encoder.embed", self.src_embeddings(src_ids))
        x = self._add_positions(x * self.embedding_scale, "src")
        for index, layer in enumerate(self.encoder.layers):
            x = layer(x, key_padding_mask=src_padding_mask, taps=taps.scope(f"encoder.layers.{index}"))
        return taps.tap("encoder.output", self.encoder.final_norm(x))

    def _decode(self, tgt_ids: torch.Tensor, cross_kv, src_padding_mask, tgt_padding_mask, *,
                kv_cache: KVCache | None = None, head: bool = True, taps=None) -> torch.Tensor:
        """Logits of tgt_ids (head=False: the hidden states before the output layer, for return_hidden).
        taps: ``decoder.embed``, ``decoder.layers.{i}.*``, ``decoder.ln_final.scale`` (pre-norm),
        ``decoder.output`` (the output layer's input)."""
        taps = or_none(taps)
        offset = 0 if kv_cache is None else kv_cache.length
        x = taps.tap("decoder.embed", self.tgt_embeddings(tgt_ids))
        x = self._add_positions(x * self.embedding_scale, "tgt", offset)
        for index, layer in enumerate(self.decoder.layers):
            x = layer(x, cross_kv[index], src_padding_mask, tgt_padding_mask, kv_cache=kv_cache, layer_index=index,
                      taps=taps.scope(f"decoder.layers.{index}"))
        if self.decoder.ln_final is not None and taps.wants("decoder.ln_final.scale"):
            taps.tap("decoder.ln_final.scale", self.decoder.ln_final.scale(x))
        x = taps.tap("decoder.output", self.decoder.final_norm(x))
        return self.lm_head(x) if head else x

    def _cross_kv(self, memory: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        return [layer.cross_attn.keys_values(memory) for layer in self.decoder.layers]

    def _forward(self, src_ids, tgt_ids, src_padding_mask, tgt_padding_mask, return_hidden, taps):
        memory = self.encode_memory(src_ids, src_padding_mask, taps)
        return self._decode(tgt_ids, self._cross_kv(memory), src_padding_mask, tgt_padding_mask,
                            head=not return_hidden, taps=taps)

    def encode(self, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None = None) -> TransformerDecoderState:
        """Read the source once; each decoder layer's cross-attention keys/values are computed here."""
        check_ids(src_ids, "src_ids")
        src_padding_mask = check_mask(src_padding_mask, src_ids, "src_padding_mask")
        memory = self.encode_memory(src_ids, src_padding_mask)
        return TransformerDecoderState(self._cross_kv(memory), src_padding_mask,
                                       KVCache(self.config.num_decoder_layers))

    def decode_step(self, state: TransformerDecoderState,
                    tokens: torch.Tensor) -> tuple[torch.Tensor, TransformerDecoderState]:
        """tokens (B,) at position state.length -> (logits (B, tgt_vocab), state with them cached).

        The state's KVCache is extended in place (and returned)."""
        logits = self._decode(tokens[:, None], state.cross_kv, state.src_padding_mask, None, kv_cache=state.cache)
        return logits[:, 0], state
