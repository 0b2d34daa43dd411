"""get_batch: shapes, next-token targets, uniform starts, memmap, errors."""

import numpy as np
import pytest
import torch

from seqlab.lm import get_batch


def test_targets_are_inputs_shifted_by_one_and_windows_are_contiguous():
    data = np.arange(100, dtype=np.uint16)
    x, y = get_batch(data, 6, 8, "cpu", generator=np.random.default_rng(0))
    assert x.shape == y.shape == (6, 8) and x.dtype == y.dtype == torch.int64
    assert x.device.type == "cpu"
    assert torch.equal(y[:, :-1], x[:, 1:])
    assert torch.equal(x - x[:, :1], torch.arange(8).expand(6, 8))
    assert torch.equal(y, x + 1)


def test_starts_cover_every_valid_offset_uniformly():
    data = np.arange(12)
    rng = np.random.default_rng(1)
    starts = np.concatenate([get_batch(data, 64, 4, "cpu", generator=rng)[0][:, 0].numpy() for _ in range(200)])
    counts = np.bincount(starts, minlength=8)
    assert counts.size == 8 and starts.max() == 7  # start 7 uses the last token as the final target
    expected = len(starts) / 8
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))


def test_generator_makes_draws_reproducible_and_global_seed_works():
    data = np.arange(1000)
    a = get_batch(data, 4, 16, "cpu", generator=np.random.default_rng(5))
    b = get_batch(data, 4, 16, "cpu", generator=np.random.default_rng(5))
    assert torch.equal(a[0], b[0])
    np.random.seed(3)
    c = get_batch(data, 4, 16, "cpu")
    np.random.seed(3)
    d = get_batch(data, 4, 16, "cpu")
    assert torch.equal(c[0], d[0])


def test_works_on_memmap(tmp_path):
    path = tmp_path / "tokens.bin"
    np.arange(5000, dtype=np.uint16).tofile(path)
    data = np.memmap(path, dtype=np.uint16, mode="r")
    x, y = get_batch(data, 3, 32, torch.device("cpu"))
    assert torch.equal(y, x + 1) and int(x.max()) < 5000


def test_too_short_data_raises_clear_error():
    with pytest.raises(ValueError, match="has 8 tokens.*needs at least 9"):
        get_batch(np.arange(8), 2, 8, "cpu")
    with pytest.raises(ValueError, match="1-D"):
        get_batch(np.zeros((4, 4), dtype=np.int64), 2, 2, "cpu")
