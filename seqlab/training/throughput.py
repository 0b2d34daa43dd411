"""Training throughput: tokens per second of the optimizer steps, leaving out steps that compile.

The first step of a ``torch.compile``d model includes the compilation (seconds to minutes), so
counting it would understate the speed of every later step. Example: steps of 0.1 s after a
first step of 30 s give 10 steps/s, not 1/3.09 s.

A step's tokens are ``tokens_per_step`` unless given (a seq2seq batch holds as many target tokens
as its examples have).
"""

from __future__ import annotations


class Throughput:
    """Accumulates step times; ``excluded`` lists the (1-based) steps left out and why."""

    def __init__(self, tokens_per_step: int) -> None:
        self.tokens_per_step = tokens_per_step
        self.seconds = 0.0
        self.tokens = 0
        self.steps = 0
        self.smooth: float | None = None         # moving averages of the step time ...
        self.smooth_tokens: float | None = None  # ... and of its tokens, for the progress bar
        self.excluded: list[int] = []

    def add(self, step: int, seconds: float, *, exclude: bool = False, tokens: int | None = None) -> None:
        if exclude:
            self.excluded.append(step)
            return
        tokens = self.tokens_per_step if tokens is None else tokens
        self.seconds += seconds
        self.tokens += tokens
        self.steps += 1
        self.smooth = seconds if self.smooth is None else 0.9 * self.smooth + 0.1 * seconds
        self.smooth_tokens = tokens if self.smooth_tokens is None else 0.9 * self.smooth_tokens + 0.1 * tokens

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds else 0.0

    @property
    def current(self) -> float | None:
        """Smoothed tokens/s of the recent steps (None before the first counted step)."""
        return self.smooth_tokens / self.smooth if self.smooth else None
