"""The attention backend switch (auto | reference | chunked) and the GPU path of a training step:
same training with either backend, a flat operation count, no host-device syncs, no graph breaks,
checkpoints independent of the backend."""

from dataclasses import asdict

import pytest
import torch
from benchmark_scripts import load_benchmark

import seqlab.model.attention as attention_module
from benchmarks.instruments.op_count import OpCounter
from seqlab.lm.settings import config_from_argv
from seqlab.model import ModelConfig, TransformerLM, attention_backend, gpu_path_forced
from seqlab.training import (
    AdamW,
    clip_grad_norm,
    cross_entropy,
    load_model_from_checkpoint,
    save_checkpoint,
)

pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = dict(vocab_size=37, context_length=16, d_model=32, num_layers=2, num_heads=4, d_ff=64)


@pytest.fixture(scope="module")
def launch_count():
    return load_benchmark("launch_count")


def test_auto_is_chunked_only_for_cpu_tensors_in_eager_mode(monkeypatch):
    cpu, meta = torch.zeros(1), torch.zeros(1, device="meta")
    assert attention_backend("auto", cpu) == "chunked"
    assert attention_backend("auto", meta) == "reference"  # a device other than the CPU and CUDA: MPS, meta
    assert attention_backend("reference", cpu) == "reference" and attention_backend("chunked", meta) == "chunked"
    with gpu_path_forced():
        assert attention_backend("auto", cpu) == "reference"
    assert attention_backend("auto", cpu) == "chunked"  # the flag is restored
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    assert attention_backend("auto", cpu) == "reference"
    with pytest.raises(ValueError, match=r"unknown attention backend 'xformers'; choose one of \('auto'"):
        attention_backend("xformers", cpu)


def test_multihead_attention_calls_the_backend_it_resolves_to(monkeypatch):
    calls = []
    for name in ("chunked_attention", "scaled_dot_product_attention"):
        original = getattr(attention_module, name)
        monkeypatch.setattr(attention_module, name,
                            lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    ids = torch.randint(0, 37, (2, 8))
    for attention, expected in (("auto", "chunked_attention"), ("reference", "scaled_dot_product_attention"),
                                ("chunked", "chunked_attention")):
        calls.clear()
        TransformerLM(**SMALL, attention=attention)(ids)
        assert calls == [expected] * SMALL["num_layers"], attention
    calls.clear()
    with gpu_path_forced():
        TransformerLM(**SMALL)(ids)
    assert calls == ["scaled_dot_product_attention"] * SMALL["num_layers"]
    with pytest.raises(ValueError, match="attention"):
        TransformerLM(**SMALL, attention="xformers")


def train_losses(attention: str, steps: int = 20) -> list[float]:
    torch.manual_seed(0)
    model = TransformerLM(**SMALL, attention=attention)
    optimizer = AdamW(model.parameters(), lr=3e-3)
    ids = torch.randint(0, 37, (4, 17), generator=torch.Generator().manual_seed(1))
    losses = []
    for _ in range(steps):
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        loss.backward()
        clip_grad_norm(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def test_twenty_training_steps_give_the_same_losses_with_either_backend():
    reference, chunked = train_losses("reference"), train_losses("chunked")
    assert reference[-1] < 0.8 * reference[0]  # it does train
    for a, b in zip(reference, chunked):
        assert abs(a - b) <= 1e-5, (reference, chunked)


def test_reference_op_count_is_flat_in_the_batch_and_chunked_is_not(launch_count):
    reference = [launch_count.count_forward_backward("reference", b) for b in (8, 128)]
    chunked = [launch_count.count_forward_backward("chunked", b) for b in (8, 128)]
    assert abs(reference[1] - reference[0]) <= 0.1 * reference[0], reference
    assert reference[1] <= 2000, reference
    assert chunked[1] > 5 * chunked[0], chunked  # why "auto" does not use it on a GPU


def test_meta_device_counts_the_same_operations_as_the_forced_gpu_path_on_cpu(launch_count):
    meta = launch_count.count_forward_backward("reference", 2, device="meta")
    with gpu_path_forced():
        cpu = launch_count.count_forward_backward("reference", 2, device="cpu")
    assert meta == cpu


def test_training_step_makes_no_sync_on_the_gpu_path(launch_count):
    for attention in ("reference", "chunked"):
        counter = launch_count.count_training_step(attention, 2, gpu_path=True)
        assert counter.syncs == 0, counter.sync_ops
        # token ids and targets are checked on the device; default positions are a slice (checked on the host)
        assert counter.ops["aten._assert_async"] == 2
    # the CPU path keeps its eager checks, which read values on the host: the counter sees them
    counter = launch_count.count_training_step("reference", 2, gpu_path=False)
    assert counter.sync_ops == {"aten._local_scalar_dense": 2}


def test_op_counter_sees_syncs_and_operations():
    x = torch.arange(6.0)
    with OpCounter() as counter:
        y = (x * 2).sum()
        if y > 3:
            x.nonzero()
    assert counter.ops["aten.mul"] == 1 and counter.ops["aten.sum"] == 1
    assert counter.sync_ops == {"aten._local_scalar_dense": 1, "aten.nonzero": 1}


def test_gpu_path_range_checks_still_catch_bad_ids_positions_and_targets():
    model = TransformerLM(**SMALL)
    with gpu_path_forced():
        with pytest.raises(RuntimeError, match=r"token id outside the vocabulary \[0, 37\)"):
            model(torch.tensor([[1, 2, 37]]))
        with pytest.raises(RuntimeError, match="token position outside"):
            model(torch.tensor([[1, 2]]), token_positions=torch.tensor([15, 16]))
        with pytest.raises(RuntimeError, match=r"target id outside \[0, 37\)"):
            cross_entropy(model(torch.tensor([[1, 2]])), torch.tensor([[3, -1]]))
    # the CPU path still says which entry is wrong
    with pytest.raises(ValueError, match=r"token id 37 at position 2 is outside the vocabulary"):
        model(torch.tensor([[1, 2, 37]]))


def test_clip_grad_norm_without_sync_clips_and_leaves_small_gradients_alone():
    params = [torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(2))]
    params[0].grad, params[1].grad = torch.tensor([3.0, 0.0, 0.0]), torch.tensor([0.0, 4.0])
    with OpCounter() as counter:
        norm = clip_grad_norm(params, 1.0)
    assert counter.syncs == 0
    torch.testing.assert_close(norm, torch.tensor(5.0))
    scale = 1.0 / (5.0 + 1e-6)
    torch.testing.assert_close(params[0].grad, torch.tensor([3.0 * scale, 0.0, 0.0]))
    clip_grad_norm(params, 10.0)  # norm 1 < 10: gradients unchanged (multiplied by exactly 1)
    torch.testing.assert_close(params[1].grad, torch.tensor([0.0, 4.0 * scale]), rtol=0, atol=0)


def test_model_forward_compiles_without_graph_breaks_and_traces_the_reference(monkeypatch):
    import torch._dynamo

    def refuse(*args, **kwargs):
        raise AssertionError("auto chose the chunked kernel under torch.compile")

    monkeypatch.setattr(attention_module, "chunked_attention", refuse)
    torch._dynamo.reset()
    model = TransformerLM(**SMALL)  # attention="auto"
    explanation = torch._dynamo.explain(model)(torch.randint(0, 37, (2, 8)))
    torch._dynamo.reset()
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_checkpoints_do_not_depend_on_the_backend(tmp_path):
    model = TransformerLM(**SMALL, attention="chunked")
    ids = torch.randint(0, 37, (2, 10))
    expected = model(ids)
    save_checkpoint(model, None, 3, tmp_path / "chunked.pt")
    loaded, payload = load_model_from_checkpoint(tmp_path / "chunked.pt")
    assert payload["model_config"]["attention"] == "chunked"  # stored as the run's choice ...
    loaded.set_attention("reference")  # ... and switchable without touching the weights
    assert loaded.config.attention == "reference"
    assert all(layer.attn.attention == "reference" for layer in loaded.layers)
    torch.testing.assert_close(loaded(ids), expected, atol=1e-5, rtol=1e-5)
    # a checkpoint written before the field existed loads with attention="auto"
    payload["model_config"].pop("attention")
    torch.save(payload, tmp_path / "old.pt")
    old, _ = load_model_from_checkpoint(tmp_path / "old.pt")
    assert old.config.attention == "auto"
    torch.testing.assert_close(old(ids), expected, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="attention"):
        loaded.set_attention("xformers")


def test_train_config_attention_flag_reaches_the_model_config():
    config = config_from_argv(["--attention", "reference"])
    model_config = config.model_config(vocab_size=50)
    assert model_config.attention == "reference"
    assert TransformerLM.from_config(model_config).layers[0].attn.attention == "reference"
    assert config_from_argv([]).model_config(vocab_size=50).attention == "auto"
    with pytest.raises(SystemExit):
        config_from_argv(["--attention", "xformers"])
    assert set(asdict(ModelConfig(**SMALL))) >= {"attention"}


def test_kv_cache_decoding_with_the_reference_equals_the_chunked_full_forward():
    from test_transformer import decode_with_cache

    model = TransformerLM(**SMALL, attention="chunked")
    ids = torch.randint(0, 37, (2, 16))
    with torch.no_grad():
        full = model(ids)
        model.set_attention("reference")
        torch.testing.assert_close(decode_with_cache(model, ids, 5), full, atol=1e-5, rtol=1e-5)


def test_inference_loading_runs_with_the_backend_for_its_device_not_the_training_one(tmp_path):
    """A run trained with --attention chunked (a CPU choice) loads for inference with "auto", which
    resolves per device (sdpa on CUDA), unless the caller names a backend."""
    from seqlab.lm.loading import load_model

    model = TransformerLM(**SMALL, attention="chunked")
    ids = torch.randint(0, 37, (2, 10))
    expected = model(ids)
    save_checkpoint(model, None, 3, tmp_path / "chunked.pt")
    loaded = load_model(checkpoint=tmp_path / "chunked.pt").model
    assert loaded.config.attention == "auto"
    assert all(layer.attn.attention == "auto" for layer in loaded.layers)
    torch.testing.assert_close(loaded(ids), expected, atol=1e-5, rtol=1e-5)
    assert load_model(checkpoint=tmp_path / "chunked.pt", attention="reference").model.config.attention == "reference"
