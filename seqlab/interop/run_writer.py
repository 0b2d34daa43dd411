"""A seqlab run directory for a model that was not trained here (``seqlab import``).

The one place that writes it, with the run format's helpers (:mod:`seqlab.runs`) and what
``seqlab train`` writes into them, so the result is a language-model run like any other::

    OUT/config.json             "kind": "lm", the TrainConfig with the model's shape, "model"
                                (ModelConfig fields), "data": {"imported_from"} (runs.config)
    OUT/checkpoints/latest.pt   step 0: weights, an AdamW state with no moments yet, the run state
                                a --resume needs (sampler, RNG), model_config (runs.checkpoint.save_checkpoint)
    OUT/tokenizer/              Tokenizer.save

``seqlab generate --run OUT``, ``seqlab eval --run OUT``, ``seqlab explore --run OUT``,
``seqlab accounting --config OUT/config.json`` and ``seqlab train --resume --out OUT --data-dir D
--max-steps N`` (fine-tuning from step 0 on data tokenized with OUT/tokenizer) then work on it.
The directory is built beside OUT and renamed into place: it appears whole or not at all.
"""

from __future__ import annotations

import os
from dataclasses import asdict, fields
from pathlib import Path

import numpy as np

from seqlab.lm.settings import TrainConfig
from seqlab.model import TransformerLM
from seqlab.outdir import check_out_folder, output_folder
from seqlab.runs.checkpoint import save_checkpoint
from seqlab.runs.config import write_run_config
from seqlab.runs.kinds import TOKENIZER_DIR
from seqlab.runs.state import TrainState
from seqlab.tokenizer import Tokenizer
from seqlab.training.optimizer import AdamW, weight_decay_groups
from seqlab.training.run_state import run_extra

IMPORT_COMMAND = "seqlab import --from hf"


def write_imported_run(out: str | os.PathLike, model: TransformerLM, tokenizer: Tokenizer, *,
                       source: str, seed: int = 0, overwrite: bool = False) -> Path:
    """Write the run directory ``out`` for ``model`` and ``tokenizer`` (``out``: new, empty, an
    earlier import untouched since, or ``overwrite``; :mod:`seqlab.outdir`).

    ``source`` (where the model came from) is recorded in config.json and the checkpoint's extra
    as ``imported_from``. ``model``'s tensors are saved as they are (no copy is made).
    """
    out = Path(out)
    check_out_folder(out, IMPORT_COMMAND, overwrite=overwrite)
    train_fields = {f.name for f in fields(TrainConfig)}
    shape = {name: value for name, value in asdict(model.config).items() if name in train_fields}
    config = TrainConfig(out_dir=str(out), seed=seed, **shape)
    optimizer = AdamW(weight_decay_groups(model), lr=config.lr, betas=(config.beta1, config.beta2), eps=config.eps,
                      weight_decay=config.weight_decay)  # moments appear at the first step
    extra = run_extra(config=config, state=TrainState(sampler=np.random.default_rng(seed).bit_generator.state),
                      global_batch=None, world_size=1, scaler=None)
    extra["imported_from"] = source
    with output_folder(out, IMPORT_COMMAND, overwrite=overwrite) as building:
        write_run_config(building, config.run_config(model.config, world_size=1, total_steps=0, imported_from=source))
        save_checkpoint(model, optimizer, 0, building / "checkpoints" / "latest.pt", extra=extra)
        tokenizer.save(building / TOKENIZER_DIR)
    return out
