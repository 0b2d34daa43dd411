"""Checkpoints: resume gives the same next loss, file objects, atomic writes, mismatch messages."""

import io
import os
import stat

import numpy as np
import pytest
import torch

from seqlab.lm import get_batch
from seqlab.model import TransformerLM
from seqlab.training import (
    AdamW,
    cross_entropy,
    load_checkpoint,
    load_model_from_checkpoint,
    read_checkpoint,
    save_checkpoint,
)

CFG = dict(vocab_size=29, context_length=8, d_model=16, num_layers=2, num_heads=2, d_ff=32, rope_theta=10000.0)
DATA = np.random.default_rng(0).integers(0, 29, size=500)


def train_step(model, optimizer, rng):
    x, y = get_batch(DATA, 4, 8, "cpu", generator=rng)
    loss = cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def fresh():
    torch.manual_seed(123)  # a different init from the trained model
    model = TransformerLM(**CFG)
    return model, AdamW(model.parameters(), lr=1e-2)


@pytest.mark.parametrize("use_file_object", [False, True])
def test_resume_gives_the_same_next_loss(tmp_path, use_file_object):
    torch.manual_seed(0)
    model = TransformerLM(**CFG)
    optimizer = AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(7)
    for _ in range(3):
        train_step(model, optimizer, rng)
    target = io.BytesIO() if use_file_object else tmp_path / "ckpt.pt"
    save_checkpoint(model, optimizer, 3, target, extra={"note": "hi"})
    next_rng_state = rng.bit_generator.state
    expected = [train_step(model, optimizer, rng) for _ in range(2)]

    model2, optimizer2 = fresh()
    if use_file_object:
        target.seek(0)
    assert load_checkpoint(target, model2, optimizer2) == 3
    rng2 = np.random.default_rng()
    rng2.bit_generator.state = next_rng_state
    assert [train_step(model2, optimizer2, rng2) for _ in range(2)] == expected


def test_path_write_is_atomic_and_payload_has_contract_keys(tmp_path):
    model, optimizer = fresh()
    path = tmp_path / "sub" / "latest.pt"
    save_checkpoint(model, optimizer, 5, path)
    save_checkpoint(model, optimizer, 6, path)  # overwrite in place
    assert sorted(p.name for p in path.parent.iterdir()) == ["latest.pt"]  # no temp file left
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # not the 0600 of a temp file
    payload = read_checkpoint(path)
    assert set(payload) == {"model", "optimizer", "iteration", "model_config", "extra"}
    assert payload["iteration"] == 6
    assert payload["model_config"]["d_model"] == 16 and payload["model_config"]["ffn"] == "swiglu"


def test_failed_write_leaves_old_file_untouched(tmp_path, monkeypatch):
    model, optimizer = fresh()
    path = tmp_path / "ckpt.pt"
    save_checkpoint(model, optimizer, 1, path)
    before = path.read_bytes()

    def broken_save(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_checkpoint(model, optimizer, 2, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


def test_different_architecture_names_the_mismatch(tmp_path):
    model, optimizer = fresh()
    save_checkpoint(model, optimizer, 1, tmp_path / "c.pt")
    wider = TransformerLM(**{**CFG, "d_model": 32})
    with pytest.raises(ValueError, match=r"token_embeddings.weight: checkpoint shape \(29, 16\) vs model shape \(29, 32\)"):
        load_checkpoint(tmp_path / "c.pt", wider)
    deeper = TransformerLM(**{**CFG, "num_layers": 3})
    with pytest.raises(ValueError, match=r"missing from checkpoint: layers\.2\.attn\.q_proj\.weight"):
        load_checkpoint(tmp_path / "c.pt", deeper)
    silu = TransformerLM(**{**CFG, "ffn": "silu"})
    with pytest.raises(ValueError, match=r"not in model: layers\.0\.ffn\.w3\.weight"):
        load_checkpoint(tmp_path / "c.pt", silu)
    payload = read_checkpoint(tmp_path / "c.pt")
    payload["model_config"]["d_model"] = 32  # a config that does not describe the saved weights
    torch.save(payload, tmp_path / "lying.pt")
    with pytest.raises(ValueError, match=r"lying\.pt weights do not match its model_config: .*"
                                         r"checkpoint shape \(29, 16\) vs model shape \(29, 32\)"):
        load_model_from_checkpoint(tmp_path / "lying.pt")
    torch.save({**payload, "model_config": None}, tmp_path / "bare.pt")
    with pytest.raises(ValueError, match=r"bare\.pt has no model_config"):
        load_model_from_checkpoint(tmp_path / "bare.pt")


def test_prefixed_keys_load_into_plain_model_and_wrappers_are_unwrapped(tmp_path):
    model, optimizer = fresh()
    state = {f"_orig_mod.{k}": v for k, v in model.state_dict().items()}
    payload = {"model": state, "optimizer": optimizer.state_dict(), "iteration": 9, "model_config": None, "extra": {}}
    torch.save(payload, tmp_path / "prefixed.pt")
    plain = TransformerLM(**CFG)
    assert load_checkpoint(tmp_path / "prefixed.pt", plain) == 9
    torch.testing.assert_close(plain.state_dict(), model.state_dict())

    class Wrapper(torch.nn.Module):  # stands in for DDP's .module
        def __init__(self, inner):
            super().__init__()
            self.module = inner

    save_checkpoint(Wrapper(model), optimizer, 4, tmp_path / "wrapped.pt")
    assert all(not k.startswith("module.") for k in read_checkpoint(tmp_path / "wrapped.pt")["model"])
    loaded, payload = load_model_from_checkpoint(tmp_path / "wrapped.pt")
    ids = torch.randint(0, 29, (2, 8))
    torch.testing.assert_close(loaded(ids), model(ids))
    assert payload["iteration"] == 4 and not loaded.training


def test_missing_or_foreign_file_errors(tmp_path):
    model, _ = fresh()
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_checkpoint(tmp_path / "nope.pt", model)
    save_checkpoint(model, None, 1, tmp_path / "good.pt")
    whole = (tmp_path / "good.pt").read_bytes()
    damaged = {"junk.pt": b"not a checkpoint", "empty.pt": b"", "truncated.pt": whole[: len(whole) // 2]}
    for name, data in damaged.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=rf"{name} is not a readable seqlab checkpoint: ") as caught:
            read_checkpoint(tmp_path / name)
        assert "weights_only" not in str(caught.value)  # not torch's page of advice


def test_torch_compile_wrapper_saves_plain_keys_and_loads_back(tmp_path):
    model, optimizer = fresh()
    compiled = torch.compile(model)  # wrapping is lazy: nothing is compiled here
    assert any(k.startswith("_orig_mod.") for k in compiled.state_dict())
    save_checkpoint(compiled, optimizer, 2, tmp_path / "c.pt")
    payload = read_checkpoint(tmp_path / "c.pt")
    assert set(payload["model"]) == set(model.state_dict())
    assert payload["model_config"]["num_layers"] == 2
    other = torch.compile(TransformerLM(**CFG))
    assert load_checkpoint(tmp_path / "c.pt", other) == 2
    torch.testing.assert_close(other._orig_mod.state_dict(), model.state_dict())
