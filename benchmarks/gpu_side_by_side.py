"""seqlab against Hugging Face Llama on one GPU, in one process, rounds alternated (issue 18 item 7).

    python benchmarks/gpu_side_by_side.py train [--shapes cs336,gpt2] [--modes trainer,raw,hf,raw-eager,hf-eager]
                                              [--rounds 5] [--steps 10] [--warmup 3] [--json FILE]
    python benchmarks/gpu_side_by_side.py generate [--batches 1,32] [--new-tokens 256] [--hf-compile]
                                                 [--rounds 3] [--json FILE]

``train`` times one optimizer step (bf16 autocast, float32 weights and AdamW state, gradient clipping
at 1.0) of each mode on the same shapes, all modes built in this process and timed in turn, round
after round, each round in a rotated order (so a slower moment of the GPU hits every mode alike):

    trainer        seqlab's Trainer: the engine's own train_step (seqlab/training/engine.py): batches
                   drawn ahead into pinned memory, the task's model and loss compiled as one region
                   (TaskLoss; the fused loss on CUDA), foreach clip and AdamW
    trainer-logits the same with fused_loss="off" (full logits: which one "auto" should pick on CUDA)
    raw            seqlab's bare step: TransformerLM + linear_cross_entropy compiled, clip_grad_norm,
                   AdamW (foreach on CUDA), on one batch already on the GPU
    raw-logits     the bare step with full logits and cross_entropy
    raw-pad        the bare step with pad_vocab_multiple=128 (issue 18 item 5; use shape gpt2-50257)
    hf             transformers' LlamaForCausalLM, the same shapes (seqlab.interop.hf_config), sdpa
                   attention, compiled, F.cross_entropy on its logits, clip_grad_norm_, torch AdamW(fused)
    X-eager        mode X without torch.compile (e.g. raw-eager, hf-eager, trainer-eager)

Shapes (batch x context tokens per step): cs336 (vocab 10,000, context 256, d_model 512, 4 layers, 16
heads, d_ff 1,344, batch 128), gpt2 (vocab 50,304, context 1,024, d_model 768, 12 layers, 12 heads, d_ff
2,048 = the SwiGLU width of GPT-2's 3,072-wide MLP, batch 16), gpt2-50257 (its unpadded vocabulary).

Reported per mode: median ms per step over the rounds, tokens/s, and MFU = model FLOPs per token x
tokens/s / peak, with ONE formula for every model: 6 N_matmul + 12 L d T per token (N_matmul: the
weights of every matmul, LM head included, embedding lookups not; 12 L d T: attention's QK^T and AV,
forward and backward, not halved for causality); peak = seqlab.runtime's dense bf16 peak of this GPU
(989 TFLOP/s on an H100/H200) or --peak-flops. Warm-up steps (compilation) are left out and reported.

``generate`` times greedy decoding of ``--new-tokens`` tokens after a 16-token prompt, the 17M model
(the cs336 shape, context 512 so that nothing slides) in bf16, batch 1 and 32 (prefill included):
seqlab eagerly (dynamic KV cache), seqlab with ``compile=True`` (static cache, one CUDA graph per token),
transformers' ``generate`` (its default dynamic cache) on a Llama holding seqlab's weights
(seqlab.interop.export), and with ``--hf-compile`` its static cache compiled. The share of tokens
on which seqlab and transformers agree is printed as a check that both run the same model.

Needs CUDA: without it the script exits 2 and says so. --json writes every number.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import itertools
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

TRAIN_MODES = ("trainer", "trainer-logits", "raw", "raw-logits", "raw-pad", "hf")
DEFAULT_TRAIN_MODES = "trainer,raw,hf,raw-eager,hf-eager"


@dataclass(frozen=True)
class Shape:
    vocab: int
    context: int
    d_model: int
    layers: int
    heads: int
    d_ff: int
    batch: int

    @property
    def tokens_per_step(self) -> int:
        return self.batch * self.context


SHAPES = {
    "cs336": Shape(10_000, 256, 512, 4, 16, 1344, 128),
    "gpt2": Shape(50_304, 1024, 768, 12, 12, 2048, 16),
    "gpt2-50257": Shape(50_257, 1024, 768, 12, 12, 2048, 16),
    "tiny": Shape(64, 16, 32, 2, 4, 48, 4),  # the tests' CPU size
}


def matmul_parameters(shape: Shape) -> int:
    """Weights of every matmul of the model: q, k, v, o and the three SwiGLU matrices per layer, and
    the LM head (embedding lookups and norms are not matmuls).

    >>> matmul_parameters(SHAPES["cs336"])   # 4 x (4 x 512^2 + 3 x 512 x 1344) + 10000 x 512
    17571840
    """
    d = shape.d_model
    return shape.layers * (4 * d * d + 3 * d * shape.d_ff) + shape.vocab * d


def flops_per_token(shape: Shape) -> float:
    """Training FLOPs per token: 6 N_matmul + 12 L d T (module docstring)."""
    return 6 * matmul_parameters(shape) + 12 * shape.layers * shape.d_model * shape.context


def mfu(step_seconds: float, shape: Shape, peak: float | None) -> float | None:
    """Model FLOPs utilisation of a step of ``step_seconds``; e.g. the issue's 20.1 ms at the cs336
    shape on a 989 TFLOP/s GPU is 0.184."""
    if not peak:
        return None
    return flops_per_token(shape) * shape.tokens_per_step / step_seconds / peak


# -- building each mode ---------------------------------------------------------------------------------


def _sibling(name: str):
    """benchmarks/<name>.py as a module (this script may run from anywhere)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def model_config(shape: Shape, context: int | None = None):
    from seqlab.model.config import ModelConfig

    return ModelConfig(vocab_size=shape.vocab, context_length=context or shape.context, d_model=shape.d_model,
                       num_layers=shape.layers, num_heads=shape.heads, d_ff=shape.d_ff)


def hf_llama(config, device, attn: str = "sdpa"):
    """transformers' LlamaForCausalLM with the shapes of the seqlab ModelConfig ``config``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from seqlab.interop.hf_config import to_llama_config

    values = to_llama_config(config, bos_token_id=None, eos_token_id=None)
    for key in ("architectures", "model_type", "torch_dtype", "dtype"):
        values.pop(key)
    llama_config = LlamaConfig(**values)
    llama_config._attn_implementation = attn
    return LlamaForCausalLM(llama_config).to(device)


@dataclass
class Stepper:
    step: callable
    info: dict
    close: callable = lambda: None


def split_mode(mode: str) -> tuple[str, bool]:
    """"raw-eager" -> ("raw", False); "hf" -> ("hf", True)."""
    base, eager = (mode[:-len("-eager")], True) if mode.endswith("-eager") else (mode, False)
    if base not in TRAIN_MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(TRAIN_MODES)}, each also with -eager")
    return base, not eager


def autocast(precision: str, device):
    import torch

    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16 if precision == "bf16" else torch.float16)


def build_stepper(mode: str, shape: Shape, device, *, precision: str = "bf16", compile_backend: str | None = None,
                  workdir: Path) -> Stepper:
    """One mode's training step on ``shape`` (module docstring); nothing in it waits for the GPU."""
    import torch

    base, compiled = split_mode(mode)
    torch.manual_seed(0)
    compile_kwargs = {"backend": compile_backend} if compile_backend else {}
    if base.startswith("trainer"):
        return _trainer_stepper(mode, shape, device, precision, compiled, fused="off" if base == "trainer-logits"
                                else "auto", workdir=workdir)
    config = model_config(shape)
    x = torch.randint(0, shape.vocab, (shape.batch, shape.context + 1), device=device)
    inputs, targets = x[:, :-1], x[:, 1:]
    if base == "hf":
        model = hf_llama(config, device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, fused=device.type == "cuda")

        def loss_fn(inputs, targets):
            with autocast(precision, device):
                logits = model(input_ids=inputs, use_cache=False).logits
            return torch.nn.functional.cross_entropy(logits.float().reshape(-1, shape.vocab), targets.reshape(-1))

        clip = lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        info = {"attn_implementation": model.config._attn_implementation}
    else:
        from seqlab.model import TransformerLM
        from seqlab.model.loss import cross_entropy, linear_cross_entropy
        from seqlab.training.clipping import clip_grad_norm
        from seqlab.training.optimizer import AdamW, weight_decay_groups

        model = TransformerLM.from_config(config, device=device)
        optimizer = AdamW(weight_decay_groups(model), lr=1e-3, weight_decay=0.1)
        pad = 128 if base == "raw-pad" else None

        def loss_fn(inputs, targets):
            with autocast(precision, device):
                if base == "raw-logits":
                    logits = model(inputs)
                else:
                    hidden = model(inputs, return_hidden=True)
                    return linear_cross_entropy(hidden, model.lm_head.weight, targets, pad_vocab_multiple=pad)
            return cross_entropy(logits.float(), targets)

        clip = lambda: clip_grad_norm(model.parameters(), 1.0)
        info = {"loss": "logits" if base == "raw-logits" else "fused", "pad_vocab_multiple": pad}
    if compiled:
        loss_fn = torch.compile(loss_fn, **compile_kwargs)

    def step():
        loss = loss_fn(inputs, targets)
        loss.backward()
        clip()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    info["parameters"] = sum(p.numel() for p in model.parameters())
    return Stepper(step, info)


def _trainer_stepper(mode: str, shape: Shape, device, precision: str, compiled: bool, *, fused: str,
                     workdir: Path) -> Stepper:
    """The Trainer after its setup; each call is one ``train_step`` of the engine (no evaluation or
    checkpoint falls inside the timed steps)."""
    from seqlab.lm.settings import TrainConfig
    from seqlab.lm.task import Trainer

    data = workdir / f"data-{shape.vocab}"
    if not (data / "meta.json").exists():
        _sibling("gpu_train").synthetic_data(data, vocab_size=shape.vocab,
                                             tokens=max(100_000, 40 * shape.tokens_per_step))
    config = TrainConfig(data_dir=str(data), out_dir=str(workdir / f"run-{mode}"), vocab_size=shape.vocab,
                         context_length=shape.context, d_model=shape.d_model, num_layers=shape.layers,
                         num_heads=shape.heads, d_ff=shape.d_ff, batch_size=shape.batch, max_steps=10**6,
                         warmup_steps=10, lr=1e-3, device=device.type, precision=precision, compile=compiled,
                         fused_loss=fused, eval_interval=10**9, checkpoint_interval=10**9, log_interval=10**9,
                         progress=False, overwrite=True)
    notes: list[str] = []
    trainer = Trainer(config, say=notes.append)
    trainer.prepare()
    counter = itertools.count()
    info = {"fused_loss": trainer.fused_loss, "compiled": trainer.compiled, "notes": notes,
            "parameters": trainer.raw_model_parameters}
    return Stepper(lambda: trainer.train_step(next(counter)), info, trainer.close)


# -- timing ------------------------------------------------------------------------------------------------


def synchronize(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def alternate_rounds(steppers: dict, rounds: int, steps: int, device, clock=time.perf_counter) -> dict[str, list]:
    """Seconds per step of each stepper in each round; round r runs the modes in an order rotated by r."""
    names = list(steppers)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            synchronize(device)
            start = clock()
            for _ in range(steps):
                steppers[name].step()
            synchronize(device)
            times[name].append((clock() - start) / steps)
    return times


def measure_train(shape_name: str, modes: list[str], device, *, rounds: int, steps: int, warmup: int,
                  precision: str = "bf16", peak: float | None = None, compile_backend: str | None = None,
                  say=print) -> dict:
    shape = SHAPES[shape_name]
    steppers, warmups = {}, {}
    with tempfile.TemporaryDirectory(prefix="seqlab_side_by_side_") as scratch:
        try:
            for mode in modes:
                start = time.perf_counter()
                stepper = build_stepper(mode, shape, device, precision=precision, compile_backend=compile_backend,
                                        workdir=Path(scratch))
                for _ in range(warmup):
                    stepper.step()
                synchronize(device)
                warmups[mode] = time.perf_counter() - start
                say(f"  {shape_name} {mode}: built and warmed up ({warmup} steps) in {warmups[mode]:.1f} s")
                steppers[mode] = stepper
            times = alternate_rounds(steppers, rounds, steps, device)
        finally:
            for stepper in steppers.values():
                stepper.close()
    results = {}
    for mode in modes:
        median = statistics.median(times[mode])
        results[mode] = {"ms": median * 1e3, "ms_rounds": [t * 1e3 for t in times[mode]],
                         "tokens_per_s": shape.tokens_per_step / median, "mfu": mfu(median, shape, peak),
                         "warmup_s": warmups[mode], **steppers[mode].info}
    for mode, peer in (("trainer", "hf"), ("raw", "hf"), ("raw-eager", "hf-eager"), ("trainer-eager", "hf-eager")):
        if mode in results and peer in results:
            results[mode][f"speed_vs_{peer}"] = results[peer]["ms"] / results[mode]["ms"]
    return {"shape": asdict(shape), "flops_per_token": flops_per_token(shape), "modes": results}


def print_train(name: str, report: dict) -> None:
    print(f"\n{name}: {report['shape']}, {report['flops_per_token'] / 1e6:.1f} MFLOP/token")
    print(f"{'mode':16s} {'ms':>9s} {'tokens/s':>12s} {'MFU':>7s} {'vs HF':>7s} {'warm-up s':>10s}")
    for mode, r in report["modes"].items():
        ratio = r.get("speed_vs_hf", r.get("speed_vs_hf-eager"))
        print(f"{mode:16s} {r['ms']:9.2f} {r['tokens_per_s']:12,.0f} "
              f"{'-' if r['mfu'] is None else format(r['mfu'], '7.1%'):>7s} "
              f"{'-' if ratio is None else format(ratio, '.2f') + 'x':>7s} {r['warmup_s']:10.1f}")


# -- generation ---------------------------------------------------------------------------------------------


def generation_models(shape: Shape, device, dtype, context: int):
    """seqlab's TransformerLM and a transformers Llama holding the same weights."""
    import torch

    from seqlab.interop.export import llama_state_dict
    from seqlab.model import TransformerLM

    torch.manual_seed(0)
    config = model_config(shape, context)
    ours = TransformerLM.from_config(config, device=device).to(dtype).eval()
    theirs = hf_llama(config, device).to(dtype).eval()
    state = {k: v.detach().clone() for k, v in ours.state_dict().items()}
    theirs.load_state_dict(llama_state_dict(state, config, "seqlab model"))
    theirs.generation_config.eos_token_id = None
    theirs.generation_config.pad_token_id = 0
    return ours, theirs


def measure_generate(batches: list[int], device, *, new_tokens: int = 256, prompt_tokens: int = 16,
                     rounds: int = 3, dtype_name: str = "bf16", shape_name: str = "cs336", context: int = 512,
                     compile_setting=True, hf_compile: bool = False, say=print) -> dict:
    import torch

    from seqlab.inference.generate import generate

    shape = SHAPES[shape_name]
    dtype = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype_name]
    ours, theirs = generation_models(shape, device, dtype, context)
    results: dict = {"shape": asdict(replace(shape, context=context)), "dtype": dtype_name, "new_tokens": new_tokens,
                     "prompt_tokens": prompt_tokens, "batches": {}}
    for batch in batches:
        prompts = torch.randint(0, shape.vocab, (batch, prompt_tokens), generator=torch.Generator().manual_seed(batch))
        ids = prompts.to(device)

        def hf(static: bool):
            # no eos: every row runs the full length; a static cache makes transformers compile its step
            kwargs = dict(cache_implementation="static") if static else {}
            with torch.no_grad():
                out = theirs.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                                      do_sample=False, **kwargs)
            return out[:, prompt_tokens:].tolist()

        runs = {
            "seqlab": lambda: generate(ours, prompts.tolist(), new_tokens, temperature=0),
            "seqlab-compiled": lambda: generate(ours, prompts.tolist(), new_tokens, temperature=0,
                                                compile=compile_setting),
            "hf": lambda: hf(False),
        }
        if hf_compile:
            runs["hf-static-compiled"] = lambda: hf(True)
        outputs, warmups = {}, {}
        for name, run in runs.items():  # warm-up: compilation, CUDA graph capture
            start = time.perf_counter()
            outputs[name] = run()
            synchronize(device)
            warmups[name] = time.perf_counter() - start
            say(f"  generate batch {batch} {name}: warm-up {warmups[name]:.1f} s")
        times = alternate_rounds({name: Stepper(run, {}) for name, run in runs.items()}, rounds, 1, device)
        row = {}
        for name in runs:
            seconds = statistics.median(times[name])
            row[name] = {"tokens_per_s": batch * new_tokens / seconds, "ms_per_token": seconds / new_tokens * 1e3,
                         "warmup_s": warmups[name]}
        for name in ("seqlab", "seqlab-compiled"):
            row[name]["speed_vs_hf"] = row[name]["tokens_per_s"] / row["hf"]["tokens_per_s"]
        reference = outputs["seqlab"]
        for name, out in outputs.items():
            same = sum(a == b for r1, r2 in zip(out, reference) for a, b in zip(r1, r2))
            row[name]["tokens_equal_to_seqlab_eager"] = same / (batch * new_tokens)
        results["batches"][batch] = row
    return results


def print_generate(report: dict) -> None:
    print(f"\ngeneration: {report['new_tokens']} new tokens, greedy, {report['dtype']}, {report['shape']}")
    print(f"{'batch':>5s} {'mode':20s} {'tokens/s':>10s} {'ms/token':>9s} {'vs HF':>7s} {'same tokens':>12s}")
    for batch, row in report["batches"].items():
        for name, r in row.items():
            ratio = r.get("speed_vs_hf")
            print(f"{batch:>5} {name:20s} {r['tokens_per_s']:10,.0f} {r['ms_per_token']:9.3f} "
                  f"{'-' if ratio is None else format(ratio, '.2f') + 'x':>7s} "
                  f"{r['tokens_equal_to_seqlab_eager']:12.1%}")


# -- command line -------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", default="train", choices=("train", "generate"))
    parser.add_argument("--shapes", default="cs336,gpt2", help=f"comma list from {', '.join(SHAPES)}")
    parser.add_argument("--modes", default=DEFAULT_TRAIN_MODES, help="comma list (module docstring)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10, help="steps per mode per round")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per mode (compilation)")
    parser.add_argument("--precision", default="bf16", choices=("bf16", "fp16", "fp32"))
    parser.add_argument("--peak-flops", type=float, default=None, help="override the GPU's peak FLOP/s")
    parser.add_argument("--batches", default="1,32", help="generate: comma list of batch sizes")
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--hf-compile", action="store_true", help="generate: also transformers' static cache, compiled")
    parser.add_argument("--json", default=None, help="write every number to this JSON file")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("benchmarks/gpu_side_by_side.py needs a CUDA GPU and none is available here (torch "
              f"{torch.__version__}, cuda build: {torch.version.cuda}). Run it on a GPU machine.", file=sys.stderr)
        return 2
    from seqlab.runtime import gpu_peak_bf16_flops

    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device("cuda")
    name = torch.cuda.get_device_name(device)
    peak = args.peak_flops or (gpu_peak_bf16_flops(name) if args.precision != "fp32" else None)
    report: dict = {"gpu": name, "torch": torch.__version__, "peak_flops": peak, "what": args.what}
    try:
        import transformers

        report["transformers"] = transformers.__version__
    except ImportError:
        print("transformers is not installed: the HF modes need it", file=sys.stderr)
        return 2
    print(f"{name}, torch {torch.__version__}, transformers {report['transformers']}, peak "
          f"{peak / 1e12 if peak else float('nan'):.0f} TFLOP/s", flush=True)
    if args.what == "train":
        modes = [m for m in args.modes.split(",") if m]
        for mode in modes:
            split_mode(mode)  # refuse an unknown mode before any work
        report["train"] = {}
        for shape in [s for s in args.shapes.split(",") if s]:
            report["train"][shape] = measure_train(shape, modes, device, rounds=args.rounds, steps=args.steps,
                                                   warmup=args.warmup, precision=args.precision, peak=peak)
            print_train(shape, report["train"][shape])
            _write(args.json, report)
    else:
        report["generate"] = measure_generate([int(b) for b in args.batches.split(",") if b], device,
                                              new_tokens=args.new_tokens, rounds=args.rounds,
                                              hf_compile=args.hf_compile)
        print_generate(report["generate"])
    _write(args.json, report)
    return 0


def _write(path: str | None, report: dict) -> None:
    if path:
        from seqlab.atomic import atomic_write_text

        atomic_write_text(path, json.dumps(report, indent=1, default=str) + "\n")


if __name__ == "__main__":
    sys.exit(main())
