"""Progress bars that suit where they are written: tqdm's redrawn bar on a terminal, and in a log
file (output redirected, a batch job, CI) one plain line every 10% instead of thousands of
carriage-return redraws.

Example: ``seqlab train ... 2> train.log`` with 5,000 steps writes 11 lines (0% ... 100%) to
train.log; a bar without a total (a time budget) writes a line every 30 seconds and one at the end.
"""

from __future__ import annotations

import sys
import time
from typing import Any

LINE_EVERY_PERCENT = 10
LINE_EVERY_SECONDS = 30.0  # for bars without a total


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


def progress_bar(*args: Any, **kwargs: Any):
    """``tqdm(*args, **kwargs)`` on a terminal; elsewhere a tqdm that writes a line every
    :data:`LINE_EVERY_PERCENT` percent (every :data:`LINE_EVERY_SECONDS` without a total)."""
    from tqdm import tqdm

    stream = kwargs.get("file") or sys.stderr
    if kwargs.get("disable") or is_terminal(stream):
        return tqdm(*args, **kwargs)
    return _line_class(tqdm)(*args, **{**kwargs, "dynamic_ncols": False, "ncols": 100})


_LINE_CLASS = None


def _line_class(tqdm: type) -> type:
    global _LINE_CLASS
    if _LINE_CLASS is not None:
        return _LINE_CLASS

    class LineProgress(tqdm):
        """tqdm writing whole lines at 10% steps (or 30 s) and at the end, never a redraw."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self._next_percent = 0
            self._last_line = -float("inf")
            self._closing = False
            super().__init__(*args, mininterval=0, miniters=1, **kwargs)

        def _due(self) -> bool:
            if self._closing:
                return True
            if self.total:
                percent = 100 * self.n / self.total
                if percent >= self._next_percent:
                    self._next_percent = (int(percent) // LINE_EVERY_PERCENT + 1) * LINE_EVERY_PERCENT
                    return True
                return False
            now = time.monotonic()
            if now - self._last_line >= LINE_EVERY_SECONDS:
                self._last_line = now
                return True
            return False

        def display(self, msg: str | None = None, pos: int | None = None) -> bool:
            if msg is not None:  # "" clears a bar: nothing to clear in a file
                return False
            if not self._due():
                return True
            line = self.__str__().strip()
            self.fp.write(line if self._closing else line + "\n")  # close() ends the last line itself
            self.fp.flush()
            return True

        def clear(self, nolock: bool = False) -> None:
            """Nothing to clear: the lines written stay (tqdm.write's messages go between them)."""

        def close(self) -> None:
            if self.disable:
                return super().close()
            if self.total and self.n >= self.total and self._next_percent > 100:
                self.leave = False  # the 100% line is written already
            self._closing = True
            super().close()

    _LINE_CLASS = LineProgress
    return LineProgress
