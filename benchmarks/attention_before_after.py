"""Did one attention for the LM and seq2seq (issue 17 item 4) slow a training step down? The model of an
earlier commit and this checkout's, side by side in ONE process, their steps alternating.

    python benchmarks/attention_before_after.py                       # dates seq2seq step vs 7ae4478
    python benchmarks/attention_before_after.py --what translation --steps 10
    python benchmarks/attention_before_after.py --what lm --steps 8   # TinyStories LM, batch 8
    python benchmarks/attention_before_after.py --attention reference # the after model's backend

The earlier tree is exported with ``git archive`` into a temporary folder and its package renamed
``seqlab_before`` (imports rewritten), so both versions load together; the repository is not
touched. Both models get the same weights (the state dict is copied: the keys did not change), the
same batch, seqlab's cross-entropy and AdamW; their losses are checked equal before timing.

Shapes: ``dates`` = the `dates` seq2seq model (vocab 40, d_model 64, 4 heads, 2+2 layers, d_ff 256,
batch 64, source 32 / target 12; benchmarks/seq2seq_step.py's flags for it), ``translation`` =
seq2seq_step.py's defaults (vocab 8,000, d_model 256, 8 heads, 3+3 layers, batch 32 x 40 / 40),
``lm`` = benchmarks/train_step.py's TinyStories model (vocab 10,000, context 256, d_model 512, 4
layers, 16 heads, d_ff 1,344) at batch 8. Times are process CPU time (other jobs on shared cores
barely move it) with --threads 1, or wall time (--clock wall); it prints the medians and the median
over rounds of before / after (> 1: after is faster).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATES = ["--d-model", "64", "--num-heads", "4", "--layers", "2", "--d-ff", "256", "--vocab", "40", "--batch", "64",
         "--src-len", "32", "--tgt-len", "12"]


def export_before(ref: str, folder: Path) -> None:
    """git archive REF's seqlab/ into folder/seqlab_before, every `seqlab.`/`import seqlab` renamed."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "seqlab"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    (folder / "seqlab").rename(folder / "seqlab_before")
    for path in (folder / "seqlab_before").rglob("*.py"):
        text = path.read_text()
        text = re.sub(r"\bseqlab\.", "seqlab_before.", text)
        text = re.sub(r"\b(from|import) seqlab\b(?!_)", r"\1 seqlab_before", text)
        path.write_text(text)


def models(what: str, attention: str):
    """(before model, after model, inputs, targets) with the same weights."""
    import torch

    if what == "lm":
        from seqlab_before.model import TransformerLM as Before

        from seqlab.model import TransformerLM

        shape = (10_000, 256, 512, 4, 16, 1344)
        torch.manual_seed(0)
        after = TransformerLM(*shape, attention=attention)
        before = Before(*shape)
        ids = torch.randint(0, 10_000, (8, 257), generator=torch.Generator().manual_seed(1))
        inputs, targets = (ids[:, :-1],), ids[:, 1:]
    else:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import seq2seq_step
        from seqlab_before.seq2seq.transformer import TransformerSeq2Seq as Before

        from seqlab.seq2seq.transformer import TransformerSeq2Seq

        args = seq2seq_step.parse_args(DATES if what == "dates" else [])
        src, decoder_in, targets, src_mask, tgt_mask = seq2seq_step.make_batch(args)
        shape = (args.vocab, args.vocab, args.d_model, args.num_heads, args.layers, args.layers, args.d_ff,
                 max(args.src_len, args.tgt_len))
        torch.manual_seed(0)
        after = TransformerSeq2Seq(*shape, attention=attention)
        before = Before(*shape)
        inputs = (src, decoder_in, src_mask, tgt_mask)
    before.load_state_dict(after.state_dict())
    return before, after, inputs, targets


def stepper(model, inputs, targets):
    from seqlab.training import AdamW, cross_entropy

    optimizer = AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)

    def step() -> float:
        loss = cross_entropy(model(*inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", default="7ae4478", help="the earlier commit (default: before issue 17 item 4)")
    parser.add_argument("--what", default="dates", choices=("dates", "translation", "lm"))
    parser.add_argument("--steps", type=int, default=30, help="timed steps per model (alternating)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", default="cpu", choices=("cpu", "wall"))
    parser.add_argument("--attention", default="auto", help="the after model's backend (the before model: its default)")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    with tempfile.TemporaryDirectory(prefix="attention-before-") as tmp:
        export_before(args.ref, Path(tmp))
        sys.path.insert(0, tmp)
        before, after, inputs, targets = models(args.what, args.attention)
        steps = {"before": stepper(before, inputs, targets), "after": stepper(after, inputs, targets)}
        losses = {name: [step() for _ in range(args.warmup)] for name, step in steps.items()}
        if abs(losses["before"][-1] - losses["after"][-1]) > 1e-4 * max(1.0, abs(losses["before"][-1])):
            print(f"the two models disagree: losses {losses}", file=sys.stderr)
            return 1
        times: dict[str, list[float]] = {name: [] for name in steps}
        names = list(steps)
        for i in range(args.steps):
            for name in names[i % 2:] + names[:i % 2]:
                start = clock()
                steps[name]()
                times[name].append(clock() - start)
    paired = statistics.median(b / a for b, a in zip(times["before"], times["after"]))
    print(f"{args.what}, before = {args.ref}, after = this checkout (attention {args.attention}), {args.threads} "
          f"thread(s), {args.clock} clock, {args.steps} steps each, alternating")
    for name in names:
        print(f"{name:7s} median {statistics.median(times[name]) * 1e3:9.1f} ms   min {min(times[name]) * 1e3:9.1f} ms")
    print(f"before / after (median paired): {paired:.3f}  (> 1: after is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
