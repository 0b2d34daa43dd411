"""Tokens/s and peak memory of one full training step (forward, backward, AdamW) on CPU.

Compares, in one run, seqlab's TransformerLM (eager and torch.compile) with Hugging Face
LlamaForCausalLM of identical shapes (no biases, untied embeddings, RoPE theta 10000, RMSNorm eps
1e-5, SiLU-gated MLP, its default attention implementation) trained with torch.optim.AdamW.

Mode ``fused``: seqlab eager with the LM head fused into the loss (``linear_cross_entropy``, what the
training engine's ``fused_loss="on"`` computes; ``auto`` keeps it off on a CPU).

Speed: all modes live in one process and run in rounds: each round times one step of every mode,
back to back, in an order that rotates from round to round, so background load hits every mode
alike. "paired" is the median over rounds of (peer step time / this mode's step time); the spread
of those round ratios (quartiles) and the rounds this mode won say whether the answer is a
property of the code or of the load (a quiet machine gives a narrow spread; a wide one, or a
median whose quartiles straddle 1.00, is not a result). ``--clock cpu`` times process CPU time,
which other jobs barely move with one thread. Peak memory: each mode runs a few steps in a fresh
subprocess, sampling RSS. Warm-up steps (where torch.compile compiles) are excluded from both.

    python benchmarks/train_step.py                      # assignment TinyStories shapes
    python benchmarks/train_step.py --steps 3 --memory-steps 0 --modes eager,hf
    python benchmarks/train_step.py --threads 2 --steps 30 --memory-steps 0 --modes eager,hf   # eager vs HF
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

from seqlab.model.config import ATTENTIONS

MODES = ("eager", "compile", "hf", "fused", "eager-bf16", "compile-bf16", "hf-bf16", "fused-bf16")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--context-length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--num-heads", type=int, default=16)
    parser.add_argument("--num-kv-heads", type=int, default=None,
                        help="key/value heads of grouped-query attention, both models (default: num_heads)")
    parser.add_argument("--d-ff", type=int, default=1344)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (compile happens here)")
    parser.add_argument("--steps", type=int, default=6, help="rounds: timed steps per mode (one of each mode a "
                        "round, in rotating order)")
    parser.add_argument("--clock", default="wall", choices=("wall", "cpu"),
                        help="wall clock, or this process's CPU time (robust to other jobs with --threads 1)")
    parser.add_argument("--memory-steps", type=int, default=2,
                        help="steps per mode in a separate process for peak memory (0 skips)")
    parser.add_argument("--modes", default="eager,hf,compile", help=f"comma list from {MODES}")
    parser.add_argument("--peer", default=None, help="mode the ratios compare against (default: hf, or hf-bf16 "
                        "when only bf16 modes run)")
    parser.add_argument("--attention", default="auto", choices=ATTENTIONS,
                        help="seqlab's attention backend (auto: chunked in eager mode on CPU, reference under compile)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


class PeakRSS:
    """Samples this process's resident set size every few ms in a background thread."""

    def __init__(self, interval_s: float = 0.002):
        import psutil

        self.process = psutil.Process()
        self.interval_s = interval_s
        self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            time.sleep(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss)


def build(mode: str, args):
    """Model, optimizer and loss function of one mode; "-bf16" runs forward+loss under
    torch.autocast("cpu", bfloat16) (weights, gradients and AdamW state stay float32)."""
    import torch

    base, _, precision = mode.partition("-")
    model, optimizer, loss_fn, info = _build_fp32(base, args)
    if precision != "bf16":
        return model, optimizer, loss_fn, info

    def autocast_loss(x, y):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return loss_fn(x, y)

    return model, optimizer, autocast_loss, info


def _build_fp32(mode: str, args):
    import torch

    if mode == "hf":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=args.vocab_size, hidden_size=args.d_model, intermediate_size=args.d_ff,
            num_hidden_layers=args.num_layers, num_attention_heads=args.num_heads,
            num_key_value_heads=args.num_kv_heads or args.num_heads, max_position_embeddings=args.context_length,
            rms_norm_eps=1e-5, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            hidden_act="silu", attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
            attention_dropout=0.0, use_cache=False,
        )
        model = LlamaForCausalLM(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

        def loss_fn(x, y):
            logits = model(input_ids=x, use_cache=False).logits
            return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

        info = {"attn_implementation": model.config._attn_implementation}
        return model, optimizer, loss_fn, info

    from seqlab.model import TransformerLM
    from seqlab.training import AdamW, cross_entropy

    model = TransformerLM(args.vocab_size, args.context_length, args.d_model, args.num_layers,
                          args.num_heads, args.d_ff, 10000.0, attention=args.attention,
                          num_kv_heads=args.num_kv_heads)
    optimizer = AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def loss_fn(x, y):
        return cross_entropy(model(x), y)

    if mode == "fused":  # the LM head and the loss fused (what the engine's fused_loss="on" computes)
        from seqlab.model.loss import linear_cross_entropy

        def loss_fn(x, y):
            return linear_cross_entropy(model(x, return_hidden=True), model.lm_head.weight, y)

    if mode == "compile":
        loss_fn = torch.compile(loss_fn)
    return model, optimizer, loss_fn, {}


def make_stepper(mode: str, args):
    """Build one mode's model/optimizer on the fixed batch; return (step function, info)."""
    import torch

    torch.manual_seed(0)
    model, optimizer, loss_fn, info = build(mode, args)
    model.train()
    x = torch.randint(0, args.vocab_size, (args.batch_size, args.context_length))
    y = torch.randint(0, args.vocab_size, (args.batch_size, args.context_length))

    def step():
        loss = loss_fn(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    info["params"] = sum(p.numel() for p in model.parameters())
    return step, info


def measure_memory(mode: str, args) -> dict:
    """Child process: warm up, then peak RSS while running `--memory-steps` steps."""
    import psutil
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    step, info = make_stepper(mode, args)
    for _ in range(max(1, args.warmup)):
        step()
    rss_before = psutil.Process().memory_info().rss
    with PeakRSS() as peak:
        for _ in range(args.memory_steps):
            step()
    return {"mode": mode, "peak_rss_mb": peak.peak / 2**20,
            "step_peak_above_start_mb": (peak.peak - rss_before) / 2**20, **info}


def measure_speed(modes: list[str], args) -> dict[str, list[float]]:
    """All modes in this process; timed steps interleaved (rotating order) so load hits all alike."""
    import torch

    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    if args.threads:
        torch.set_num_threads(args.threads)
    steppers = {}
    for mode in modes:
        step, _ = make_stepper(mode, args)
        t0 = time.perf_counter()
        for _ in range(args.warmup):
            step()
        print(f"warm-up {mode:12s} {args.warmup} steps in {time.perf_counter() - t0:.1f} s", flush=True)
        steppers[mode] = step
    times: dict[str, list[float]] = {m: [] for m in modes}
    for i in range(args.steps):
        order = modes[i % len(modes):] + modes[:i % len(modes)]
        for mode in order:
            t = clock()
            steppers[mode]()
            times[mode].append(clock() - t)
        print(f"step {i + 1}: " + "  ".join(f"{m} {times[m][-1]:.2f}s" for m in modes), flush=True)
    return times


def round_spread(ratios: list[float]) -> tuple[float, float]:
    """(lower, upper) quartile of the per-round ratios (both the median with fewer than 4 rounds)."""
    if len(ratios) < 4:
        middle = statistics.median(ratios)
        return middle, middle
    low, _, high = statistics.quantiles(ratios, n=4)
    return low, high


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(measure_memory(args.child, args)))
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown mode(s) {unknown}; choose from {MODES}")
    tokens = args.batch_size * args.context_length
    print(f"shapes: vocab {args.vocab_size}, context {args.context_length}, d_model {args.d_model}, "
          f"layers {args.num_layers}, heads {args.num_heads} ({args.num_kv_heads or args.num_heads} kv), "
          f"d_ff {args.d_ff}, batch {args.batch_size} "
          f"({tokens} tokens/step); {args.warmup} warm-up steps excluded", flush=True)

    memory = {}
    if args.memory_steps > 0:
        passthrough = list(argv if argv is not None else sys.argv[1:])
        for mode in modes:
            command = [sys.executable, os.path.abspath(__file__), *passthrough, "--child", mode]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                raise SystemExit(f"memory run of mode {mode} failed (exit {done.returncode})")
            memory[mode] = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"memory  {mode:12s} peak RSS {memory[mode]['peak_rss_mb']:.0f} MB "
                  f"(+{memory[mode]['step_peak_above_start_mb']:.0f} MB above the pre-step RSS)", flush=True)

    load_before = os.getloadavg()[0]
    times = measure_speed(modes, args)
    load_after = os.getloadavg()[0]
    summary = {}
    for mode in modes:
        total = sum(times[mode])
        summary[mode] = {"tokens_per_s": tokens * len(times[mode]) / total,
                         "median_tokens_per_s": tokens / statistics.median(times[mode]),
                         "step_s": times[mode], **memory.get(mode, {})}
    peer = args.peer or ("hf" if "hf" in summary else "hf-bf16")
    if peer in summary:
        print(f"ratios against {peer}")
        for mode in modes:
            # paired per-step ratios: each compares steps run back to back under the same load
            paired = [h / t for h, t in zip(times[peer], times[mode])]
            summary[mode]["ratio_vs_hf"] = summary[mode]["tokens_per_s"] / summary[peer]["tokens_per_s"]
            summary[mode]["median_paired_ratio_vs_hf"] = statistics.median(paired)
            summary[mode]["paired_quartiles"] = round_spread(paired)
            summary[mode]["rounds_won"] = sum(r > 1.0 for r in paired)
    print(f"\n{'mode':12s} {'tok/s':>7s} {'median':>7s} {'vs peer':>7s} {'paired':>7s} {'peak RSS MB':>12s} {'+MB step':>9s}")
    for mode, s in summary.items():
        ratio = f"{s['ratio_vs_hf']:.2f}x" if "ratio_vs_hf" in s else "-"
        paired = f"{s['median_paired_ratio_vs_hf']:.2f}x" if "ratio_vs_hf" in s else "-"
        mem = f"{s['peak_rss_mb']:12.0f} {s['step_peak_above_start_mb']:9.0f}" if "peak_rss_mb" in s else ""
        print(f"{mode:12s} {s['tokens_per_s']:7.0f} {s['median_tokens_per_s']:7.0f} {ratio:>7s} {paired:>7s} {mem}")
    if peer in summary:
        print(f"\nround ratios against {peer} ({len(times[peer])} rounds, {args.clock} clock, load average "
              f"{load_before:.1f} before, {load_after:.1f} after):")
        for mode in modes:
            if mode != peer:
                low, high = summary[mode]["paired_quartiles"]
                print(f"  {mode:12s} median {summary[mode]['median_paired_ratio_vs_hf']:.3f}x, quartiles "
                      f"{low:.3f}x-{high:.3f}x, faster in {summary[mode]['rounds_won']} of {len(times[mode])} "
                      f"rounds{'' if low > 1.0 or high < 1.0 else ' (the quartiles straddle 1.00: not decided)'}")
    if args.json:
        with open(args.json + ".tmp", "w") as handle:
            json.dump({"args": vars(args), "summary": summary}, handle, indent=1)
        os.replace(args.json + ".tmp", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
