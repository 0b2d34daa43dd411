"""Byte-level BPE: training (:func:`train_bpe`), encoding/decoding (:class:`Tokenizer`), teaching trace."""

from seqlab.tokenizer.files import TokenizerFileError
from seqlab.tokenizer.merges import merge_trace
from seqlab.tokenizer.pretokenize import GPT2_PATTERN, gpt2_pretokenize, whitespace_pretokenize
from seqlab.tokenizer.streaming import StreamDecoder
from seqlab.tokenizer.tokenizer import Tokenizer
from seqlab.tokenizer.trainer import train_bpe

__all__ = [
    "GPT2_PATTERN",
    "StreamDecoder",
    "Tokenizer",
    "TokenizerFileError",
    "gpt2_pretokenize",
    "merge_trace",
    "train_bpe",
    "whitespace_pretokenize",
]
