"""Byte-level BPE: training (:func:`train_bpe`), encoding/decoding (:class:`Tokenizer`), teaching trace.

    from seqlab.tokenizer import Tokenizer, train_bpe
    vocab, merges = train_bpe("corpus.txt", 10_000, ["<|endoftext|>"])   # ids: specials, 256 bytes, merges
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    tokenizer.save("tok/")                                               # vocab.json, merges.txt (GPT-2 format)
    text = tokenizer.decode(tokenizer.encode("Hello world<|endoftext|>"))

One concept a module: bytes_unicode, pretokenize, chunking, merges (and ``merge_trace``), trainer,
bpe_apply, tokenizer, parallel (``encode_file``), token_array, streaming (``StreamDecoder``),
files, corpus, npy_stream, hf_format, tiktoken_format, cli. Names load on first use
(seqlab/lazy.py), so ``seqlab --help`` imports neither numpy nor torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.tokenizer.files": ("TokenizerFileError",),
    "seqlab.tokenizer.hf_format": ("read_tokenizer_json", "write_hf_tokenizer"),
    "seqlab.tokenizer.merges": ("merge_trace",),
    "seqlab.tokenizer.pretokenize": ("GPT2_PATTERN", "LLAMA3_PATTERN", "gpt2_pretokenize", "whitespace_pretokenize"),
    "seqlab.tokenizer.streaming": ("StreamDecoder",),
    "seqlab.tokenizer.tiktoken_format": ("write_tiktoken",),
    "seqlab.tokenizer.tokenizer": ("Tokenizer",),
    "seqlab.tokenizer.trainer": ("train_bpe",),
})
