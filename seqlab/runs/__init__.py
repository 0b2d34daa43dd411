"""The run directory: one format for ``seqlab train`` (language models) and ``seqlab seq2seq train``.

Layout::

    RUN/config.json              {"kind", "settings", "model", "data", "seqlab_version"} (:mod:`.config`)
    RUN/checkpoints/latest.pt    the newest checkpoint, plus step_{step:07d}.pt (:mod:`.checkpoint`)
    RUN/log.jsonl                train and eval records (:mod:`.log`)
    RUN/tokenizer/               language-model runs: the data's BPE tokenizer
    RUN/vocab.json               seq2seq runs: the source and target vocabularies
    RUN/loss_curve.png           train and validation loss, redrawn at each evaluation
    RUN/.lock                    held by the process training the run (:mod:`.lock`)

Training, inference, the explorer, the demo and ``seqlab paths`` all read and write runs through
this package, which sits low in the layers: it imports neither ``seqlab.training`` nor
``seqlab.inference`` (``tests/test_layout.py`` holds the rule). Every file is written to a
temporary name and renamed (:mod:`seqlab.atomic`), so a reader never sees half a file.

Names load on first use (see seqlab/lazy.py): the kind of a run and its config.json are readable
without importing torch.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.runs.checkpoint": (
        "DiskFullError",
        "checkpoint_files",
        "checkpoint_path",
        "load_checkpoint",
        "load_model_from_checkpoint",
        "load_payload",
        "read_checkpoint",
        "remove_old_checkpoints",
        "save_checkpoint",
        "unwrap_model",
    ),
    "seqlab.runs.config": ("RunConfig", "read_run_config", "write_run_config"),
    "seqlab.runs.kinds": ("KINDS", "Kind", "RunKindError", "check_kind", "how_to_make", "run_kind"),
    "seqlab.runs.lock": ("RunLock", "RunLockedError"),
    "seqlab.runs.log": ("JsonlLog", "read_jsonl"),
})
