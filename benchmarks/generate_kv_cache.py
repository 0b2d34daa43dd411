"""Tokens/s of seqlab.inference.generate with and without the KV cache (TinyStories-shaped model, CPU).

Usage: python benchmarks/generate_kv_cache.py [--new-tokens 256] [--prompt-tokens 16] [--repeats 2]
       [--threads 1] [--peer]  (also time Hugging Face LlamaForCausalLM.generate of identical shapes, cache on/off)

Random init (speed does not depend on the weights). Greedy decoding, so both paths must produce
the same ids; the script checks that. With a 16-token prompt, 256 new tokens run past the
256-token context, so the timing includes one sliding-window re-prefill.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import torch

from seqlab.inference.generate import generate
from seqlab.model import TransformerLM

TINYSTORIES = dict(vocab_size=10000, context_length=256, d_model=512, num_layers=4, num_heads=16,
                   d_ff=1344, rope_theta=10000.0)


def time_call(fn, repeats: int) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def hf_peer(prompt: list[int], new_tokens: int, repeats: int) -> dict[str, float]:
    """LlamaForCausalLM of the same shapes (SwiGLU, RMSNorm, RoPE, untied head), greedy."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=TINYSTORIES["vocab_size"], hidden_size=TINYSTORIES["d_model"],
                      intermediate_size=TINYSTORIES["d_ff"], num_hidden_layers=TINYSTORIES["num_layers"],
                      num_attention_heads=TINYSTORIES["num_heads"],
                      num_key_value_heads=TINYSTORIES["num_heads"],
                      max_position_embeddings=TINYSTORIES["context_length"] + new_tokens + len(prompt),
                      rope_theta=TINYSTORIES["rope_theta"], tie_word_embeddings=False,
                      attn_implementation="eager")
    model = LlamaForCausalLM(cfg).eval()
    ids = torch.tensor([prompt])
    out = {}
    for use_cache in (True, False):
        def run():
            with torch.no_grad():
                return model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                                      do_sample=False, use_cache=use_cache, pad_token_id=0)
        seconds, _ = time_call(run, repeats)
        out["cache" if use_cache else "no_cache"] = new_tokens / seconds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--prompt-tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--peer", action="store_true", help="also time HF LlamaForCausalLM")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: on a shared 2-core machine, 2 OpenMP threads "
                             "spin against other processes and every small op slows down ~15x)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    torch.manual_seed(0)
    model = TransformerLM(**TINYSTORIES).eval()
    prompt = torch.randint(0, TINYSTORIES["vocab_size"], (args.prompt_tokens,)).tolist()
    generate(model, prompt, 8, temperature=0)  # warm-up

    t_cache, ids_cache = time_call(lambda: generate(model, prompt, args.new_tokens, temperature=0),
                                   args.repeats)
    t_full, ids_full = time_call(
        lambda: generate(model, prompt, args.new_tokens, temperature=0, use_cache=False), args.repeats)
    assert ids_cache == ids_full, "cached and uncached greedy decoding disagree"
    result = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}",
        "new_tokens": args.new_tokens,
        "prompt_tokens": args.prompt_tokens,
        "seqlab_cache_tokens_per_s": args.new_tokens / t_cache,
        "seqlab_no_cache_tokens_per_s": args.new_tokens / t_full,
        "speedup_from_cache": t_full / t_cache,
    }
    if args.peer:
        peer = hf_peer(prompt, args.new_tokens, args.repeats)
        result["hf_llama_cache_tokens_per_s"] = peer["cache"]
        result["hf_llama_no_cache_tokens_per_s"] = peer["no_cache"]
        result["seqlab_cache_vs_hf_cache"] = result["seqlab_cache_tokens_per_s"] / peer["cache"]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
