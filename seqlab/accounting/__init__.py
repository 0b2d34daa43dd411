"""What does a Transformer LM cost? Parameters, FLOPs, memory and training time from its config.

Modules: ``costs`` (the formulas: parameters, FLOPs, activations, memory, time), ``presets`` (named
GPT-2 / TinyStories shapes and the default assumptions), ``report`` (everything in one dict and as a
table) and ``cli`` (``seqlab accounting``). Names load on first use (see seqlab/lazy.py)::

    from seqlab.accounting import count_parameters, PRESETS
    count_parameters(PRESETS["gpt2-xl"])["total"]   # 2_127_057_600
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

_EXPORTS = {
    "ADAMW_FLOPS_PER_PARAMETER": "seqlab.accounting.costs",
    "BYTES_PER_FLOAT32": "seqlab.accounting.costs",
    "FLOP_COMPONENTS": "seqlab.accounting.costs",
    "activation_elements": "seqlab.accounting.costs",
    "adamw_step_flops": "seqlab.accounting.costs",
    "as_model_config": "seqlab.accounting.costs",
    "config_dict": "seqlab.accounting.costs",
    "count_parameters": "seqlab.accounting.costs",
    "forward_flops": "seqlab.accounting.costs",
    "max_batch_size": "seqlab.accounting.costs",
    "memory_bytes": "seqlab.accounting.costs",
    "training_step_flops": "seqlab.accounting.costs",
    "training_time_seconds": "seqlab.accounting.costs",
    "DEFAULT_MEMORY_GB": "seqlab.accounting.presets",
    "DEFAULT_MFU": "seqlab.accounting.presets",
    "DEFAULT_PEAK_FLOPS": "seqlab.accounting.presets",
    "DEFAULT_TRAIN_BATCH": "seqlab.accounting.presets",
    "DEFAULT_TRAIN_STEPS": "seqlab.accounting.presets",
    "PRESETS": "seqlab.accounting.presets",
    "FORMULA_TEXT": "seqlab.accounting.report",
    "ReportOptions": "seqlab.accounting.report",
    "account": "seqlab.accounting.report",
    "format_report": "seqlab.accounting.report",
    "load_config_file": "seqlab.accounting.report",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
