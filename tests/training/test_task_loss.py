"""The engine's loss (seqlab.training.task_loss, issue 18 item 1): the fused path (linear_cross_entropy on
the output layer's input and weight) and the logits path give torch's F.cross_entropy loss and gradients
for both tasks, tied weights included; compiled, the model and its loss are one graph without a break;
the engine picks the fused loss on the GPU path and the logits on a CPU, and trains the same either way."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import LanguageModelTask, Trainer
from seqlab.model import TransformerLM, gpu_path_forced
from seqlab.runs.log import read_jsonl
from seqlab.seq2seq.build import build_model
from seqlab.seq2seq.config import PAD_ID, Seq2SeqConfig
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.task import Seq2SeqTask
from seqlab.training import engine as engine_module
from seqlab.training import task_loss as task_loss_module
from seqlab.training.task import Drawn
from seqlab.training.task_loss import TaskLoss, fused_loss_wanted

pytestmark = pytest.mark.usefixtures("one_thread")
CPU = torch.device("cpu")
VOCAB = 37


def lm_case(tie: bool = False, seed: int = 0):
    torch.manual_seed(seed)
    model = TransformerLM(VOCAB, 16, 32, 2, 4, 48, tie_embeddings=tie)
    task = LanguageModelTask(TrainConfig(data_dir="unused"))
    windows = torch.randint(0, VOCAB, (3, 17))
    batch = task.select(Drawn(windows, 3, 48), slice(0, 3), CPU)
    x, y = windows[:, :-1], windows[:, 1:]
    return model, task, batch, lambda: F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))


def s2s_case(arch: str, tie: bool = False, seed: int = 0):
    torch.manual_seed(seed)
    config = Seq2SeqConfig(arch=arch, src_vocab_size=20, tgt_vocab_size=23, d_model=16, num_heads=2,
                           num_encoder_layers=1, num_decoder_layers=1, tie_embeddings=tie)
    model = build_model(config)
    task = Seq2SeqTask(Seq2SeqTrainConfig(task="reverse"))
    rng = np.random.default_rng(seed)
    examples = [(rng.integers(4, 20, n).tolist(), rng.integers(4, 23, m).tolist()) for n, m in ((3, 2), (5, 6), (1, 4))]
    batch = task.select(Drawn(examples, 3, 15), slice(0, 3), CPU)
    b = batch.inputs

    def oracle():
        logits = model(b.src, b.tgt_in, b.src_mask, b.tgt_mask)
        return F.cross_entropy(logits.reshape(-1, 23), b.tgt_out.reshape(-1), ignore_index=PAD_ID)
    return model, task, batch, oracle


CASES = {
    "lm": lambda: lm_case(),
    "lm-tied": lambda: lm_case(tie=True),
    "transformer": lambda: s2s_case("transformer"),
    "transformer-tied": lambda: s2s_case("transformer", tie=True),
    "rnn": lambda: s2s_case("rnn"),
    "rnn-attention-tied": lambda: s2s_case("rnn-attention", tie=True),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("fused, pad", [(True, None), (True, 128), (False, None)])
def test_loss_and_gradients_equal_torch_cross_entropy(name, fused, pad):
    model, task, batch, oracle = CASES[name]()
    params = list(model.parameters())
    loss = TaskLoss(model, task, precision="fp32", device=CPU, fused=fused, pad_vocab_multiple=pad)(batch)
    grads = torch.autograd.grad(loss, params)
    expected = oracle()
    expected_grads = torch.autograd.grad(expected, params)
    torch.testing.assert_close(loss, expected, atol=1e-6, rtol=1e-6)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_the_hidden_states_are_the_output_layers_input(name):
    """Task.forward's hidden @ weight.T is the model's own logits, bit for bit."""
    model, task, batch, _ = CASES[name]()
    out = task.forward(model, batch)
    if isinstance(batch.inputs, tuple):  # the LM: (inputs, targets)
        logits, targets = model(batch.inputs[0]), batch.inputs[1]
    else:
        b = batch.inputs
        logits, targets = model(b.src, b.tgt_in, b.src_mask, b.tgt_mask), b.tgt_out
    assert out.weight is model.lm_head.weight and torch.equal(out.targets, targets)
    assert out.hidden.shape == (*logits.shape[:-1], out.weight.shape[1])
    assert torch.equal(model.lm_head(out.hidden), logits) and torch.equal(out.logits, logits)


def test_bf16_autocast_fused_and_logits_agree():
    model, task, batch, _ = lm_case(tie=True)
    losses = [TaskLoss(model, task, precision="bf16", device=CPU, fused=fused)(batch) for fused in (True, False)]
    assert losses[0].dtype == losses[1].dtype == torch.float32
    torch.testing.assert_close(losses[0], losses[1], atol=2e-2, rtol=1e-2)


def test_auto_is_fused_exactly_on_the_gpu_path():
    cpu, meta = torch.zeros(1), torch.zeros(1, device="meta")
    assert not fused_loss_wanted("auto", cpu) and fused_loss_wanted("auto", meta)
    with gpu_path_forced():
        assert fused_loss_wanted("auto", cpu)
    assert fused_loss_wanted("on", cpu) and not fused_loss_wanted("off", meta)
    with pytest.raises(ValueError, match="fused_loss must be one of auto, on, off, got 'yes'"):
        fused_loss_wanted("yes", cpu)


# -- torch.compile: the model and its loss in one graph ----------------------------------------------


@pytest.mark.parametrize("name, fused", [("lm", True), ("lm-tied", True), ("lm", False), ("transformer", True)])
def test_model_and_loss_compile_to_one_graph_without_breaks(name, fused):
    torch._dynamo.reset()
    model, task, batch, _ = CASES[name]()
    module = TaskLoss(model, task, precision="fp32", device=CPU, fused=fused)
    explanation = torch._dynamo.explain(module)(batch)
    assert (explanation.graph_count, explanation.graph_break_count) == (1, 0), explanation.break_reasons


def test_compiled_model_and_loss_match_eager_values_and_gradients():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    model, task, batch, oracle = lm_case(tie=True)
    counter = CompileCounterWithBackend("aot_eager")  # AOTAutograd traces the fused loss's backward too
    compiled = torch.compile(TaskLoss(model, task, precision="fp32", device=CPU, fused=True), backend=counter,
                             fullgraph=True)
    params = list(model.parameters())
    loss = compiled(batch)
    grads = torch.autograd.grad(loss, params)
    expected = oracle()
    torch.testing.assert_close(loss, expected, atol=1e-5, rtol=1e-5)
    for got, want in zip(grads, torch.autograd.grad(expected, params)):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert counter.frame_count == 1


# -- the engine ----------------------------------------------------------------------------------------


TINY = dict(context_length=16, d_model=16, num_layers=1, num_heads=2, batch_size=4, threads=1, progress=False,
            eval_batches=1, warmup_steps=2, lr=1e-2, eval_interval=100, checkpoint_interval=100, log_interval=1)


def _losses(run) -> list[float]:
    return [r["train_loss"] for r in read_jsonl(run / "log.jsonl") if "train_loss" in r]


def _count_fused_calls(monkeypatch) -> dict:
    calls = {"n": 0}
    real = task_loss_module.linear_cross_entropy

    def counted(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(task_loss_module, "linear_cross_entropy", counted)
    return calls


def test_the_engine_trains_the_same_with_the_fused_loss_and_with_logits(byte_data, tmp_path, monkeypatch):
    calls = _count_fused_calls(monkeypatch)
    runs = {}
    for setting in ("on", "off"):
        before = calls["n"]
        trainer = Trainer(TrainConfig(data_dir=str(byte_data), out_dir=str(tmp_path / setting), max_steps=5,
                                      tie_embeddings=True, fused_loss=setting, **TINY))
        trainer.run()
        runs[setting] = (trainer, calls["n"] - before)
    assert runs["on"][0].fused_loss and not runs["off"][0].fused_loss
    assert runs["on"][1] == 5 and runs["off"][1] == 0  # one fused loss per step, and none with logits
    assert _losses(tmp_path / "on") == pytest.approx(_losses(tmp_path / "off"), rel=1e-5)
    for a, b in zip(runs["on"][0].raw_model.parameters(), runs["off"][0].raw_model.parameters()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_the_forced_gpu_path_takes_the_fused_loss_and_a_cpu_the_logits(byte_data, tmp_path, monkeypatch):
    calls = _count_fused_calls(monkeypatch)
    config = dict(data_dir=str(byte_data), max_steps=3, **TINY)
    Trainer(TrainConfig(out_dir=str(tmp_path / "cpu"), **config)).run()
    assert calls["n"] == 0
    with gpu_path_forced():
        Trainer(TrainConfig(out_dir=str(tmp_path / "gpu"), **config)).run()
    assert calls["n"] == 3
    assert _losses(tmp_path / "gpu") == pytest.approx(_losses(tmp_path / "cpu"), rel=1e-5)


@pytest.mark.parametrize("arch", ["rnn-attention", "transformer"])
def test_seq2seq_trains_the_same_with_the_fused_loss_and_with_logits(tmp_path, arch):
    from seqlab.seq2seq.task import train

    common = dict(task="reverse", min_len=2, max_len=5, train_size=300, valid_size=20, eval_batches=1, arch=arch,
                  d_model=16, num_heads=2, num_layers=1, batch_size=16, lr=1e-2, warmup_steps=2, progress=False,
                  threads=1, max_steps=4, eval_interval=100, checkpoint_interval=100, log_interval=1, tie_embeddings=True)
    for setting in ("on", "off"):
        train(Seq2SeqTrainConfig(out_dir=str(tmp_path / setting), fused_loss=setting, **common), say=lambda m: None)
    assert _losses(tmp_path / "on") == pytest.approx(_losses(tmp_path / "off"), rel=1e-5)


def test_the_engine_compiles_model_and_loss_as_one_region(byte_data, tmp_path, monkeypatch):
    """--compile compiles TaskLoss (model + fused loss) once: one graph, fullgraph (a break would fail the
    compile and the engine would say it switched to eager), the same losses as eager training."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    compiled_modules = []

    def compile_for_test(module, device):
        compiled_modules.append(module)
        return torch.compile(module, backend=counter, fullgraph=True), None

    monkeypatch.setattr(engine_module, "compile_model", compile_for_test)
    said: list[str] = []
    config = dict(data_dir=str(byte_data), max_steps=4, tie_embeddings=True, fused_loss="on", **TINY)
    trainer = Trainer(TrainConfig(out_dir=str(tmp_path / "compiled"), compile=True, **config), say=said.append)
    trainer.run()
    assert trainer.compiled and not any("switched off" in line for line in said), said
    assert [type(m) for m in compiled_modules] == [TaskLoss] and compiled_modules[0].fused
    assert counter.frame_count == 1  # one graph, compiled once, reused by every step
    Trainer(TrainConfig(out_dir=str(tmp_path / "eager"), **config), say=said.append).run()
    assert _losses(tmp_path / "compiled") == pytest.approx(_losses(tmp_path / "eager"), rel=1e-5)


def test_vocabulary_padding_changes_neither_the_losses_nor_the_run_files(byte_data, tmp_path):
    """pad_vocab_multiple pads only the fused loss's matmul: same losses, same weight shapes."""
    from seqlab.runs.checkpoint import read_checkpoint

    for multiple in (1, 128):
        Trainer(TrainConfig(data_dir=str(byte_data), out_dir=str(tmp_path / str(multiple)), max_steps=3,
                            fused_loss="on", pad_vocab_multiple=multiple, **TINY)).run()
    assert _losses(tmp_path / "128") == pytest.approx(_losses(tmp_path / "1"), rel=1e-6)
    padded = read_checkpoint(tmp_path / "128" / "checkpoints" / "latest.pt")["model"]
    assert padded["lm_head.weight"].shape == (256, 16)  # the byte vocabulary, not 384
    with pytest.raises(ValueError, match="pad_vocab_multiple=0: must be >= 1"):
        TrainConfig(data_dir=str(byte_data), pad_vocab_multiple=0)
