"""Sequence-to-sequence models: RNN encoder-decoder, RNN with attention, and the Transformer.

This package file imports only the standard library (the CLI imports it for `seqlab --help`);
the models live in `seqlab.seq2seq.rnn` and `seqlab.seq2seq.transformer` and are built from a
`Seq2SeqConfig` by `seqlab.seq2seq.build.build_model`.
"""

from seqlab.seq2seq.config import ARCHS, BOS_ID, EOS_ID, PAD_ID, UNK_ID, Seq2SeqConfig

__all__ = ["ARCHS", "BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", "Seq2SeqConfig"]
