"""Sentences of the lessons that were wrong once, each checked against seqlab's code (the printed
numbers are the numbers: lines, tests/learn/test_lessons.py): truncated_bptt's Extend answer, run
as the lesson prints it under every BLAS kernel this CPU has; the GRU's parameter count and its
formula; the gate orders of other libraries; the note that slide pages are the course's; and a
line with "|" in it that is prose, not a table row."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.learn import lessons
from tests.learn.test_lesson_numbers_any_cpu import _settings

ROOT = Path(__file__).resolve().parents[2]
COURSE = ROOT / "seqlab" / "learn" / "course"

# the lesson's own code, each print() recorded: (chunk, final loss, the two hard predictions' probabilities)
_CHILD = """
import json, re, sys
source = open(sys.argv[1], encoding="utf-8").read()
code = re.search(r"```\\n(import numpy as np\\nfrom seqlab.labs import char_lm.*?)```", source, re.S).group(1)
code = code.replace("default_rng(7)", f"default_rng({int(sys.argv[2])})")
printed = []
exec(code, {"print": lambda chunk, loss, probs: printed.append([chunk, float(loss), [float(p) for p in probs]])})
print(json.dumps(printed))
"""


def _shorter_chunks(seed: int, setting: dict[str, str]) -> dict[int, tuple[float, list[float]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    env.update(setting, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(COURSE / "truncated_bptt" / "lesson.en.md"), str(seed)],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return {chunk: (loss, probs) for chunk, loss, probs in json.loads(done.stdout.strip().splitlines()[-1])}


@pytest.mark.parametrize(("seed", "setting"), [(7, s) for s in _settings()] + [(8, _settings()[0])],
                         ids=lambda v: v.get("OPENBLAS_CORETYPE", "one-thread") if isinstance(v, dict) else f"seed{v}")
def test_truncated_bptt_s_extend_answer_is_what_its_code_prints_on_any_cpu(seed, setting):
    """Full BPTT learns both hard predictions; chunks of 1 or 3 leave the loss tens to hundreds of times
    higher and never learn both (one of them may end nearly certain: that is chance, not a claim)."""
    runs = _shorter_chunks(seed, setting)
    assert sorted(runs) == [1, 3, 15]
    full_loss, full = runs[15]
    assert full_loss < 0.01 and min(full) > 0.99, runs
    for chunk in (1, 3):
        loss, probs = runs[chunk]
        assert loss > 20 * max(full_loss, 1e-4), runs
        assert min(probs) < 0.9, runs                   # never both hard predictions learned
    answer = " ".join(lessons.lesson("truncated_bptt", "en").text().split())
    assert "far from certain" not in answer and "never both learned" in answer
