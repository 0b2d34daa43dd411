"""seqlab.interpret: lens, attribution, patching, knockout and head scores, batched vs a naive loop,
and batched patching against TransformerLens.

    python benchmarks/interpret.py [--model demo|cs336-17m|both] [--repeats 3] [--naive-repeats 1] [--threads 2]
    python benchmarks/interpret.py --explorer-run demo_out/run [--repeats 3]   # the explorer's requests only
    python benchmarks/interpret.py --work [--model demo|cs336-17m|both] [--tokens 64,128]   # work, no clock
    PYTHONPATH=. /work/venvs/tl/bin/python benchmarks/interpret.py --against transformerlens \
        [--model demo|cs336-17m|both] [--tokens 64,128] [--repeats 3] [--tl-repeats 1] [--threads 2]

--against transformerlens (in an environment with transformer-lens, which seqlab's tests do not
need: python -m venv /work/venvs/tl; /work/venvs/tl/bin/pip install torch==2.13.0 transformer-lens):
the model is saved as a run and exported with `seqlab export --to hf`; TransformerLens 4 boots that
folder with TransformerBridge.boot_transformers in compatibility mode without weight processing
(the same weights, unfolded). Timed: seqlab's patch (resid_pre, every layer x position) against
transformer_lens.patching.get_act_patch_resid_pre (one hooked forward per patch) on the same
clean/corrupted prompts, metric and logit difference; the largest difference between the two
recovery maps is printed beside the times (it must be float32 rounding).

Models (random weights of the shape; the timings do not depend on the values):
  demo       seqlab demo's model: vocab 1,024, context 128, d_model 128, 4 layers, 4 heads
  cs336-17m  the CS336 TinyStories shape (accounting preset "tinystories"): vocab 10,000, context 256,
             d_model 512, 4 layers, 16 heads, d_ff 1,344

Times per request (median of --repeats): logit_lens, direct_logit_attribution and head_scores
(8 x 32 repeated tokens) on a 64-token prompt; patch (resid_pre, every layer x position) of a
128-token prompt; knockout at the last position of a 128-token prompt. Beside patching and
knockout, the naive loop of the tests: one forward of the model per patch (a forward pre-hook
swapping the clean residual in) or per cut edge (a forward hook recomputing that layer's attention
with torch's SDPA and the edge masked).

--work: no clock, the work of patch (resid_pre and head_out) and knockout on the models above: aten
operations (benchmarks/instruments/op_count.py), matrix-product FLOPs (torch.utils.flop_counter) and
elements written by copies; two versions of seqlab doing the same work run at the same speed, which a
loaded machine's clock cannot show.

--explorer-run DIR (a `seqlab demo` run): the explorer's five POST /api/interpret/* requests on a
64-token story prompt (and its corrupted copy, one name swapped), each timed from the request's
JSON object to the JSON text of the answer (validation, tokenizing, the library, serialising),
without HTTP; the run is loaded once before timing, as the server keeps it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seqlab.interpret import (
    direct_logit_attribution,
    head_scores,
    knockout,
    logit_lens,
    patch,
)
from seqlab.model import TransformerLM

SHAPES = {
    "tiny": dict(vocab_size=300, context_length=32, d_model=32, num_layers=2, num_heads=2),  # smoke tests only
    "demo": dict(vocab_size=1024, context_length=128, d_model=128, num_layers=4, num_heads=4),
    "cs336-17m": dict(vocab_size=10_000, context_length=256, d_model=512, num_layers=4, num_heads=16, d_ff=1344),
}


def timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def naive_patch(model, clean, corrupt, target, baseline):
    """One forward per (layer, position): the layer's input at that position swapped for the clean one."""
    def last_logits(ids, hook=None, module=None):
        handle = module.register_forward_pre_hook(hook) if hook else None
        try:
            with torch.no_grad():
                return model(ids[None])[0, -1]
        finally:
            if handle:
                handle.remove()
    metric = lambda logits: float(logits[target] - logits[baseline])
    m_clean, m_corrupt = metric(last_logits(clean)), metric(last_logits(corrupt))
    out = torch.zeros(len(model.layers), len(clean))
    for l, layer in enumerate(model.layers):
        seen = []
        last_logits(clean, lambda m, a: seen.append(a[0]), layer)
        for p in range(len(clean)):
            def swap(m, a, p=p):
                x = a[0].clone()
                x[0, p] = seen[0][0, p]
                return (x,) + a[1:]
            out[l, p] = (metric(last_logits(corrupt, swap, layer)) - m_corrupt) / (m_clean - m_corrupt)
    return out


def bench(name: str, repeats: int, naive_repeats: int) -> None:
    from tests.interpret.test_patching import naive_knockout  # the tests' naive loop (needs pytest)

    torch.manual_seed(0)
    model = TransformerLM(**SHAPES[name]).eval()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(1)
    short = torch.randint(0, vocab, (64,), generator=gen)
    long = torch.randint(0, vocab, (128,), generator=gen)
    corrupt = long.clone()
    corrupt[40] = (corrupt[40] + 1) % vocab
    with torch.no_grad():
        moved = model(long[None])[0, -1] - model(corrupt[None])[0, -1]
    target, baseline = int(moved.argmax()), int(moved.argmin())
    rows = [
        ("logit_lens, 64 tokens", timed(lambda: logit_lens(model, short), repeats), None),
        ("direct_logit_attribution, 64 tokens",
         timed(lambda: direct_logit_attribution(model, short, target=1, baseline=2), repeats), None),
        ("head_scores, 8 x 2 x 32 tokens", timed(lambda: head_scores(model), repeats), None),
    ]
    batched = timed(lambda: patch(model, long, corrupt, target=target, baseline=baseline), repeats)
    naive = timed(lambda: naive_patch(model, long, corrupt, target, baseline), naive_repeats)
    rows.append((f"patch resid_pre, 128 tokens ({len(model.layers)} x 128 patches)", batched, naive))
    with torch.no_grad():
        top = int(model(long[None])[0, -1].argmax())
    batched = timed(lambda: knockout(model, long, target=top), repeats)  # .drops: (L, seq)
    naive = timed(lambda: naive_knockout(model, long, 127, top), naive_repeats)
    rows.append((f"knockout, 128 tokens ({len(model.layers)} x 128 edges)", batched, naive))
    print(f"\n{name}: {model.num_parameters():,} parameters, {torch.get_num_threads()} threads")
    print("| request | batched | naive loop | naive / batched |\n| --- | ---: | ---: | ---: |")
    for label, ours, loop in rows:
        ratio = f"{loop / ours:.1f}x" if loop else ""
        print(f"| {label} | {ours * 1000:.0f} ms | {'' if loop is None else f'{loop * 1000:.0f} ms'} | {ratio} |")


def bench_explorer(run: str, repeats: int) -> None:
    import json

    from seqlab.explorer.interpret_api import (
        INTERPRET_ENDPOINTS,
        run_interpret_endpoint,
    )
    from seqlab.explorer.runs import RunRegistry

    runs = RunRegistry([run])
    lm = runs.lm(None)
    story = ("There was a little girl named Emma. Emma had a shiny stone that she loved very much. One cold "
             "morning, Emma wanted to play with Joe. But then Emma could not find her shiny stone. Emma felt sad. "
             "\"I lost my shiny stone!\" she said. Joe came to help. \"Do not be sad, Emma. I will help you,\" said")
    clean = lm.tokenizer.decode(lm.tokenizer.encode(story)[:64])
    corrupt = clean.replace("Emma", "Lily")
    lengths = len(lm.tokenizer.encode(clean)), len(lm.tokenizer.encode(corrupt))
    if lengths != (64, 64):
        raise SystemExit(f"the prompts are {lengths} tokens, not 64: this run's tokenizer splits the story differently")
    bodies = {"interpret/lens": {"text": clean}, "interpret/attribute": {"text": clean},
              "interpret/patch": {"clean": clean, "corrupt": corrupt}, "interpret/knockout": {"text": clean},
              "interpret/heads": {}}
    assert set(bodies) == set(INTERPRET_ENDPOINTS)
    goals = {"interpret/patch": 1.0, "interpret/knockout": 1.0}
    config = lm.model.config
    print(f"\nexplorer requests on {run}: {lm.model.num_parameters():,} parameters ({config.num_layers} layers, "
          f"{config.num_heads} heads, d_model {config.d_model}), 64-token prompt, {torch.get_num_threads()} threads")
    print("| request | time | goal |\n| --- | ---: | ---: |")
    for name, body in bodies.items():
        request = lambda name=name, body=body: json.dumps(run_interpret_endpoint(name, dict(body), runs), allow_nan=False)
        request()  # warm: first-call allocations
        seconds = timed(request, repeats)
        print(f"| POST /api/{name} | {seconds * 1000:.0f} ms | {goals.get(name, 0.3) * 1000:.0f} ms |")


def bench_work(name: str, lengths: list[int]) -> None:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    from benchmarks.instruments.op_count import OpCounter, op_name

    class Copies(TorchDispatchMode):
        """Elements written by operations that copy: clone, cat and copy_ (their output), index_put_
        (the values it writes)."""

        elements = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            name = op_name(func)
            if name in ("aten.clone", "aten.cat", "aten.copy_"):
                self.elements += out.numel()
            elif name in ("aten.index_put_", "aten.index_put"):
                self.elements += args[2].numel()
            return out

    torch.manual_seed(0)
    model = TransformerLM(**SHAPES[name]).eval()
    vocab = model.config.vocab_size
    print(f"\n{name}: {model.num_parameters():,} parameters")
    print("| request | aten operations | matmul GFLOP | elements copied (M) |\n| --- | ---: | ---: | ---: |")
    for n in lengths:
        clean = torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(n))
        corrupt = clean.clone()
        corrupt[n // 3] = (corrupt[n // 3] + 1) % vocab
        for label, run in ((f"patch resid_pre, {n} tokens", lambda: patch(model, clean, corrupt)),
                           (f"patch head_out, {n} tokens", lambda: patch(model, clean, corrupt, where="head_out")),
                           (f"knockout, {n} tokens", lambda: knockout(model, clean))):
            with OpCounter() as ops, FlopCounterMode(display=False) as flops, Copies() as copies:
                run()
            print(f"| {label} | {ops.total:,} | {flops.get_total_flops() / 1e9:,.3f} | {copies.elements / 1e6:,.2f} |")


def synthetic_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer of exactly ``vocab_size`` ids (merges of byte pairs): what the
    export needs beside random weights (the benchmark feeds ids, not text)."""
    from seqlab.tokenizer import Tokenizer

    vocab = {i: bytes([i]) for i in range(256)}
    merges = []
    for j in range(vocab_size - 256):
        a, b = bytes([97 + j % 26]), bytes([97 + (j // 26) % 26])
        if j >= 26 * 26:
            a = bytes([j % 256])
            b = bytes([(j // 256) % 256])
        merges.append((a, b))
        vocab[256 + j] = a + b
    return Tokenizer(vocab, merges)


def bench_transformerlens(name: str, lengths: list[int], repeats: int, tl_repeats: int) -> None:
    import tempfile

    from transformer_lens import patching
    from transformer_lens.model_bridge import TransformerBridge

    from seqlab.lm import load_model
    from seqlab.interop.export import export_hf
    from seqlab.runs import save_checkpoint

    torch.manual_seed(0)
    shape = dict(SHAPES[name], context_length=max(SHAPES[name]["context_length"], max(lengths)))
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        synthetic_tokenizer(shape["vocab_size"]).save(run / "tokenizer")
        save_checkpoint(TransformerLM(**shape), None, 1, run / "checkpoints" / "latest.pt")
        export_hf(run, Path(tmp) / "hf")
        model = load_model(run=run).model
        bridge = TransformerBridge.boot_transformers(str(Path(tmp) / "hf"), device="cpu")
        bridge.enable_compatibility_mode(no_processing=True)
    vocab = shape["vocab_size"]
    print(f"\n{name}: {model.num_parameters():,} parameters, {torch.get_num_threads()} threads; "
          "patch resid_pre at every layer x position")
    print("| tokens | patches | seqlab (batched) | TransformerLens get_act_patch_resid_pre | TL / seqlab | max difference |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in lengths:
        gen = torch.Generator().manual_seed(n)
        clean = torch.randint(0, vocab, (n,), generator=gen)
        corrupt = clean.clone()
        corrupt[n // 3] = (corrupt[n // 3] + 1) % vocab
        with torch.no_grad():
            moved = model(clean[None])[0, -1] - model(corrupt[None])[0, -1]
        target, baseline = int(moved.argmax()), int(moved.argmin())
        ours = patch(model, clean, corrupt, target=target, baseline=baseline)  # warm
        seqlab_time = timed(lambda: patch(model, clean, corrupt, target=target, baseline=baseline), repeats)

        def tl_patch():
            with torch.no_grad():
                clean_logits, clean_cache = bridge.run_with_cache(clean[None])
                corrupt_logits = bridge(corrupt[None])
            diff = lambda logits: logits[0, -1, target] - logits[0, -1, baseline]
            m_clean, m_corrupt = diff(clean_logits), diff(corrupt_logits)
            metric = lambda logits: (diff(logits) - m_corrupt) / (m_clean - m_corrupt)
            with torch.no_grad():
                return patching.get_act_patch_resid_pre(bridge, corrupt[None], clean_cache, metric)

        theirs = tl_patch()
        tl_time = timed(tl_patch, tl_repeats)
        difference = float((ours.recovery - theirs.to(ours.recovery.dtype)).abs().max())
        print(f"| {n} | {len(model.layers) * n} | {seqlab_time * 1000:,.0f} ms | {tl_time * 1000:,.0f} ms | "
              f"{tl_time / seqlab_time:.1f}x | {difference:.1e} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("tiny", "demo", "cs336-17m", "both"), default="both",
                        help="both: demo and cs336-17m; tiny: a smoke test of the script")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--naive-repeats", type=int, default=1, help="repeats of the (slow) naive loops (1)")
    parser.add_argument("--explorer-run", metavar="DIR", help="time the explorer's /api/interpret/* requests on "
                        "this run (a `seqlab demo` run) instead of the library on random models")
    parser.add_argument("--against", choices=("naive", "transformerlens"), default="naive",
                        help="compare with the naive loop of the tests (default) or with TransformerLens")
    parser.add_argument("--tokens", default="64,128", help="--against transformerlens: prompt lengths (64,128)")
    parser.add_argument("--tl-repeats", type=int, default=1, help="repeats of TransformerLens's (slow) patching (1)")
    parser.add_argument("--work", action="store_true", help="count the work of patch and knockout instead of timing")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.work:
        for name in (("demo", "cs336-17m") if args.model == "both" else (args.model,)):
            bench_work(name, [int(n) for n in args.tokens.split(",")])
        return 0
    if args.explorer_run:
        bench_explorer(args.explorer_run, args.repeats)
        return 0
    if args.against == "transformerlens":
        for name in (("demo", "cs336-17m") if args.model == "both" else (args.model,)):
            bench_transformerlens(name, [int(n) for n in args.tokens.split(",")], args.repeats, args.tl_repeats)
        return 0
    for name in (("demo", "cs336-17m") if args.model == "both" else (args.model,)):
        bench(name, args.repeats, args.naive_repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
