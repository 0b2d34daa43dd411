"""Byte-level BPE: training (:func:`train_bpe`), encoding/decoding (:class:`Tokenizer`), teaching trace.

    from seqlab.tokenizer import Tokenizer, train_bpe
    vocab, merges = train_bpe("corpus.txt", 10_000, ["<|endoftext|>"])   # ids: specials, 256 bytes, merges
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    tokenizer.save("tok/")                                               # vocab.json, merges.txt (GPT-2 format)
    ids = tokenizer.encode("Hello world<|endoftext|>")
    text = tokenizer.decode(ids)

Modules, one concept each: ``bytes_unicode`` (GPT-2's byte <-> character map), ``pretokenize``
(GPT-2 and Llama 3 regexes, special-token splitting), ``chunking`` (safe file chunk boundaries), ``merges`` (the
merge-selection rule and incremental pair counts, ``merge_trace``), ``trainer``, ``bpe_apply``
(merging one pre-token by rank), ``tokenizer``, ``parallel`` (the worker pool, ``encode_file``),
``token_array`` (token id files), ``streaming`` (``StreamDecoder``), ``files`` (vocab.json /
merges.txt, written as a unit, checked to agree), ``corpus`` (a text file checked before any work),
``npy_stream``, ``hf_format`` (Hugging Face ``tokenizer.json``: ``read_tokenizer_json``,
``write_hf_tokenizer``), ``tiktoken_format`` (``write_tiktoken``) and ``cli`` (``seqlab bpe train``,
``seqlab bpe export --to hf|tiktoken``, ``seqlab tokenize``).

Names load on first use (see seqlab/lazy.py), so ``seqlab --help`` imports neither numpy nor torch.
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
