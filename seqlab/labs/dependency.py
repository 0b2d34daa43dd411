"""Which output positions depend on which input positions, measured rather than drawn.

For each kind of sequence model, run the lab's own forward pass on random inputs, then nudge one
input position at a time and record which output positions move. The grid that comes out is the
model's receptive field over positions:

- ``rnn``: output t depends on inputs 1..t (lower triangle: the state only carries the past),
- ``birnn``: every output depends on every input (a second RNN reads right to left),
- ``causal_self_attention``: lower triangle again, now enforced by the mask,
- ``self_attention`` (an encoder, no mask): everything depends on everything,
- ``cross_attention``: target output i depends on its own target input (its query) and on every
  source position; the map is rectangular: num_tokens targets x (num_tokens targets + num_tokens + 1 sources).

Nothing is assumed: a future input that leaked through a buggy mask would show up as a dark cell.
`future_leaks` measures the same thing for one attention call (the explorer's leak check).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from seqlab.labs.attention import (
    attention,
    causal_mask,
    init_multihead_params,
    multihead_attention,
)
from seqlab.labs.rnn import init_rnn_params, rnn_hidden_forward
from seqlab.labs.stacked import bidirectional_rnn_forward

KINDS = ("rnn", "birnn", "causal_self_attention", "self_attention", "cross_attention")
WIDTH = 4  # feature width of every token (and the hidden size / d_model)
NUM_HEADS = 2


@dataclass
class DependencyMap:
    kind: str
    depends: np.ndarray  # (num_outputs, num_inputs) bool: output i moved when input j was nudged
    change: np.ndarray  # (num_outputs, num_inputs) largest |change| of output i's features
    output_labels: list[str]
    input_labels: list[str]


def _model(kind: str, num_tokens: int, rng: np.random.Generator) -> tuple[Callable, np.ndarray, list[str]]:
    """(forward: inputs (num_inputs, WIDTH) -> outputs (num_tokens, features), inputs, input labels)."""
    labels = [f"x{t + 1}" for t in range(num_tokens)]
    if kind == "rnn":
        params = init_rnn_params(WIDTH, WIDTH, None, rng)
        return (lambda xs: rnn_hidden_forward(params, xs)), rng.normal(size=(num_tokens, WIDTH)), labels
    if kind == "birnn":
        forward_params = init_rnn_params(WIDTH, WIDTH, None, rng)
        backward_params = init_rnn_params(WIDTH, WIDTH, None, rng)
        run = lambda xs: bidirectional_rnn_forward(forward_params, backward_params, xs)["states"]
        return run, rng.normal(size=(num_tokens, WIDTH)), labels
    if kind in ("causal_self_attention", "self_attention"):
        params = init_multihead_params(WIDTH, rng)
        mask = causal_mask(num_tokens) if kind == "causal_self_attention" else None
        run = lambda xs: multihead_attention(xs, xs, params, NUM_HEADS, mask)["output"]
        return run, rng.normal(size=(num_tokens, WIDTH)), labels
    if kind == "cross_attention":
        params = init_multihead_params(WIDTH, rng)
        num_source = num_tokens + 1  # a different length, so the map is visibly rectangular
        run = lambda xs: multihead_attention(xs[:num_tokens], xs[num_tokens:], params, NUM_HEADS)["output"]
        labels += [f"s{t + 1}" for t in range(num_source)]
        return run, rng.normal(size=(num_tokens + num_source, WIDTH)), labels
    raise ValueError(f"dependency_map: unknown kind {kind!r}; expected one of {', '.join(KINDS)}")


def dependency_map(kind: str, num_tokens: int, seed: int = 0) -> DependencyMap:
    """Measure which outputs depend on which inputs for a model `kind` over `num_tokens` positions.

    Each input row is nudged by a random vector; output i "depends" on input j when any of its
    features changes at all (unmasked paths change it by a clearly nonzero amount, masked or
    causally later ones by exactly zero). Returns a DependencyMap of (num_outputs, num_inputs) grids.
    """
    if not isinstance(num_tokens, (int, np.integer)) or num_tokens < 1:
        raise ValueError(f"dependency_map: num_tokens must be a positive int, got {num_tokens!r}")
    rng = np.random.default_rng(seed)
    forward, inputs, input_labels = _model(kind, int(num_tokens), rng)
    base = forward(inputs)
    change = np.zeros((base.shape[0], len(inputs)))
    for j in range(len(inputs)):
        nudged = inputs.copy()
        nudged[j] += rng.normal(size=WIDTH)
        change[:, j] = np.abs(forward(nudged) - base).max(axis=1)
    outputs = "y" if kind.endswith("attention") else "h"
    return DependencyMap(
        kind=kind,
        depends=change > 0.0,
        change=change,
        output_labels=[f"{outputs}{t + 1}" for t in range(base.shape[0])],
        input_labels=input_labels,
    )


def future_leaks(queries: np.ndarray, keys: np.ndarray, values: np.ndarray, mask=None) -> list[list[int]]:
    """Pairs [i, j], j > i, where output i of `attention(queries, keys, values, mask)` moves when
    value j is nudged: information leaking from the future. Measured, not read off the mask.

    queries (n, d), keys (m, d), values (m, dv), mask as for `attention`. A correct causal mask
    gives []; the transposed (wrong-way) mask gives every pair.
    """
    base = attention(queries, keys, values, mask)["output"]
    leaks = []
    for j in range(len(keys)):
        nudged = np.array(values, dtype=np.float64)
        nudged[j] += 1.0
        moved = attention(queries, keys, nudged, mask)["output"]
        leaks += [[i, j] for i in range(min(j, len(queries))) if not np.array_equal(moved[i], base[i])]
    return leaks
