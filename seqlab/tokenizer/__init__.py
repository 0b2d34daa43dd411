"""Byte-level BPE: training (:func:`train_bpe`), encoding/decoding (:class:`Tokenizer`), teaching trace.

    from seqlab.tokenizer import Tokenizer, train_bpe
    vocab, merges = train_bpe("corpus.txt", 10_000, ["<|endoftext|>"])   # ids: specials, 256 bytes, merges
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    tokenizer.save("tok/")                                               # vocab.json, merges.txt (GPT-2 format)
    ids = tokenizer.encode("Hello world<|endoftext|>")
    text = tokenizer.decode(ids)

Modules, one concept each: ``bytes_unicode`` (GPT-2's byte <-> character map), ``pretokenize``
(GPT-2 regex, special-token splitting), ``chunking`` (safe file chunk boundaries), ``merges`` (the
merge-selection rule and incremental pair counts, ``merge_trace``), ``trainer``, ``bpe_apply``
(merging one pre-token by rank), ``tokenizer``, ``streaming`` (``StreamDecoder``), ``files``
(vocab.json / merges.txt, written as a unit, checked to agree), ``corpus`` (a text file checked
before any work), ``npy_stream`` and ``cli`` (``seqlab bpe train``, ``seqlab tokenize``).
"""

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
