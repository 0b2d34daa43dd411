"""Issue 13, inference defects: each test injects the fault or bad input and checks the outcome."""

import json

import numpy as np
import pytest
import torch

from seqlab.cli import main
from seqlab.inference.generate import generate, generate_stream
from seqlab.inference.windows import RowWindows, plan_slides
from seqlab.lm.evaluation import evaluate
from seqlab.model import ModelConfig, TransformerLM
from seqlab.runs.checkpoint import load_model_from_checkpoint
from seqlab.tokenizer import Tokenizer
from seqlab.training import save_checkpoint

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def small_model(vocab_size=37, context_length=8, seed=0, **ablation):
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=vocab_size, context_length=context_length, d_model=32, num_layers=2,
                         num_heads=4, d_ff=48, **ablation).eval()


def greedy_alone(model, prompt, steps, keep):
    """Oracle for one row: a full forward of the row's own window at every step. The window is the
    last `keep` tokens whenever it would hold more than the context."""
    ctx = model.config.context_length
    window = list(prompt[-keep:]) if len(prompt) > ctx else list(prompt)
    out = []
    with torch.no_grad():
        for _ in range(steps):
            token = int(model(torch.tensor([window]))[0, -1].argmax())
            out.append(token)
            window.append(token)
            if len(window) > ctx:
                window = window[-keep:]
    return out


# 1. a batched row must not depend on the other prompts once windows slide -------------------------

PROMPT_LENGTHS = [(7, 5), (1, 8, 3, 6), (11, 2), (4, 4)]


@pytest.mark.parametrize("ablation", [{}, {"positional": "nope"}])
@pytest.mark.parametrize("lengths", PROMPT_LENGTHS)
@pytest.mark.parametrize("steps,slide", [(12, None), (12, 1), (12, 7), (2, None)])  # (2, None): no slide
def test_batched_rows_generate_what_they_generate_alone(ablation, lengths, steps, slide):
    model = small_model(**ablation)
    g = torch.Generator().manual_seed(sum(lengths))
    prompts = [torch.randint(0, 37, (n,), generator=g).tolist() for n in lengths]
    keep = 8 - (slide or 2)
    expected = [greedy_alone(model, p, steps, keep) for p in prompts]
    for use_cache in (True, False):
        batched = generate(model, prompts, steps, temperature=0, use_cache=use_cache, slide=slide)
        for row, (got, want) in enumerate(zip(batched, expected)):
            assert got == want, f"row {row} (prompt of {lengths[row]} tokens, cache {use_cache})"
    assert [generate(model, p, steps, temperature=0, slide=slide) for p in prompts] == expected


@pytest.mark.parametrize("lengths,keep", [((11, 2, 5), 6), ((8, 1), 7), ((3, 7, 4), 1)])
def test_each_rows_logits_equal_a_full_forward_of_its_own_window(lengths, keep):
    """RowWindows fed fixed ids: at every step each row's logits equal a full forward of that row's
    window alone (this covers the cache splice, including a cache that grows on the left)."""
    model = small_model()
    g = torch.Generator().manual_seed(len(lengths))
    windows = [torch.randint(0, 37, (min(n, keep) if n > 8 else n,), generator=g).tolist() for n in lengths]
    feed = torch.randint(0, 37, (14, len(lengths)), generator=g)
    with torch.no_grad():
        rows = RowWindows(model, windows, len(feed), keep)
        logits = rows.prefill()
        for step in range(len(feed) + 1):
            for i, window in enumerate(windows):
                expected = model(torch.tensor([window]))[0, -1]
                torch.testing.assert_close(logits[i], expected, atol=1e-5, rtol=1e-5)
            if step == len(feed):
                break
            logits = rows.advance(feed[step])
            for i, window in enumerate(windows):
                window.append(int(feed[step, i]))
                if len(window) > 8:
                    del window[:-keep]


def test_the_reported_case_and_its_slide_schedule():
    """Context 8, prompts of 7 and 5 tokens, 12 greedy tokens (the issue's example): row 0 first
    slides at step 1, row 1 at step 3; before the fix both slid whenever row 0 did."""
    model = small_model()
    prompts = [[3, 1, 4, 1, 5, 9, 2], [2, 0, 26, 24, 35]]
    batched = generate(model, prompts, 12, temperature=0)
    assert batched[1] == generate(model, prompts[1], 12, temperature=0) == greedy_alone(model, prompts[1], 12, 6)
    # the schedule the batch follows: window lengths grow by one and restart at keep = 6 past 8
    plan = plan_slides([7, 5], 5, context_length=8, keep=6)
    assert [s.rows.tolist() for s in plan] == [[], [0], [], [1], [0]]
    assert [s.width for s in plan] == [8, 7, 8, 8, 7]


# 2. a tokenizer smaller than the model's vocabulary is refused before any output ---------------


def byte_tokenizer():
    return Tokenizer({i: bytes([i]) for i in range(256)}, [], ["<|endoftext|>"])  # 257 ids


def write_run(tmp_path, vocab_size, **model_config):
    run = tmp_path / "run"
    byte_tokenizer().save(run / "tokenizer")
    model = small_model(vocab_size=vocab_size, context_length=16)
    save_checkpoint(model, None, 1, str(run / "checkpoints" / "latest.pt"))
    if model_config:  # rewrite the saved model_config (a fault injected into the file)
        path = run / "checkpoints" / "latest.pt"
        payload = torch.load(path, weights_only=True)
        payload["model_config"].update(model_config)
        torch.save(payload, path)
    return run


def test_generate_refuses_a_tokenizer_smaller_than_the_model(tmp_path, capsys):
    run = write_run(tmp_path, vocab_size=300)  # the model can sample ids 257..299
    assert main(["generate", "--run", str(run), "--prompt", "hi", "--max-tokens", "50", "--seed", "0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "the tokenizer has 257 ids but the model samples from 300" in captured.err
    assert "257..299" in captured.err


# 3. eval --json with a NaN loss writes null and fails ------------------------------------------


def test_eval_json_writes_null_for_a_nan_loss_and_exits_non_zero(tmp_path, capsys):
    model = small_model(vocab_size=29)
    with torch.no_grad():
        model.lm_head.weight[3, 0] = float("nan")  # the injected fault
    save_checkpoint(model, None, 1, str(tmp_path / "nan.pt"))
    np.save(tmp_path / "valid.npy", np.arange(40, dtype=np.uint16) % 29)
    code = main(["eval", "--checkpoint", str(tmp_path / "nan.pt"), "--data", str(tmp_path / "valid.npy"),
                 "--json"])
    captured = capsys.readouterr()

    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    result = json.loads(captured.out, parse_constant=refuse)
    assert code == 1
    assert result == {"loss": None, "perplexity": None, "tokens": 39, "windows": 5}
    assert "lm_head.weight" in captured.err and "not a finite number" in captured.err

    # a finite loss too large for exp() gives an infinite perplexity, not an OverflowError
    with torch.no_grad():
        model.lm_head.weight[3, 0] = 0.0
        model.lm_head.weight.mul_(1e5)
    result = evaluate(model, np.arange(40) % 29)
    assert 709.8 < result.loss < float("inf") and result.perplexity == float("inf")


# 4. an empty prompt is refused by name ------------------------------------------------------------


def test_empty_prompts_are_refused_by_name():
    model = small_model()
    for empty in ([], (), torch.tensor([], dtype=torch.long)):
        with pytest.raises(ValueError, match="the prompt is empty"):
            generate(model, empty, 5)
    with pytest.raises(ValueError, match="prompt row 2 is empty"):
        generate(model, [[1, 2], [3], []], 5)
    with pytest.raises(ValueError, match="the prompt is empty"):
        generate_stream(model, [], 5)  # at the call, not at the first next()


# 5. tracebacks become messages ---------------------------------------------------------------------


def test_unknown_model_config_key_is_named(tmp_path, capsys):
    with pytest.raises(ValueError, match="unknown model config field 'sliding_attention'.*newer seqlab"):
        ModelConfig.from_dict({"vocab_size": 10, "context_length": 8, "d_model": 16, "num_layers": 1,
                               "num_heads": 2, "sliding_attention": 4})
    with pytest.raises(ValueError, match="missing required field.*num_heads"):
        ModelConfig.from_dict({"vocab_size": 10, "context_length": 8, "d_model": 16, "num_layers": 1})
    config = {"vocab_size": 10, "context_length": 8, "d_model": 16, "num_layers": 1, "num_heads": 2}
    assert ModelConfig.from_dict(config) == ModelConfig(**config)

    run = write_run(tmp_path, vocab_size=257, sliding_attention=4)
    ckpt = run / "checkpoints" / "latest.pt"
    with pytest.raises(ValueError, match=f"checkpoint {ckpt}: unknown model config field 'sliding_attention'"):
        load_model_from_checkpoint(ckpt)
    assert main(["generate", "--run", str(run)]) == 1
    err = capsys.readouterr().err
    assert "'sliding_attention'" in err and "newer seqlab" in err


def test_checkpoint_that_is_a_directory_is_a_message(tmp_path, capsys):
    run = write_run(tmp_path, vocab_size=257)
    np.save(tmp_path / "valid.npy", np.arange(20, dtype=np.uint16))
    for command in (["generate", "--tokenizer", str(run / "tokenizer")],
                    ["eval", "--data", str(tmp_path / "valid.npy")]):
        assert main(command + ["--checkpoint", str(run)]) == 2
        err = capsys.readouterr().err
        assert f"checkpoint {run} is a directory" in err and f"--run {run}" in err
    (tmp_path / "empty").mkdir()
    assert main(["eval", "--data", str(tmp_path / "valid.npy"), "--checkpoint", str(tmp_path / "empty")]) == 2
    assert "give a .pt file inside it" in capsys.readouterr().err


@pytest.mark.parametrize("bad,named", [
    (["--temperature", "-1"], "temperature"),
    (["--top-p", "0"], "top_p"),
    (["--top-k", "-1"], "top_k"),
    (["--max-tokens", "-3"], "max_new_tokens"),
])
def test_generate_validates_everything_before_printing(tmp_path, capsys, bad, named):
    run = write_run(tmp_path, vocab_size=257)
    assert main(["generate", "--run", str(run), "--prompt", "Once upon a time"] + bad) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # not even the prompt
    assert named in captured.err
