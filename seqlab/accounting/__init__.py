"""What does a Transformer LM cost? Parameters, FLOPs, memory and training time from its config.

Modules: ``costs`` (the formulas: parameters, FLOPs, activations, memory, time), ``presets`` (named
GPT-2 / TinyStories shapes and the default assumptions), ``report`` (everything in one dict and as a
table) and ``cli`` (``seqlab accounting``). Names load on first use (see seqlab/lazy.py)::

    from seqlab.accounting import count_parameters, PRESETS
    count_parameters(PRESETS["gpt2-xl"])["total"]   # 2_127_057_600
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.accounting.costs": (
        "ADAMW_FLOPS_PER_PARAMETER",
        "BYTES_PER_FLOAT32",
        "FLOP_COMPONENTS",
        "activation_elements",
        "adamw_step_flops",
        "as_model_config",
        "config_dict",
        "count_parameters",
        "forward_flops",
        "kv_cache_bytes",
        "kv_width",
        "max_batch_size",
        "memory_bytes",
        "training_step_flops",
        "training_time_seconds",
    ),
    "seqlab.accounting.presets": (
        "DEFAULT_MEMORY_GB",
        "DEFAULT_MFU",
        "DEFAULT_PEAK_FLOPS",
        "DEFAULT_TRAIN_BATCH",
        "DEFAULT_TRAIN_STEPS",
        "PRESETS",
    ),
    "seqlab.accounting.report": (
        "FORMULA_TEXT",
        "ReportOptions",
        "account",
        "format_report",
        "load_config_file",
    ),
})
