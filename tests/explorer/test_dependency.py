"""seqlab.labs.dependency: dependency maps measured from the lab code."""

from __future__ import annotations

import numpy as np
import pytest

from seqlab.labs.attention import causal_mask
from seqlab.labs.dependency import KINDS, dependency_map, future_leaks


@pytest.mark.parametrize("num_tokens", [2, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_receptive_fields(num_tokens, seed):
    n = num_tokens
    past = np.tril(np.ones((n, n), dtype=bool))
    everything = np.ones((n, n), dtype=bool)
    expected = {"rnn": past, "birnn": everything, "causal_self_attention": past, "self_attention": everything,
                "cross_attention": np.hstack([np.eye(n, dtype=bool), np.ones((n, n + 1), dtype=bool)])}
    for kind in KINDS:
        result = dependency_map(kind, n, seed=seed)
        assert np.array_equal(result.depends, expected[kind]), kind
        # independent positions move by exactly nothing; dependent ones clearly
        assert np.all(result.change[~result.depends] == 0.0)
        assert np.all(result.change[result.depends] > 1e-4)
        assert len(result.output_labels) == n and len(result.input_labels) == result.depends.shape[1]


def test_rnn_influence_fades_with_distance():
    change = dependency_map("rnn", 6, seed=0).change
    # a nudge to x1 moves h1 most and later states less and less (contractive recurrence)
    assert np.all(np.diff(change[:, 0]) < 0)


def test_a_mask_bug_would_show_up(monkeypatch):
    # the map trusts nothing: swap the lab's causal mask for its transpose and the grid flips
    import seqlab.labs.dependency as dependency

    monkeypatch.setattr(dependency, "causal_mask", lambda n: causal_mask(n).T)
    depends = dependency_map("causal_self_attention", 4).depends
    assert np.array_equal(depends, np.triu(np.ones((4, 4), dtype=bool)))


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown kind 'lstm'"):
        dependency_map("lstm", 3)
    with pytest.raises(ValueError, match="num_tokens"):
        dependency_map("rnn", 0)


def test_future_leaks_are_measured_through_the_attention_lab():
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 3))
    assert future_leaks(q, k, v, causal_mask(4)) == []
    every_future_pair = [[i, j] for j in range(4) for i in range(j)]
    assert future_leaks(q, k, v, causal_mask(4).T) == every_future_pair
    assert future_leaks(q, k, v) == every_future_pair  # no mask at all: an encoder sees the future
