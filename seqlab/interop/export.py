"""``seqlab export --to hf``: a trained run as a folder ``transformers`` loads with no custom code.

    export_hf("runs/ts", "hf/ts")
    # hf/ts/config.json              LlamaConfig fields, architectures ["LlamaForCausalLM"], θ and ε of the run
    # hf/ts/model.safetensors        the weights under Llama's names, q/k rows in Llama's RoPE layout
    # hf/ts/generation_config.json   bos/eos = <|endoftext|> when the tokenizer has it
    # hf/ts/tokenizer.json, tokenizer_config.json, special_tokens_map.json

    from transformers import AutoTokenizer, LlamaForCausalLM
    model = LlamaForCausalLM.from_pretrained("hf/ts")      # same logits as seqlab's model
    tokenizer = AutoTokenizer.from_pretrained("hf/ts")     # same ids as seqlab's tokenizer

The folder is built beside OUT and swapped in whole (an existing OUT may hold only these files).
Weights keep the checkpoint's dtype (float32 for a seqlab run). A model Llama cannot express (an
ablation: no norm, post-norm, NoPE, the SiLU FFN) is refused naming the field, before anything is
written; see :mod:`seqlab.interop.hf_config` and :mod:`seqlab.interop.llama_layout`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from seqlab.atomic import atomic_write_text
from seqlab.interop.hf_config import (
    UnsupportedModelError,
    check_llama_expressible,
    to_llama_config,
)
from seqlab.interop.llama_layout import llama_names, pairs_to_halves
from seqlab.interop.safetensors_io import save_safetensors
from seqlab.lm.loading import check_vocabularies
from seqlab.model.config import ModelConfig
from seqlab.outdir import check_out_folder, output_folder
from seqlab.runs.kinds import check_kind
from seqlab.runs.checkpoint import (
    checkpoint_path,
    read_checkpoint,
    strip_wrapper_prefixes,
)
from seqlab.tokenizer import Tokenizer
from seqlab.tokenizer.hf_format import HF_TOKENIZER_FILES, write_hf_tokenizer

EXPORT_FILES = ("config.json", "generation_config.json", "model.safetensors", *HF_TOKENIZER_FILES)


def llama_state_dict(state: dict[str, torch.Tensor], config: ModelConfig, source: str) -> dict[str, torch.Tensor]:
    """seqlab's state dict -> Llama's (renamed; q/k rows permuted to Llama's RoPE layout).

    ``state`` is consumed (its tensors move to the result, so nothing is held twice). A missing or
    unexpected weight raises ValueError naming it and ``source``.
    """
    tied = config.tie_embeddings
    heads = {"q": config.num_heads, "k": config.num_kv_heads or config.num_heads}
    out: dict[str, torch.Tensor] = {}
    for ours, theirs, rope in llama_names(config.num_layers, tied=tied):
        if ours not in state:
            raise ValueError(f"{source}: weight {ours!r} is missing from the checkpoint")
        tensor = state.pop(ours)
        out[theirs] = (pairs_to_halves(tensor, heads[rope]) if rope else tensor).contiguous()
    if tied:
        state.pop("lm_head.weight", None)  # the embedding, when the state dict lists it twice
    if state:
        raise ValueError(f"{source}: weights {sorted(state)[:5]} have no Llama equivalent")
    return out


EXPORT_COMMAND = "seqlab export --to hf"


def export_hf(run_dir: str | os.PathLike, out_dir: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write the run's latest checkpoint and tokenizer as a transformers Llama folder ``out_dir``.

    Raises :class:`~seqlab.interop.hf_config.UnsupportedModelError` (a model Llama cannot express),
    FileNotFoundError (no checkpoint or tokenizer) or ValueError (damaged files), all naming the
    file and, where there is one, the field; ``out_dir`` is then left as it was. ``out_dir`` follows
    :mod:`seqlab.outdir`'s rule: new, empty, an earlier export, or ``overwrite``.
    """
    run_dir, out = Path(run_dir), Path(out_dir)
    check_out_folder(out, EXPORT_COMMAND, overwrite=overwrite)
    check_kind(run_dir, "lm", "seqlab export --to hf")  # a seq2seq run is named as one
    path = checkpoint_path(run=run_dir)
    payload = read_checkpoint(path, mmap=True)  # the optimizer's moments are never read
    if not payload.get("model_config"):
        raise UnsupportedModelError(f"{path} has no model_config, so its shapes are unknown")
    config = ModelConfig.from_dict(payload["model_config"], f"checkpoint {path}")
    check_llama_expressible(config, str(path))
    if not (run_dir / "tokenizer").is_dir():
        raise FileNotFoundError(f"{run_dir} has no tokenizer/ directory; the export needs the run's tokenizer")
    tokenizer = Tokenizer.load(run_dir / "tokenizer")
    check_vocabularies(tokenizer.vocab_size, config.vocab_size, f"{run_dir / 'tokenizer'} is not this model's")
    tensors = llama_state_dict(strip_wrapper_prefixes(payload.pop("model")), config, str(path))
    del payload  # the optimizer state is not exported
    dtypes = {str(tensor.dtype).removeprefix("torch.") for tensor in tensors.values()}
    eos = tokenizer.eot_id
    llama = to_llama_config(config, bos_token_id=eos, eos_token_id=eos, dtype=dtypes.pop() if len(dtypes) == 1 else "float32")
    generation = {"bos_token_id": eos, "eos_token_id": eos, "pad_token_id": eos}
    with output_folder(out, EXPORT_COMMAND, overwrite=overwrite) as building:
        save_safetensors(tensors, building / "model.safetensors")
        atomic_write_text(building / "config.json", json.dumps(llama, indent=2) + "\n")
        atomic_write_text(building / "generation_config.json", json.dumps(generation, indent=2) + "\n")
        write_hf_tokenizer(tokenizer, building, model_max_length=config.context_length)
    return out
