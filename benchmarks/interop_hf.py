"""Time `seqlab export --to hf` and `seqlab import --from hf` on a 124M-parameter model, and the peak
memory (RSS) of each, every step in a fresh subprocess.

Usage: python benchmarks/interop_hf.py [--dir /tmp/interop_bench] [--repeats 2] [--threads 1] [--json]

The model is GPT-2 small shaped, as a Llama: d_model 768, 12 layers, 12 heads, vocabulary 50257
(the fixture GPT-2 tokenizer), context 1024, SwiGLU d_ff 2048, tied embeddings: 124M parameters.
Random weights: conversion speed does not depend on them. Steps (each the best of --repeats runs, each run a new process):

  export          run (checkpoint with AdamW moments, as training leaves it, + tokenizer) ->
                  transformers folder, one float32 model.safetensors
  import fp32     that folder -> a seqlab run
  import bf16     the same weights saved in bf16 (half the file; converted to float32 on import)
  import sharded  the float32 folder re-saved in 100 MB shards (model.safetensors.index.json)

Memory: each subprocess reports its peak RSS (VmHWM, Linux) and its RSS after importing torch and
seqlab (and loading torch's meta-device kernels, which the import uses to know the model's shapes
without allocating it: ~150 MB of code, once), before the conversion starts; "peak - base" is what
the conversion itself needed, to compare with the float32 model size. A converter holding the
weights twice would need about twice that.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "cs336"
SHAPE = dict(vocab_size=50257, context_length=1024, d_model=768, num_layers=12, num_heads=12, d_ff=2048)

# runs in the child: set up seqlab, note the RSS, do one step, print {"seconds", "base_mib", "peak_mib"}
_CHILD = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {repo!r})
    import torch
    torch.set_num_threads({threads})
    import seqlab.interop.export, seqlab.interop.hf_import, safetensors.torch
    from seqlab.model.rope import RotaryPositionalEmbedding
    RotaryPositionalEmbedding(10000.0, 64, 8, device="meta")  # torch's meta kernels load once (~150 MB)
    def status_mib(field):  # VmRSS now, VmHWM the peak (ru_maxrss would keep a forking parent's peak)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    base = status_mib("VmRSS")
    started = time.perf_counter()
    {step}
    seconds = time.perf_counter() - started
    peak = status_mib("VmHWM")
    print(json.dumps({{"seconds": seconds, "base_mib": base, "peak_mib": peak}}))
""")

STEPS = {
    "export": "seqlab.interop.export.export_hf({run!r}, {out!r})",
    "import": "seqlab.interop.hf_import.import_hf({src!r}, {out!r})",
}


def child(step: str, threads: int, **paths: str) -> dict:
    code = _CHILD.format(repo=str(REPO), threads=threads, step=STEPS[step].format(**paths))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{step} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def best_of(step: str, repeats: int, threads: int, out: Path, **paths: str) -> dict:
    runs = []
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        runs.append(child(step, threads, out=str(out), **paths))
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "peak_mib": max(r["peak_mib"] for r in runs)}


def make_run(directory: Path) -> int:
    """A run directory with a random 124M model and the fixture GPT-2 tokenizer."""
    import torch

    from seqlab.model import TransformerLM
    from seqlab.runs.checkpoint import save_checkpoint
    from seqlab.tokenizer import Tokenizer
    from seqlab.training.optimizer import AdamW

    torch.manual_seed(0)
    model = TransformerLM(**SHAPE, tie_embeddings=True)
    optimizer = AdamW(model.parameters(), lr=1e-9)  # one step, so the checkpoint holds both moments,
    for parameter in model.parameters():  # as a trained run's does (3x the weights on disk)
        parameter.grad = torch.zeros_like(parameter)
    optimizer.step()
    save_checkpoint(model, optimizer, 1, directory / "checkpoints" / "latest.pt")
    tokenizer = Tokenizer.from_files(FIXTURES / "gpt2_vocab.json", FIXTURES / "gpt2_merges.txt", ["<|endoftext|>"])
    tokenizer.save(directory / "tokenizer")
    return model.num_parameters()


def resave(source: Path, target: Path, *, bf16: bool = False, shard_bytes: int | None = None) -> None:
    """The exported folder again: tensors cast to bf16, or split into shards with an index."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("model.safetensors"))
    tensors = load_file(source / "model.safetensors")
    if bf16:
        tensors = {name: t.to(torch.bfloat16) for name, t in tensors.items()}
        config = json.loads((target / "config.json").read_text())
        config["torch_dtype"] = config["dtype"] = "bfloat16"
        (target / "config.json").write_text(json.dumps(config, indent=2))
    if shard_bytes is None:
        save_file(tensors, target / "model.safetensors", metadata={"format": "pt"})
        return
    shards: list[dict] = [{}]
    size = 0
    for name, tensor in tensors.items():
        nbytes = tensor.numel() * tensor.element_size()
        if shards[-1] and size + nbytes > shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = tensor
        size += nbytes
    weight_map = {}
    for number, shard in enumerate(shards, start=1):
        file = f"model-{number:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, target / file, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, file))
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    (target / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="/tmp/seqlab_interop_bench", help="scratch folder (about 2.5 GB)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    root = Path(args.dir)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    params = make_run(root / "run")
    results = {"parameters": params, "fp32_model_mib": params * 4 / 2**20, "python": platform.python_version(),
               "threads": args.threads}
    results["export"] = best_of("export", args.repeats, args.threads, root / "hf", run=str(root / "run"))
    exported = root / "hf_fp32"
    shutil.rmtree(exported, ignore_errors=True)
    shutil.copytree(root / "hf", exported)
    resave(exported, root / "hf_bf16", bf16=True)
    resave(exported, root / "hf_sharded", shard_bytes=100 * 2**20)
    for name, folder in (("import fp32", exported), ("import bf16", root / "hf_bf16"),
                         ("import sharded", root / "hf_sharded")):
        results[name] = best_of("import", args.repeats, args.threads, root / "imported", src=str(folder))
    shards = len(list((root / "hf_sharded").glob("model-*.safetensors")))
    shutil.rmtree(root, ignore_errors=True)

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"model: {params / 1e6:.1f}M parameters, float32 {results['fp32_model_mib']:.0f} MiB "
          f"(python {results['python']}, {args.threads} thread(s)); sharded = {shards} shards of <= 100 MB")
    print(f"{'step':<16}{'seconds':>9}{'base MiB':>10}{'peak MiB':>10}{'peak - base':>13}{'/ fp32 model':>14}")
    for name in ("export", "import fp32", "import bf16", "import sharded"):
        r = results[name]
        print(f"{name:<16}{r['seconds']:>9.2f}{r['base_mib']:>10.0f}{r['peak_mib']:>10.0f}"
              f"{r['peak_mib'] - r['base_mib']:>13.0f}{(r['peak_mib'] - r['base_mib']) / results['fp32_model_mib']:>13.2f}x")


if __name__ == "__main__":
    main()
