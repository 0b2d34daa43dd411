"""Word-level attention of a character model: the lecture's French -> English alignment figure.

The weight of output word i on source word j is the weight i's characters put on j's characters,
summed over j's characters and averaged over i's (``W_words = A_out @ W_chars @ S_src``). The last
row, ``</s>``, stays a row of its own; spaces belong to no word, so a row sums to 1 minus the
weight on the source's spaces. Source "ab c", output "x"::

    >>> import torch
    >>> weights = torch.tensor([[0.5, 0.25, 0.0, 0.25],
    ...                         [0.0, 0.0, 0.5, 0.5]])
    >>> words = word_alignment(weights, "ab c", "x")
    >>> words.source, words.output, words.weights.tolist()
    (['ab', 'c'], ['x', '</s>'], [[0.75, 0.25], [0.0, 0.5]])
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

END = "</s>"


@dataclass
class WordAlignment:
    source: list[str]       # source words
    output: list[str]       # output words, then "</s>"
    weights: torch.Tensor   # (..., len(output), len(source))


def word_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each whitespace-separated word: "le chat" -> [(0, 2), (3, 7)]."""
    return [match.span() for match in re.finditer(r"\S+", text)]


def _membership(spans: list[tuple[int, int]], length: int, *, mean: bool) -> torch.Tensor:
    """(len(spans), length): row w is 1 (or 1/len, ``mean``) on the characters of word w."""
    matrix = torch.zeros(len(spans), length, dtype=torch.float64)
    for row, (start, end) in enumerate(spans):
        matrix[row, start:end] = 1.0 / (end - start) if mean else 1.0
    return matrix


def word_alignment(weights: torch.Tensor, source: str, output: str) -> WordAlignment | None:
    """Character cross-attention ``weights`` (..., len(output) + 1, len(source)) -> word level
    (module docstring); any leading dimensions (layers, heads) are kept. None when the source has no
    word. Raises ValueError when the shape does not fit the texts (not a character model)."""
    if weights.shape[-2:] != (len(output) + 1, len(source)):
        raise ValueError(f"character attention of {len(output)} output and {len(source)} source characters "
                         f"must be (..., {len(output) + 1}, {len(source)}), got {tuple(weights.shape)}")
    source_spans, output_spans = word_spans(source), word_spans(output)
    if not source_spans:
        return None
    rows = _membership(output_spans, len(output) + 1, mean=True)
    end = torch.zeros(1, len(output) + 1, dtype=torch.float64)
    end[0, -1] = 1.0
    rows = torch.cat([rows, end])
    columns = _membership(source_spans, len(source), mean=False).T
    pooled = rows @ weights.double() @ columns
    return WordAlignment([source[a:b] for a, b in source_spans], [output[a:b] for a, b in output_spans] + [END],
                         pooled.to(weights.dtype))
