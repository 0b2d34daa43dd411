"""Progress bars written to a file (not a terminal) write a line every 10%, not a redraw per update."""

from __future__ import annotations

import io

import pytest

from seqlab.progressbar import progress_bar
from tests.sweep.conftest import byte_data  # noqa: F401 (a fixture)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("total", [1000, 7, 250])
def test_a_file_gets_a_line_per_10_percent(total):
    from tqdm import tqdm

    log = io.StringIO()
    with progress_bar(total=total, file=log, desc="train", unit="step") as bar:
        for _ in range(total):
            bar.update(1)
            tqdm.write("a message between the lines", file=log) if bar.n == total // 2 else None
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = [line for line in text.splitlines() if line.startswith("train:")]
    # the oracle: the first update at or past each multiple of 10% (and the 0% line at the start)
    expected = sorted({0} | {next(n for n in range(1, total + 1) if 100 * n / total >= p) for p in range(10, 101, 10)})
    assert [int(line.split("|")[2].split("/")[0]) for line in lines] == expected
    assert "a message between the lines\n" in text


def test_a_terminal_keeps_tqdms_redrawn_bar():
    screen = Terminal()
    with progress_bar(total=5, file=screen, desc="t", mininterval=0) as bar:
        for _ in range(5):
            bar.update(1)
    assert "\r" in screen.getvalue()


def test_the_training_loop_writes_few_lines_to_a_log(byte_data, tmp_path, capfd):
    from seqlab.lm import train
    from tests.sweep.conftest import tiny_base

    train(tiny_base(byte_data, out_dir=str(tmp_path / "run"), max_steps=40, progress=True))
    err = capfd.readouterr().err
    bar_lines = [line for line in err.splitlines() if line.startswith("train:")]
    assert "\r" not in err and 2 <= len(bar_lines) <= 12
