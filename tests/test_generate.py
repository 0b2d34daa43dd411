"""Generation: KV-cache equivalence, sampling filters against naive oracles, batching, eos, sliding."""

import pytest
import torch

from seqlab.inference.generate import generate, generate_stream
from seqlab.inference.sampling import (
    next_token_distribution,
    sample_next,
    top_k_mask,
    top_p_mask,
)
from seqlab.inference.windows import left_pad
from seqlab.model import TransformerLM

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ABLATIONS = {
    "default": {},
    "norm-none": {"norm": "none"},
    "post-norm": {"norm_position": "post"},
    "nope": {"positional": "nope"},
    "silu": {"ffn": "silu", "d_ff": None},
    "gqa": {"num_kv_heads": 2},
    "mqa-tied": {"num_kv_heads": 1, "tie_embeddings": True},
}


def tiny_model(seed=0, context_length=16, **ablation):
    torch.manual_seed(seed)
    kwargs = dict(vocab_size=37, context_length=context_length, d_model=32, num_layers=2,
                  num_heads=4, d_ff=48)
    kwargs.update(ablation)
    return TransformerLM(**kwargs).eval()


def naive_greedy(model, prompt, steps, slide=None):
    """Reference: a full forward over the current window at every step, no cache. The window is
    tokens[start:], and when it outgrows the context it restarts at the last `keep` tokens."""
    ctx = model.config.context_length
    keep = ctx - (slide or max(1, ctx // 4))
    tokens = list(prompt)
    start = len(tokens) - keep if len(tokens) > ctx else 0
    out = []
    with torch.no_grad():
        for _ in range(steps):
            if len(tokens) - start > ctx:
                start = len(tokens) - keep
            logits = model(torch.tensor([tokens[start:]]))[0, -1]
            token = int(torch.argmax(logits))
            tokens.append(token)
            out.append(token)
    return out


@pytest.mark.parametrize("name", ABLATIONS)
def test_cached_logits_equal_full_recompute(name):
    """Prefill a left-padded batch, then decode token by token; every step's logits equal a full
    forward of that row alone."""
    model = tiny_model(**ABLATIONS[name])
    g = torch.Generator().manual_seed(1)
    rows = [torch.randint(0, 37, (n,), generator=g).tolist() for n in (3, 7)]
    ids, mask, positions = left_pad([r[:-4] if len(r) > 4 else r[:1] for r in rows], "cpu")
    # decode the rest of each row one token at a time (rows stay aligned: same number of steps)
    prefix = [r[:-4] if len(r) > 4 else r[:1] for r in rows]
    suffix = [r[len(p):] for r, p in zip(rows, prefix)]
    steps = min(len(s) for s in suffix)
    with torch.no_grad():
        cache = model.new_kv_cache()
        logits = [model(ids, token_positions=positions, kv_cache=cache, padding_mask=mask)[:, -1]]
        lengths = [len(p) for p in prefix]
        for t in range(steps):
            new = torch.tensor([[s[t]] for s in suffix])
            pos = torch.tensor([[n + t] for n in lengths])
            logits.append(model(new, token_positions=pos, kv_cache=cache)[:, -1])
        for i, row in enumerate(rows):
            full = model(torch.tensor([prefix[i] + suffix[i][:steps]]))[0]
            for t in range(steps + 1):
                expected = full[len(prefix[i]) - 1 + t]
                torch.testing.assert_close(logits[t][i], expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ABLATIONS)
def test_greedy_with_cache_equals_without_and_naive_loop(name):
    model = tiny_model(**ABLATIONS[name])
    prompt = [5, 9, 2, 30]
    cached = generate(model, prompt, 12, temperature=0)
    assert cached == generate(model, prompt, 12, temperature=0, use_cache=False)
    assert cached == naive_greedy(model, prompt, 12)


@pytest.mark.parametrize("name", ["default", "nope", "gqa"])
def test_sliding_window_beyond_the_context(name):
    model = tiny_model(context_length=8, **ABLATIONS[name])
    prompt = [1, 2, 3, 4, 5]
    new = generate(model, prompt, 30, temperature=0)  # 35 tokens through an 8-token context
    assert len(new) == 30
    assert new == generate(model, prompt, 30, temperature=0, use_cache=False)
    assert new == naive_greedy(model, prompt, 30)
    assert generate(model, prompt, 30, temperature=0, slide=1) == naive_greedy(model, prompt, 30, slide=1)
    # a prompt longer than the context keeps its last tokens
    long_prompt = list(range(20))
    assert generate(model, long_prompt, 10, temperature=0) == naive_greedy(model, long_prompt, 10)


def test_batched_prompts_equal_one_by_one():
    for ablation in ({}, {"positional": "nope"}):
        model = tiny_model(**ablation)
        prompts = [[4], [1, 2, 3, 4, 5, 6, 7], [8, 9, 10]]
        batched = generate(model, prompts, 6, temperature=0)
        assert batched == [generate(model, p, 6, temperature=0) for p in prompts]


def naive_top_p_set(probs: list[float], p: float) -> set[int]:
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    kept, mass = set(), 0.0
    for i in order:
        kept.add(i)
        mass += probs[i]
        if mass >= p:
            break
    return kept


def test_top_p_and_top_k_keep_exactly_the_right_sets():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(50, 23, generator=g) * 2.0
    probs = torch.softmax(logits.double(), dim=-1)
    for p in (0.05, 0.3, 0.5, 0.9, 0.99):
        mask = top_p_mask(probs, p)
        for row in range(50):
            expected = naive_top_p_set(probs[row].tolist(), p)
            assert set(torch.nonzero(mask[row]).flatten().tolist()) == expected
    for k in (1, 3, 10, 23, 40):
        mask = top_k_mask(logits, k)
        for row in range(50):
            expected = set(sorted(range(23), key=lambda i: -logits[row, i].item())[:k])
            assert set(torch.nonzero(mask[row]).flatten().tolist()) == expected


def test_filtered_distribution_is_renormalized_softmax_of_the_kept_set():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(4, 19, generator=g)
    probs = next_token_distribution(logits, temperature=0.7, top_p=0.8, top_k=6)
    for row in range(4):
        after_k = sorted(range(19), key=lambda i: -logits[row, i].item())[:6]
        p_k = torch.softmax(logits[row, after_k] / 0.7, dim=-1).tolist()
        kept = [after_k[i] for i in naive_top_p_set(p_k, 0.8)]
        expected = torch.zeros(19)
        expected[kept] = torch.softmax(logits[row, kept] / 0.7, dim=-1)
        torch.testing.assert_close(probs[row], expected, atol=1e-6, rtol=1e-5)


def test_sampling_frequencies_follow_the_distribution():
    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0, -3.0]]).repeat(20000, 1)
    gen = torch.Generator().manual_seed(0)
    draws = sample_next(logits, temperature=1.0, top_k=4, generator=gen)
    assert draws.max().item() <= 3  # top-k never leaves the 4 best
    counts = torch.bincount(draws, minlength=6).double() / len(draws)
    expected = torch.softmax(logits[0, :4].double(), dim=-1)
    torch.testing.assert_close(counts[:4], expected, atol=0.015, rtol=0)
    assert sample_next(logits[:2], temperature=0).tolist() == [0, 0]


def test_seed_reproducibility():
    model = tiny_model()
    a = generate(model, [3, 4], 15, temperature=1.0, top_p=0.95, seed=123)
    assert a == generate(model, [3, 4], 15, temperature=1.0, top_p=0.95, seed=123)
    assert list(generate_stream(model, [3, 4], 15, temperature=1.0, top_p=0.95, seed=123)) == a
    others = {tuple(generate(model, [3, 4], 15, seed=s)) for s in range(5)}
    assert len(others) > 1
    assert generate(model, [[3, 4], [5]], 10, seed=7) == generate(model, [[3, 4], [5]], 10, seed=7)


def test_stops_at_eos_per_row():
    model = tiny_model()
    free = generate(model, [[1, 2], [6]], 10, temperature=0)
    eos = free[0][3]
    stopped = generate(model, [[1, 2], [6]], 10, temperature=0, eos_id=eos)
    cut = free[0].index(eos)
    assert stopped[0] == free[0][:cut + 1]  # ends with the eos id itself
    row1 = free[1][:free[1].index(eos) + 1] if eos in free[1] else free[1]
    assert stopped[1] == row1
    assert list(generate_stream(model, [1, 2], 10, temperature=0, eos_id=eos)) == stopped[0]


def test_bad_arguments_are_named():
    model = tiny_model()
    with pytest.raises(ValueError, match="id 99"):
        generate(model, [1, 99], 3)
    with pytest.raises(ValueError, match="empty"):
        generate(model, [[1], []], 3)
    with pytest.raises(ValueError, match="top_p"):
        generate(model, [1], 3, top_p=0.0)
    with pytest.raises(ValueError, match="temperature"):
        generate(model, [1], 3, temperature=-1)
    forwards = []
    model.register_forward_hook(lambda *args: forwards.append(1))
    for bad in ({"temperature": -1}, {"top_k": -1}, {"top_p": 1.5}):
        with pytest.raises(ValueError):
            generate(model, [1], 3, **bad)
    assert forwards == []  # every argument is checked before the prefill
    assert generate(model, [1], 0) == []


def make_run_dir(tmp_path):
    """A minimal run directory: checkpoints/latest.pt and tokenizer/ (no trainer needed)."""
    from seqlab.tokenizer import Tokenizer
    from seqlab.training import save_checkpoint

    vocab = {i: bytes([i]) for i in range(256)}
    merges = [(b"h", b"e"), (b"he", b"l"), (b"\xc3", b"\xa9")]
    for i, (a, b) in enumerate(merges):
        vocab[256 + i] = a + b
    tokenizer = Tokenizer(vocab, merges, ["<|endoftext|>"])
    run = tmp_path / "run"
    tokenizer.save(run / "tokenizer")
    torch.manual_seed(5)
    model = TransformerLM(vocab_size=tokenizer.vocab_size, context_length=16, d_model=32,
                          num_layers=2, num_heads=4, d_ff=48)
    save_checkpoint(model, None, 3, str(run / "checkpoints" / "latest.pt"))
    return run, model.eval(), tokenizer


def test_cli_generate_streams_the_decoded_continuation(tmp_path, capsys):
    from seqlab.cli import main

    run, model, tokenizer = make_run_dir(tmp_path)
    prompt = "hello héllo"
    ids = generate(model, tokenizer.encode(prompt), 40, temperature=0, eos_id=tokenizer.eot_id)
    if ids and ids[-1] == tokenizer.eot_id:
        ids = ids[:-1]
    assert main(["generate", "--run", str(run), "--prompt", prompt, "--max-tokens", "40",
                 "--temperature", "0"]) == 0
    assert capsys.readouterr().out == prompt + tokenizer.decode(ids) + "\n"

    # sampling through --checkpoint + --tokenizer is reproducible with --seed
    args = ["generate", "--checkpoint", str(run / "checkpoints" / "latest.pt"), "--tokenizer",
            str(run / "tokenizer"), "--max-tokens", "20", "--seed", "4", "--top-p", "0.9", "--top-k", "50"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert main(args) == 0
    assert capsys.readouterr().out == first

    assert main(["generate", "--checkpoint", str(run / "checkpoints" / "latest.pt")]) == 2
    assert "--tokenizer" in capsys.readouterr().err
    assert main(["generate", "--run", str(tmp_path / "nope")]) == 1
    assert "latest.pt" in capsys.readouterr().err
    if not torch.cuda.is_available():  # an absent device is named, not an AssertionError traceback
        assert main(["generate", "--run", str(run), "--device", "cuda"]) == 2
        assert "device 'cuda' was asked for but CUDA is not available" in capsys.readouterr().err


def test_cli_never_prints_half_a_character(tmp_path, capsys, monkeypatch):
    """Feed the CLI a stream that splits 'é' and '😀' across byte tokens."""
    import importlib

    import seqlab.lm.cli as inference_cli
    from seqlab.cli import main

    gen = importlib.import_module("seqlab.inference.generate")  # the module, not the function

    run, _, tokenizer = make_run_dir(tmp_path)
    text = "é😀!"
    byte_ids = list(text.encode("utf-8"))  # single-byte tokens have ids 0..255 here
    writes = []
    monkeypatch.setattr(gen, "generate_stream", lambda *a, **k: iter(byte_ids + [tokenizer.eot_id, 65]))
    monkeypatch.setattr(inference_cli.sys, "stdout", type("W", (), {"write": lambda self, s: writes.append(s),
                                                          "flush": lambda self: None})())
    assert main(["generate", "--run", str(run), "--max-tokens", "9"]) == 0
    assert "".join(writes) == text + "\n"  # stops at <|endoftext|>, nothing after it
    assert all("\ufffd" not in w for w in writes)
    assert "😀" in writes  # printed as one piece once its 4th byte arrived
