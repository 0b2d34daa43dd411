"""Tokens/s and peak memory of one full training step (forward, backward, AdamW) on CPU.

Compares, in one run, seqlab's TransformerLM (eager and torch.compile) with Hugging Face
LlamaForCausalLM of identical shapes (no biases, untied embeddings, RoPE theta 10000, RMSNorm eps
1e-5, SiLU-gated MLP, its default attention implementation) trained with torch.optim.AdamW.

Each measurement runs in a fresh subprocess so peak memory is per mode; modes are interleaved over
`--rounds` rounds so background load hits all of them alike. Warm-up steps are excluded.

    python benchmarks/train_step.py                      # assignment TinyStories shapes
    python benchmarks/train_step.py --steps 3 --rounds 1 --modes eager,hf
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

MODES = ("eager", "compile", "hf")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab-size", type=int, default=10_000)
    parser.add_argument("--context-length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--num-layers", type=int, default=4)
    parser.add_argument("--num-heads", type=int, default=16)
    parser.add_argument("--d-ff", type=int, default=1344)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first (compile happens here)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per measurement")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved repetitions of every mode")
    parser.add_argument("--modes", default="eager,hf,compile", help=f"comma list from {MODES}")
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
    import torch

    if mode == "hf":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(
            vocab_size=args.vocab_size, hidden_size=args.d_model, intermediate_size=args.d_ff,
            num_hidden_layers=args.num_layers, num_attention_heads=args.num_heads,
            num_key_value_heads=args.num_heads, max_position_embeddings=args.context_length,
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
                          args.num_heads, args.d_ff, 10000.0)
    optimizer = AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def loss_fn(x, y):
        return cross_entropy(model(x), y)

    if mode == "compile":
        loss_fn = torch.compile(loss_fn)
    return model, optimizer, loss_fn, {}


def run_child(mode: str, args) -> dict:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
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
        return float(loss)

    t0 = time.perf_counter()
    for _ in range(args.warmup):
        step()
    warmup_s = time.perf_counter() - t0
    import psutil

    rss_before = psutil.Process().memory_info().rss
    times = []
    with PeakRSS() as peak:
        for _ in range(args.steps):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
    tokens = args.batch_size * args.context_length
    return {
        "mode": mode,
        "params": sum(p.numel() for p in model.parameters()),
        "threads": torch.get_num_threads(),
        "warmup_s": warmup_s,
        "step_s": times,
        "tokens_per_s": tokens * len(times) / sum(times),
        "median_tokens_per_s": tokens / statistics.median(times),
        "peak_rss_mb": peak.peak / 2**20,
        "step_peak_above_start_mb": (peak.peak - rss_before) / 2**20,
        **info,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(run_child(args.child, args)))
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown mode(s) {unknown}; choose from {MODES}")
    passthrough = [a for a in (argv if argv is not None else sys.argv[1:])]
    results: dict[str, list[dict]] = {m: [] for m in modes}
    for round_index in range(args.rounds):
        for mode in modes:
            command = [sys.executable, os.path.abspath(__file__), *passthrough, "--child", mode]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                sys.stderr.write(done.stderr)
                raise SystemExit(f"mode {mode} failed (exit {done.returncode})")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            results[mode].append(result)
            print(f"round {round_index + 1} {mode:8s} {result['tokens_per_s']:8.0f} tok/s  "
                  f"steps {[round(s, 3) for s in result['step_s']]}  peak RSS {result['peak_rss_mb']:.0f} MB "
                  f"(+{result['step_peak_above_start_mb']:.0f} MB during steps)", flush=True)

    print(f"\nshapes: vocab {args.vocab_size}, context {args.context_length}, d_model {args.d_model}, "
          f"layers {args.num_layers}, heads {args.num_heads}, d_ff {args.d_ff}, batch {args.batch_size}; "
          f"{args.warmup} warm-up + {args.steps} timed steps x {args.rounds} rounds")
    summary = {}
    for mode, runs in results.items():
        best = max(r["tokens_per_s"] for r in runs)
        mean = statistics.mean(r["tokens_per_s"] for r in runs)
        summary[mode] = {"best_tokens_per_s": best, "mean_tokens_per_s": mean,
                         "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
                         "step_peak_above_start_mb": max(r["step_peak_above_start_mb"] for r in runs),
                         "params": runs[0]["params"], "runs": runs}
    peer = summary.get("hf")
    print(f"{'mode':10s} {'params':>10s} {'mean tok/s':>11s} {'best tok/s':>11s} {'vs HF (mean)':>13s} "
          f"{'peak RSS MB':>12s} {'+MB in steps':>13s}")
    for mode, s in summary.items():
        ratio = f"{s['mean_tokens_per_s'] / peer['mean_tokens_per_s']:.2f}x" if peer else "-"
        s["ratio_vs_hf"] = s["mean_tokens_per_s"] / peer["mean_tokens_per_s"] if peer else None
        print(f"{mode:10s} {s['params']:10d} {s['mean_tokens_per_s']:11.0f} {s['best_tokens_per_s']:11.0f} "
              f"{ratio:>13s} {s['peak_rss_mb']:12.0f} {s['step_peak_above_start_mb']:13.0f}")
    if args.json:
        with open(args.json + ".tmp", "w") as handle:
            json.dump({"args": vars(args), "summary": summary}, handle, indent=1)
        os.replace(args.json + ".tmp", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
