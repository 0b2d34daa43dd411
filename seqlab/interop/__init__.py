"""Interoperation with the Hugging Face ecosystem: a run out as a transformers Llama folder
(``export_hf``), a local transformers Llama folder in as a run (``import_hf``).

    from seqlab.interop import export_hf, import_hf
    export_hf("runs/ts", "hf/ts")             # LlamaForCausalLM.from_pretrained("hf/ts") loads it
    import_hf("SmolLM-135M/", "runs/smol")    # seqlab generate --run runs/smol works on it

Modules, one concept each: ``llama_layout`` (weight names, the RoPE row permutation),
``hf_config`` (LlamaConfig <-> ModelConfig, what is refused), ``safetensors_io`` (single or sharded
safetensors, read tensor by tensor), ``export``, ``hf_import``, ``run_writer`` (the run directory an
import writes) and ``cli`` (``seqlab export``, ``seqlab import``). Tokenizer files are
``seqlab.tokenizer.hf_format``'s. This area sits above training and inference; nothing imports it.

Names load on first use (see seqlab/lazy.py), so ``seqlab --help`` imports neither torch nor safetensors.
"""

from __future__ import annotations

from seqlab.lazy import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(__name__, {
    "seqlab.interop.export": ("export_hf",),
    "seqlab.interop.hf_config": ("UnsupportedModelError",),
    "seqlab.interop.hf_import": ("import_hf",),
})
