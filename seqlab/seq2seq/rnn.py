"""RNN encoder-decoder, with or without attention (Sutskever et al. 2014; Bahdanau et al. 2015;
Luong et al. 2015).

"rnn": the decoder starts from the encoder's final state and sees the source through nothing
else (the context bottleneck). "rnn-attention": at every step t the decoder's top output s_t
attends over all encoder states (Luong's global attention, after the decoder step)::

    score(s_t, h_j) = s_t . h_j / sqrt(H) ("dot")  or  v . tanh(W_q s_t + W_k h_j) ("additive")
    a_t = softmax_j(score) (padding gets 0);  c_t = sum_j a_tj h_j;  logits = lm_head(tanh(W_c [c_t; s_t]))

The weights do not feed back into the recurrence, so the decoder runs over the whole target in
one pass and attention is one batched matmul. Decoder layer i starts from encoder layer i's final
state (or the top layer's, when the decoder has more layers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from seqlab.model.activations import softmax
from seqlab.model.embedding import Embedding
from seqlab.model.init import trunc_normal_
from seqlab.model.linear import Linear
from seqlab.model.recurrent import RecurrentLayer, State
from seqlab.model.taps import or_none
from seqlab.seq2seq.base import Seq2SeqModel, check_ids, check_mask
from seqlab.seq2seq.config import Seq2SeqConfig


class RNNAttention(nn.Module):
    """Attention of decoder outputs over encoder states, then the combined output o_t (see module doc).

    Submodules: combine (2H -> H); for "additive" also query_proj, key_proj (H -> H) and the
    vector `score_vector` (H,).
    """

    def __init__(self, hidden_size: int, score: str = "dot", device=None, dtype=None):
        super().__init__()
        if score not in ("dot", "additive"):
            raise ValueError(f"unknown attention score {score!r}; expected 'dot' or 'additive'")
        self.hidden_size, self.score = hidden_size, score
        if score == "additive":
            self.query_proj = Linear(hidden_size, hidden_size, device=device, dtype=dtype)
            self.key_proj = Linear(hidden_size, hidden_size, device=device, dtype=dtype)
            self.score_vector = nn.Parameter(torch.empty(hidden_size, device=device, dtype=dtype))
            trunc_normal_(self.score_vector, std=1.0 / math.sqrt(hidden_size))
        self.combine = Linear(2 * hidden_size, hidden_size, device=device, dtype=dtype)

    def prepare_keys(self, memory: torch.Tensor) -> torch.Tensor:
        """What the scores need from the encoder states, computed once per source: (B, S, H)."""
        return self.key_proj(memory) if self.score == "additive" else memory

    def scores(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """query (B, T, H), prepared keys (B, S, H) -> (B, T, S)."""
        if self.score == "dot":
            return (query / math.sqrt(self.hidden_size)) @ keys.transpose(-1, -2)  # as attention_scores
        # additive: (B, T, 1, H) + (B, 1, S, H) -> tanh -> dot with v
        return torch.tanh(self.query_proj(query)[:, :, None, :] + keys[:, None, :, :]) @ self.score_vector

    def masked_scores(self, query: torch.Tensor, keys: torch.Tensor,
                      src_padding_mask: torch.Tensor | None) -> torch.Tensor:
        """scores (B, T, S) with -inf at padded source positions."""
        scores = self.scores(query, keys)
        if src_padding_mask is not None:
            scores = scores.masked_fill(~src_padding_mask[:, None, :], float("-inf"))
        return scores

    def weights(self, query: torch.Tensor, keys: torch.Tensor, src_padding_mask: torch.Tensor | None) -> torch.Tensor:
        """Attention weights (B, T, S); each row sums to 1 over the real source positions."""
        return softmax(self.masked_scores(query, keys, src_padding_mask), dim=-1)

    def forward(self, query: torch.Tensor, memory: torch.Tensor, keys: torch.Tensor,
                src_padding_mask: torch.Tensor | None = None, taps=None) -> torch.Tensor:
        """query (B, T, H), memory (B, S, H), keys = prepare_keys(memory) -> o (B, T, H).

        taps (the decoder's scope): cross_attn.scores and cross_attn.pattern (B, 1, T, S), one head,
        and the context vectors c_t, ``context`` (B, T, H)."""
        taps = or_none(taps)
        scores = self.masked_scores(query, keys, src_padding_mask)
        if taps.wants("cross_attn.scores") or taps.wants("cross_attn.pattern"):  # offered as one head: (B, 1, T, S)
            weights = taps.tap("cross_attn.pattern", softmax(taps.tap("cross_attn.scores", scores[:, None]), dim=-1))[:, 0]
        else:
            weights = softmax(scores, dim=-1)
        context = taps.tap("context", weights @ memory)
        return torch.tanh(self.combine(torch.cat((context, query), dim=-1)))


@dataclass
class RNNDecoderState:
    """What the RNN decoder carries between steps; batch is dim 0 except in `hidden` (dim 1)."""

    memory: torch.Tensor                 # encoder states (B, S, H)
    keys: torch.Tensor                   # attention's prepared keys (B, S, H)
    src_padding_mask: torch.Tensor | None
    hidden: State                        # decoder state (layers, B, H), or (h, c) for the LSTM

    def select(self, rows: torch.Tensor) -> "RNNDecoderState":
        """Keep/repeat/reorder batch rows (beam search)."""
        hidden = (tuple(h[:, rows] for h in self.hidden) if isinstance(self.hidden, tuple)
                  else self.hidden[:, rows])
        mask = None if self.src_padding_mask is None else self.src_padding_mask[rows]
        return RNNDecoderState(self.memory[rows], self.keys[rows], mask, hidden)


class RNNSeq2Seq(Seq2SeqModel):
    """arch "rnn" or "rnn-attention" of a Seq2SeqConfig (cell, gru_reset, d_model, layer counts,
    attention_score).

    Submodules: src_embeddings, tgt_embeddings (the same module when shared_embeddings), encoder,
    decoder (RecurrentLayer), attention (RNNAttention, "rnn-attention" only), lm_head (its weight
    is tgt_embeddings.weight when tie_embeddings).
    """

    def __init__(self, config: Seq2SeqConfig, *, device=None, dtype=None):
        super().__init__()
        if config.arch not in ("rnn", "rnn-attention"):
            raise ValueError(f"RNNSeq2Seq builds arch 'rnn' or 'rnn-attention', got {config.arch!r}")
        self.config = config
        d = config.d_model
        kw = dict(device=device, dtype=dtype)
        self.src_embeddings = Embedding(config.src_vocab_size, d, **kw)
        self.tgt_embeddings = (self.src_embeddings if config.shared_embeddings
                               else Embedding(config.tgt_vocab_size, d, **kw))
        self.encoder = RecurrentLayer(config.cell, d, d, config.num_encoder_layers, reset=config.gru_reset, **kw)
        self.decoder = RecurrentLayer(config.cell, d, d, config.num_decoder_layers, reset=config.gru_reset, **kw)
        self.attention = (RNNAttention(d, config.attention_score, **kw)
                          if config.arch == "rnn-attention" else None)
        self.lm_head = Linear(d, config.tgt_vocab_size, **kw)
        if config.tie_embeddings:
            self.lm_head.weight = self.tgt_embeddings.weight

    def _initial_decoder_state(self, encoder_final: State) -> State:
        n_enc, n_dec = self.config.num_encoder_layers, self.config.num_decoder_layers
        rows = [min(i, n_enc - 1) for i in range(n_dec)]
        if rows == list(range(n_enc)):
            return encoder_final
        if isinstance(encoder_final, tuple):
            return tuple(s[rows] for s in encoder_final)
        return encoder_final[rows]

    def _encode(self, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None, taps=None) -> RNNDecoderState:
        taps = or_none(taps)
        x = taps.tap("encoder.embed", self.src_embeddings(src_ids))
        memory, final = self.encoder(x, src_padding_mask, taps=taps.scope("encoder"))
        memory = taps.tap("encoder.output", memory)
        keys = self.attention.prepare_keys(memory) if self.attention is not None else memory
        return RNNDecoderState(memory, keys, src_padding_mask, self._initial_decoder_state(final))

    def encode(self, src_ids: torch.Tensor, src_padding_mask: torch.Tensor | None = None) -> RNNDecoderState:
        """Read the source once: (B, S) ids -> the decoder's starting state."""
        check_ids(src_ids, "src_ids")
        src_padding_mask = check_mask(src_padding_mask, src_ids, "src_padding_mask")
        return self._encode(src_ids, src_padding_mask)

    def _decode(self, state: RNNDecoderState, tgt_ids: torch.Tensor, tgt_padding_mask: torch.Tensor | None,
                head: bool = True, taps=None):
        """Decoder over tgt_ids (B, T) from `state` -> (logits (B, T, V), new hidden); head=False: the
        lm_head's input (B, T, d) instead of the logits."""
        taps = or_none(taps)
        x, initial = taps.tap("decoder.embed", self.tgt_embeddings(tgt_ids)), taps.tap("decoder.initial", state.hidden)
        scope = taps.scope("decoder")
        outputs, hidden = self.decoder(x, tgt_padding_mask, initial, taps=scope)
        if self.attention is not None:
            outputs = self.attention(outputs, state.memory, state.keys, state.src_padding_mask, taps=scope)
        outputs = taps.tap("decoder.output", outputs)
        return (self.lm_head(outputs) if head else outputs), hidden

    def _forward(self, src_ids, tgt_ids, src_padding_mask, tgt_padding_mask, return_hidden, taps):
        logits, _ = self._decode(self._encode(src_ids, src_padding_mask, taps), tgt_ids, tgt_padding_mask,
                                 head=not return_hidden, taps=taps)
        return logits

    def decode_step(self, state: RNNDecoderState, tokens: torch.Tensor) -> tuple[torch.Tensor, RNNDecoderState]:
        """tokens (B,) -> (logits (B, tgt_vocab), the state after them)."""
        logits, hidden = self._decode(state, tokens[:, None], None)
        return logits[:, 0], RNNDecoderState(state.memory, state.keys, state.src_padding_mask, hidden)
