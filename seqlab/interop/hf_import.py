"""``seqlab import --from hf``: a local transformers Llama folder as a seqlab run directory.

    import_hf("SmolLM-135M/", "runs/smol")
    # runs/smol/config.json, checkpoints/latest.pt, tokenizer/  (see seqlab.interop.run_writer)
    # then: seqlab generate --run runs/smol --prompt "..."; seqlab eval --run runs/smol ...

The folder must hold ``config.json`` (a ``LlamaForCausalLM``; see :mod:`seqlab.interop.hf_config`
for the fields read and refused), ``tokenizer.json`` (a byte-level BPE; see
:mod:`seqlab.tokenizer.hf_format`) and ``model.safetensors`` or shards listed in
``model.safetensors.index.json``. Everything is checked before any weight is read: every tensor
the config implies must be there with the right shape, and no other (a bias, say) may be.

Weights are read one tensor at a time (:class:`~seqlab.interop.safetensors_io.WeightFiles`),
converted to float32 (bf16 and fp16 values are all exactly float32 values, so nothing is rounded;
seqlab's generate, eval and training run in float32, with autocast for lower precision) and q/k
rows are put in seqlab's RoPE layout. The model is never built with weights of its own, so memory
peaks at one float32 copy of the model plus one tensor. No network: SRC must be a local folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import torch

from seqlab.interop.hf_config import UnsupportedModelError, from_llama_config
from seqlab.interop.limits import check_finite, check_fits_in_memory
from seqlab.interop.llama_layout import halves_to_pairs, llama_names
from seqlab.interop.run_writer import IMPORT_COMMAND, write_imported_run
from seqlab.interop.safetensors_io import WeightFiles
from seqlab.model import ModelConfig, TransformerLM
from seqlab.outdir import check_out_folder
from seqlab.jsonfile import read_json
from seqlab.tokenizer import read_tokenizer_json

FLOAT_DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
_HUB_NAME = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# tensors some Llama checkpoints carry that hold nothing seqlab needs (recomputed RoPE tables)
_IGNORED = re.compile(r"model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq")


def check_source(src: Path) -> None:
    """SRC must be a local folder; a Hub name (``org/name``) gets how to download it first."""
    if src.is_dir():
        return
    if src.exists():
        raise NotADirectoryError(f"{src} is a file; give the folder that holds config.json and the weights")
    if _HUB_NAME.fullmatch(str(src)):
        raise FileNotFoundError(
            f"{src} is not a local folder; seqlab import never downloads. If it is a Hugging Face Hub name, "
            f"download it first, e.g. `huggingface-cli download {src} --local-dir {src.name}`, then import "
            f"from {src.name}")
    raise FileNotFoundError(f"{src} does not exist")


def read_llama_config(src: Path) -> ModelConfig:
    """The ModelConfig of SRC/config.json (refusals name the file and field)."""
    path = src / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; SRC must be a transformers model folder")
    fields = from_llama_config(read_json(path, expected=dict), str(path))  # a JSON object, or an error naming the line
    try:
        config = ModelConfig(**fields)
    except ValueError as error:
        raise UnsupportedModelError(f"{path}: {error}") from None
    check_fits_in_memory(config, str(path))  # before anything the size of the model is built
    return config


def plan_weights(files: WeightFiles, config: ModelConfig) -> list[tuple[str, str, str | None]]:
    """``llama_names`` for ``config``, after checking every tensor's presence, shape and dtype
    against the model (built on the meta device: shapes, no memory) and that nothing is left over."""
    tied = config.tie_embeddings
    available = set(files.names())
    plan = []
    for entry in llama_names(config.num_layers, tied=tied):  # a config.json of a million layers stops at
        if entry[1] not in available:                        # its first missing tensor, after a few names
            raise ValueError(f"{files.folder}: tensor {entry[1]} is missing (config.json implies it: "
                             f"num_hidden_layers={config.num_layers}, tie_word_embeddings={str(tied).lower()})")
        plan.append(entry)
    expected = {name: tuple(t.shape) for name, t in TransformerLM.from_config(config, device="meta").state_dict().items()}
    for ours, theirs, _ in plan:
        if files.shape(theirs) != expected[ours]:
            raise ValueError(f"{files.file_of(theirs)}: tensor {theirs} has shape {list(files.shape(theirs))}, but "
                             f"config.json implies {list(expected[ours])}")
        if files.dtype(theirs) not in FLOAT_DTYPES:
            raise UnsupportedModelError(f"{files.file_of(theirs)}: tensor {theirs} has dtype {files.dtype(theirs)}; "
                                        f"seqlab imports {', '.join(FLOAT_DTYPES)} weights (not quantized ones)")
    used = {theirs for _, theirs, _ in plan}
    extra = sorted(name for name in available - used
                   if not _IGNORED.fullmatch(name) and not (tied and name == "lm_head.weight"))
    if extra:
        why = "seqlab's Llama has no biases" if extra[0].endswith(".bias") else "seqlab's Llama has no such weight"
        raise UnsupportedModelError(f"{files.file_of(extra[0])}: tensor {extra[0]} is not supported ({why}; "
                                    f"{len(extra)} such tensor{'s' if len(extra) > 1 else ''})")
    return plan


def read_weights(files: WeightFiles, config: ModelConfig, plan: list[tuple[str, str, str | None]]
                 ) -> dict[str, torch.Tensor]:
    """seqlab's float32 state dict, read tensor by tensor (each converted as soon as it is read and
    checked to hold only finite values)."""
    heads = {"q": config.num_heads, "k": config.num_kv_heads or config.num_heads}
    state: dict[str, torch.Tensor] = {}
    for ours, theirs, rope in plan:
        tensor = files.tensor(theirs).to(torch.float32)
        check_finite(tensor, theirs, str(files.file_of(theirs)))
        state[ours] = halves_to_pairs(tensor, heads[rope]) if rope else tensor.contiguous()
        del tensor
    return state


def import_hf(src: str | os.PathLike, out: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Read the local transformers Llama folder ``src`` and write the seqlab run directory ``out``.

    ``out`` follows :mod:`seqlab.outdir`'s rule (new, empty, an earlier import that has not been
    trained since, or ``overwrite``). Raises :class:`~seqlab.interop.hf_config.UnsupportedModelError` (a model
    or field seqlab cannot run), FileNotFoundError / FileExistsError, or ValueError (damaged or
    inconsistent files), each naming the file and the field or tensor; nothing is written then.
    """
    src, out = Path(src), Path(out)
    check_source(src)
    check_out_folder(out, IMPORT_COMMAND, overwrite=overwrite)
    config = read_llama_config(src)
    tokenizer = read_tokenizer_json(src / "tokenizer.json")
    if tokenizer.vocab_size != config.vocab_size:
        raise UnsupportedModelError(
            f"{src / 'tokenizer.json'} has {tokenizer.vocab_size} ids but {src / 'config.json'} vocab_size is "
            f"{config.vocab_size}; seqlab needs the tokenizer and the model to have the same ids")
    files = WeightFiles(src)
    plan = plan_weights(files, config)
    state = read_weights(files, config, plan)
    model = TransformerLM.from_config(config, device="meta")
    if config.tie_embeddings:  # one tensor, listed under both names as the tied model's state dict does
        state["lm_head.weight"] = state["token_embeddings.weight"]
    model.load_state_dict(state, strict=True, assign=True)  # the tensors themselves become the parameters
    del state
    if config.tie_embeddings:  # assign=True made two Parameter objects of the one tensor: one again
        model.token_embeddings.weight = model.lm_head.weight
    return write_imported_run(out, model, tokenizer, source=str(src.resolve()), overwrite=overwrite)
