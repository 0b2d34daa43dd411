"""Sequence-to-sequence models: RNN encoder-decoder, RNN with attention, and the Transformer.

    from seqlab.seq2seq import Seq2SeqConfig, build_model, load_run, translate

    model = build_model(Seq2SeqConfig("transformer", src_vocab_size=40, tgt_vocab_size=16))
    run = load_run("runs/dates")                     # a run of `seqlab seq2seq train`
    translate(run, ["Jan 15, 2020"])                  # ["2020-01-15"]

Modules, one concept each: ``config`` (Seq2SeqConfig, special ids), ``base`` (the encode/decode-step
interface), ``rnn`` and ``transformer`` (the models), ``build``; ``tasks`` (built-in pair
generators), ``vocab``, ``data`` (TSV pairs, batches), ``dataset`` (a run's pairs, split and ids);
``decoding`` (greedy, beam, ``translate``), ``metrics`` and ``evaluation`` (scoring), ``loading``
(``load_run``); ``train_config`` and ``task`` (training on the engine of ``seqlab.training``);
``inspect`` (Jacobian dependency maps), ``paths`` (the information-paths experiment), ``cli``.
Code that only translates (``loading``, ``decoding``, ``evaluation``) imports no training module.

Names load on first use (see seqlab/lazy.py), so ``seqlab --help`` imports no torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.seq2seq.config": ("ARCHS", "BOS_ID", "EOS_ID", "PAD_ID", "UNK_ID", "Seq2SeqConfig"),
    "seqlab.seq2seq.build": ("build_model", "num_parameters", "size_for_parameters"),
    "seqlab.seq2seq.rnn": ("RNNSeq2Seq",),
    "seqlab.seq2seq.transformer": ("TransformerSeq2Seq",),
    "seqlab.seq2seq.decoding": ("beam_search", "greedy_decode", "translate"),
    "seqlab.seq2seq.evaluation": ("TranslationScores", "evaluate_translations"),
    "seqlab.seq2seq.loading": ("Seq2SeqRun", "load_run"),
    "seqlab.seq2seq.settings": ("Seq2SeqTrainConfig",),
})
