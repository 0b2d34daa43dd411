"""Training-step throughput of seqlab's TransformerSeq2Seq vs torch.nn.Transformer on CPU.

One full step (forward, loss, backward, AdamW) on a fixed padded batch, in one process, both
models of identical shape:
  seqlab  TransformerSeq2Seq (post-norm, LayerNorm, ReLU FFN, sinusoidal positions, no Linear biases)
          + seqlab.training.cross_entropy + seqlab.training.AdamW
  torch   nn.Embedding x2 (* sqrt(d) + the same sinusoid table) -> nn.Transformer(bias=False,
          dropout=0, batch_first=True) -> nn.Linear(bias=False) + F.cross_entropy + torch.optim.AdamW
Both get the source/target padding masks and the causal mask. nn.Transformer's bias=False also
drops its LayerNorm shifts (2 * d_model numbers per norm) and it keeps its final encoder/decoder
norms; these differ by well under 1% of the parameters and FLOPs.

Timed steps alternate between the two (rotating order) so load on a shared machine hits both;
"paired" is the median over rounds of (torch step time / seqlab step time). Throughput counts
target tokens (batch * target length) per second.

    python benchmarks/seq2seq_step.py                         # small-translation shapes
    python benchmarks/seq2seq_step.py --d-model 64 --num-heads 4 --d-ff 256 --vocab 40 --batch 64   # dates
    python benchmarks/seq2seq_step.py --attention sdpa        # another of seqlab's attention backends
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=8000, help="source and target vocabulary size")
    parser.add_argument("--d-model", type=int, default=256)
    parser.add_argument("--num-heads", type=int, default=8)
    parser.add_argument("--layers", type=int, default=3, help="encoder and decoder layers (each)")
    parser.add_argument("--d-ff", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--src-len", type=int, default=40)
    parser.add_argument("--tgt-len", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per model (interleaved)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--attention", default="auto",
                        help="seqlab's attention backend: auto | reference | chunked | sdpa | flash")
    parser.add_argument("--json", default=None, help="also write the results to this JSON file")
    return parser.parse_args(argv)


def make_batch(args):
    import torch

    g = torch.Generator().manual_seed(0)
    src = torch.randint(4, args.vocab, (args.batch, args.src_len), generator=g)
    tgt = torch.randint(4, args.vocab, (args.batch, args.tgt_len + 1), generator=g)
    # lengths from half to full, padded at the end as a real batch would be
    src_len = torch.randint(args.src_len // 2, args.src_len + 1, (args.batch,), generator=g)
    tgt_len = torch.randint(args.tgt_len // 2, args.tgt_len + 1, (args.batch,), generator=g)
    src_mask = torch.arange(args.src_len)[None] < src_len[:, None]
    tgt_mask = torch.arange(args.tgt_len)[None] < tgt_len[:, None]
    src = src.masked_fill(~src_mask, 0)
    decoder_in, targets = tgt[:, :-1].masked_fill(~tgt_mask, 0), tgt[:, 1:].masked_fill(~tgt_mask, 0)
    return src, decoder_in, targets, src_mask, tgt_mask


def seqlab_stepper(args, batch):
    import torch

    from seqlab.seq2seq.transformer import TransformerSeq2Seq
    from seqlab.training import AdamW, cross_entropy

    torch.manual_seed(0)
    model = TransformerSeq2Seq(args.vocab, args.vocab, args.d_model, args.num_heads, args.layers, args.layers,
                               args.d_ff, max(args.src_len, args.tgt_len), attention=args.attention)
    optimizer = AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    src, decoder_in, targets, src_mask, tgt_mask = batch

    def step():
        loss = cross_entropy(model(src, decoder_in, src_mask, tgt_mask), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step, sum(p.numel() for p in model.parameters())


class TorchSeq2Seq:
    """nn.Transformer plus the same embeddings, sinusoids and output layer as TransformerSeq2Seq."""

    def __init__(self, args):
        import torch
        from torch import nn

        from seqlab.model.positional import sinusoidal_table

        d = args.d_model
        self.scale = math.sqrt(d)
        self.src_emb, self.tgt_emb = nn.Embedding(args.vocab, d), nn.Embedding(args.vocab, d)
        self.core = nn.Transformer(d, args.num_heads, args.layers, args.layers, args.d_ff, dropout=0.0,
                                   batch_first=True, bias=False)
        self.head = nn.Linear(d, args.vocab, bias=False)
        self.table = sinusoidal_table(max(args.src_len, args.tgt_len), d)
        self.modules = nn.ModuleList([self.src_emb, self.tgt_emb, self.core, self.head])
        self.modules.train()
        self.causal = torch.triu(torch.ones(args.tgt_len, args.tgt_len, dtype=torch.bool), 1)

    def __call__(self, src, tgt, src_mask, tgt_mask):
        S, T = src.shape[1], tgt.shape[1]
        x = self.src_emb(src) * self.scale + self.table[:S]
        y = self.tgt_emb(tgt) * self.scale + self.table[:T]
        out = self.core(x, y, tgt_mask=self.causal, src_key_padding_mask=~src_mask,
                        tgt_key_padding_mask=~tgt_mask, memory_key_padding_mask=~src_mask, tgt_is_causal=True)
        return self.head(out)


def torch_stepper(args, batch):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    model = TorchSeq2Seq(args)
    optimizer = torch.optim.AdamW(model.modules.parameters(), lr=1e-4, weight_decay=0.01)
    src, decoder_in, targets, src_mask, tgt_mask = batch

    def step():
        logits = model(src, decoder_in, src_mask, tgt_mask)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step, sum(p.numel() for p in model.modules.parameters())


def main(argv=None) -> int:
    args = parse_args(argv)
    import warnings

    import torch

    warnings.filterwarnings("ignore", message="enable_nested_tensor")
    if args.threads:
        torch.set_num_threads(args.threads)
    batch = make_batch(args)
    tokens = args.batch * args.tgt_len
    steppers, params = {}, {}
    for name, make in (("seqlab", seqlab_stepper), ("torch", torch_stepper)):
        steppers[name], params[name] = make(args, batch)
        for _ in range(args.warmup):
            steppers[name]()
    print(f"shapes: vocab {args.vocab}, d_model {args.d_model}, heads {args.num_heads}, layers {args.layers}+"
          f"{args.layers}, d_ff {args.d_ff}, batch {args.batch}, source {args.src_len}, target {args.tgt_len} "
          f"({tokens} target tokens/step); threads {torch.get_num_threads()}; attention {args.attention}; params seqlab "
          f"{params['seqlab']:,} torch {params['torch']:,}", flush=True)
    names = list(steppers)
    times = {n: [] for n in names}
    for i in range(args.steps):
        for name in names[i % 2:] + names[:i % 2]:
            started = time.perf_counter()
            steppers[name]()
            times[name].append(time.perf_counter() - started)
        print(f"step {i + 1}: " + "  ".join(f"{n} {times[n][-1]:.3f}s" for n in names), flush=True)
    summary = {n: {"tokens_per_s": tokens * len(times[n]) / sum(times[n]),
                   "median_tokens_per_s": tokens / statistics.median(times[n]),
                   "min_step_s": min(times[n]), "max_step_s": max(times[n]), "step_s": times[n]}
               for n in names}
    ratio = summary["seqlab"]["tokens_per_s"] / summary["torch"]["tokens_per_s"]
    paired = statistics.median(t / s for s, t in zip(times["seqlab"], times["torch"]))
    print(f"\n{'model':8s} {'tok/s':>8s} {'median':>8s} {'step min-max s':>16s}")
    for n, s in summary.items():
        print(f"{n:8s} {s['tokens_per_s']:8.0f} {s['median_tokens_per_s']:8.0f} "
              f"{s['min_step_s']:7.3f}-{s['max_step_s']:.3f}")
    print(f"seqlab / torch: {ratio:.2f}x (total time), {paired:.2f}x (median paired)")
    if args.json:
        with open(args.json + ".tmp", "w") as handle:
            json.dump({"args": vars(args), "summary": summary, "ratio": ratio, "paired_ratio": paired}, handle,
                      indent=1)
        os.replace(args.json + ".tmp", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
