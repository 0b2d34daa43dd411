"""Issue 21, generation limits: a huge --max-tokens must not be planned or allocated up front, and
tiny temperatures / bad prompts get the behaviour and messages the issue asks for."""

from itertools import islice

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from seqlab.inference.generate import generate, generate_stream
from seqlab.inference.windows import RowWindows
from seqlab.model import TransformerLM

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def small_model(context_length=8, vocab_size=37, seed=0):
    torch.manual_seed(seed)
    return TransformerLM(vocab_size=vocab_size, context_length=context_length, d_model=32, num_layers=2,
                         num_heads=4, d_ff=48).eval()


class AllocationWatch(TorchDispatchMode):
    """Records the largest tensor any aten operation makes or is asked to make (a size list given to
    a factory such as aten.zeros), and refuses anything above ``limit`` elements before it is
    allocated, so a test of the unfixed code fails at once instead of filling the machine's memory."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit, self.largest = limit, 0

    def _see(self, numel: int, what) -> None:
        self.largest = max(self.largest, numel)
        if numel > self.limit:
            raise MemoryError(f"{what} asks for {numel:,} elements (limit {self.limit:,})")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, (list, tuple)) and arg and all(isinstance(v, int) for v in arg):
                numel = 1
                for v in arg:
                    numel *= max(v, 1)
                self._see(numel, func)
        out = func(*args, **(kwargs or {}))
        for tensor in out if isinstance(out, (list, tuple)) else (out,):
            if isinstance(tensor, torch.Tensor):
                self._see(tensor.numel(), func)
        return out


def first_tokens(model, prompt, max_new_tokens, count, **kwargs):
    """(the first ``count`` streamed ids, largest tensor made meanwhile)."""
    with AllocationWatch(limit=200_000) as watch:
        tokens = list(islice(generate_stream(model, prompt, max_new_tokens, **kwargs), count))
    return tokens, watch.largest


@pytest.mark.parametrize("prompt_length", [3, 8, 20])
def test_a_huge_request_streams_its_first_tokens_like_a_small_one(prompt_length):
    model = small_model()
    prompt = torch.randint(0, 37, (prompt_length,), generator=torch.Generator().manual_seed(1)).tolist()
    small, small_largest = first_tokens(model, prompt, 40, 30, temperature=0)
    huge, huge_largest = first_tokens(model, prompt, 10**9, 30, temperature=0)
    # 30 tokens slide the context-8 window several times: the oracle is a request for 30 tokens
    assert huge == small == generate(model, prompt, 30, temperature=0)
    # what was allocated does not depend on the request (the old history buffer held 10**9 columns)
    assert huge_largest == small_largest <= 200_000


def test_the_window_plan_is_made_a_context_at_a_time():
    """The slide schedule was planned for every requested step before the first token (10**9
    Python iterations); now at most one context of steps is planned ahead."""
    model = small_model()
    with torch.no_grad():
        rows = RowWindows(model, [[1, 2, 3], [4, 5]], 10**9, keep=6)
        logits = rows.prefill()
        planned = []
        for _ in range(40):
            logits = rows.advance(logits.argmax(-1))
            planned.append(len(rows.plan))
            assert rows.history.shape[1] <= 2 * model.config.context_length
    assert max(planned) == model.config.context_length


def test_a_window_planned_for_a_few_steps_refuses_one_more():
    model = small_model()
    with torch.no_grad():
        rows = RowWindows(model, [[1, 2, 3]], 2, keep=6)
        logits = rows.prefill()
        for _ in range(2):
            logits = rows.advance(logits.argmax(-1))
        with pytest.raises(RuntimeError, match="more times than the steps"):
            rows.advance(logits.argmax(-1))


# tiny temperatures: the greedy limit, not inf / NaN ---------------------------------------------

def test_a_tiny_temperature_gives_the_top_token_probability_one():
    from seqlab.inference.sampling import next_token_distribution, sample_next

    logits = torch.tensor([[2.0, 1.0, 2.0, -3.0], [0.5, 4.0, -1.0, 3.999]])
    for temperature in (1e-300, 5e-324, 1e-40, 1e-12):
        probs = next_token_distribution(logits, temperature)
        # oracle: all mass on the maximal logits, shared equally by ties
        top = logits == logits.amax(dim=-1, keepdim=True)
        expected = top.float() / top.sum(dim=-1, keepdim=True)
        torch.testing.assert_close(probs, expected, atol=0, rtol=0)
        for _ in range(5):
            drawn = sample_next(logits, temperature)
            assert bool(top[torch.arange(2), drawn].all())


def test_generation_at_a_tiny_temperature_is_greedy():
    model = small_model()
    prompt = [3, 1, 4, 1, 5]
    greedy = generate(model, prompt, 12, temperature=0)
    assert generate(model, prompt, 12, temperature=1e-300, seed=3) == greedy
    assert list(generate_stream(model, prompt, 12, temperature=1e-300, seed=3)) == greedy


def test_top_k_zero_means_off_everywhere():
    from seqlab.inference.sampling import next_token_distribution, top_k_mask

    logits = torch.randn(3, 11, generator=torch.Generator().manual_seed(0))
    assert bool(top_k_mask(logits, 0).all())
    torch.testing.assert_close(next_token_distribution(logits, 0.7, 0.9, 0),
                               next_token_distribution(logits, 0.7, 0.9, None), atol=0, rtol=0)
    model = small_model()
    assert generate(model, [1, 2], 10, top_k=0, seed=5) == generate(model, [1, 2], 10, top_k=None, seed=5)
    with pytest.raises(ValueError, match="top_k must be a positive integer, or 0 for no top-k filter"):
        generate(model, [1, 2], 10, top_k=-2)


# the command line: the same meanings, and clear messages -----------------------------------------

def _generate(run, *flags):
    from seqlab.cli import main

    return main(["generate", "--run", str(run), "--prompt", "Once upon", "--max-tokens", "12", "--seed", "2",
                 *flags])


def test_cli_tiny_temperature_and_top_k_zero(tmp_path, capsys):
    from tests.test_faults_inference import write_run

    run = write_run(tmp_path, vocab_size=257)
    assert _generate(run, "--temperature", "0") == 0
    greedy = capsys.readouterr().out
    assert _generate(run, "--temperature", "1e-300") == 0
    assert capsys.readouterr().out == greedy
    assert _generate(run, "--top-k", "0", "--temperature", "0.9") == 0
    off = capsys.readouterr().out
    assert _generate(run, "--temperature", "0.9") == 0
    assert capsys.readouterr().out == off


def test_cli_prompt_that_is_not_utf8_is_named(tmp_path, capsys):
    from seqlab.cli import main
    from tests.test_faults_inference import write_run

    run = write_run(tmp_path, vocab_size=257)
    # the command line's bytes b"caf\xe9" (Latin-1) arrive as "caf\udce9" (surrogateescape)
    assert main(["generate", "--run", str(run), "--prompt", "caf\udce9", "--max-tokens", "3"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--prompt is not valid UTF-8: byte 0xe9 at character 4" in captured.err
    assert "surrogates not allowed" not in captured.err


def test_decoding_past_several_chunks_reads_nothing_back():
    """Planning a chunk of the schedule and compacting the history happen on the host and the device
    without a host-device sync (no .item(), no data-dependent shapes), as before the fix."""
    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model.checks import gpu_path_forced

    model = small_model()
    with torch.no_grad(), gpu_path_forced():  # the model's own input checks, as on a GPU: no sync
        rows = RowWindows(model, [[1, 2, 3], [4, 5, 6, 7, 8]], 10**6, keep=6)
        logits = rows.prefill()
        next_ids = logits.argmax(-1)
        with OpCounter() as counter:
            for _ in range(3 * model.config.context_length):  # three chunks, several compactions
                next_ids = rows.advance(next_ids).argmax(-1)
    assert counter.syncs == 0, counter.sync_ops
