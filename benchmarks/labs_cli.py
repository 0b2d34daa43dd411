"""Time `seqlab labs` (target: whole run < 10 s on 2 cores) and the char-LM training loop against a
peer: the same 56-parameter RNN trained with torch autograd (float64), in the same run.

    python benchmarks/labs_cli.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

from seqlab.labs.char_lm import (
    CharLMConfig,
    init_char_lm_params,
    one_hot,
    train_char_lm,
)
from seqlab.labs.results import collect


def time_it(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def torch_char_lm(steps=600, lr=0.5):
    """Peer: same model, init and data; gradients from torch autograd instead of hand-written BPTT."""
    params = {k: torch.tensor(v, requires_grad=True) for k, v in init_char_lm_params(CharLMConfig()).items()}
    xs = torch.tensor(one_hot("hell"))
    targets = torch.tensor([1, 2, 2, 3])
    for _ in range(steps + 1):
        h = torch.zeros(4, dtype=torch.float64)
        logits = []
        for x in xs:
            h = torch.tanh(params["Wh"] @ h + params["Wx"] @ x + params["b"])
            logits.append(params["Wy"] @ h + params["by"])
        loss = torch.nn.functional.cross_entropy(torch.stack(logits), targets)
        if _ == steps:
            return loss.item()
        for p in params.values():
            p.grad = None
        loss.backward()
        with torch.no_grad():
            for p in params.values():
                p -= lr * p.grad


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "seqlab", "labs", "--output", out]
        cli = time_it(lambda: subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL), args.repeats)
    in_process = time_it(collect, args.repeats)
    ours = time_it(train_char_lm, args.repeats)
    peer = time_it(torch_char_lm, args.repeats)
    ours_loss, peer_loss = train_char_lm().final_loss, torch_char_lm()
    print(f"cpus={os.cpu_count()}  repeats={args.repeats} (median)")
    print(f"seqlab labs --output DIR (subprocess, incl. interpreter start): {cli:.2f} s  (target < 10 s)")
    print(f"all labs in-process (collect):                                 {in_process:.2f} s")
    print(f"char LM 600 steps, NumPy hand-written BPTT:  {ours:.3f} s  final loss {ours_loss:.10f}")
    print(f"char LM 600 steps, torch autograd (peer):    {peer:.3f} s  final loss {peer_loss:.10f}")
    print(f"speed ratio peer/seqlab: {peer / ours:.1f}x;  |loss difference| {abs(ours_loss - peer_loss):.1e}")


if __name__ == "__main__":
    main()
