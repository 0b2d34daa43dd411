"""Every number a lesson prints holds on another CPU: each is recomputed in a child process with another
OpenBLAS kernel (set before numpy is imported) and one BLAS thread, and must still agree with the
lesson at its printed precision.

A near tie (the reset "hello" model's 50/50 between l and o) is decided by float rounding, and OpenBLAS
picks its kernel from the CPU (SkylakeX where AVX-512 is, Haswell, Zen, Sandybridge), so a lesson
that printed such a number would pass on one machine and fail on the next. Only kernels this CPU
supports are named: a kernel whose instructions the CPU lacks crashes the child.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.learn import lesson_checks, lessons
from seqlab.learn.path import STEPS

WRITTEN = [s.id for s in STEPS if lessons.has_lesson(s.id, "en")]

_CHILD = """
import json, sys
from seqlab.learn import lesson_checks
print(json.dumps({step: lesson_checks.number_values(step) for step in sys.argv[1:]}))
"""

# OpenBLAS's x86-64 kernels and the instructions each needs (its own dynamic-arch checks, simplified).
_KERNEL_NEEDS = {
    "Sandybridge": {"avx"},
    "Haswell": {"avx", "avx2", "fma"},
    "SkylakeX": {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"},
}


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _settings() -> list[dict[str, str]]:
    """One BLAS thread with the default kernel, then each kernel the CPU can run, also on one thread."""
    one_thread = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    flags = _cpu_flags()
    kernels = [k for k, needs in _KERNEL_NEEDS.items() if needs <= flags]
    return [one_thread] + [dict(one_thread, OPENBLAS_CORETYPE=k) for k in kernels]


def _values_under(setting: dict[str, str]) -> dict[str, list]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_", "MKL_"))}
    env.update(setting)
    done = subprocess.run([sys.executable, "-c", _CHILD, *WRITTEN], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{setting}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("setting", _settings(), ids=lambda s: s.get("OPENBLAS_CORETYPE", "one-thread"))
def test_every_printed_number_holds_under_another_blas_kernel_and_one_thread(setting):
    values = _values_under(setting)
    found = [m for step in WRITTEN for m in lesson_checks.printed_mismatches(step, values[step])]
    assert found == [], "\n".join(found)


def test_a_near_tie_printed_to_six_places_is_caught_when_rounding_flips_it(monkeypatch):
    """The mutant: the values the reset model gave with the SkylakeX kernel, against the old text that
    printed the Haswell kernel's 0.348777 / 0.508962 / 0.489084."""
    step = "rnn_forward"
    en = lessons.lesson(step, "en")
    k = next(i for i, (_shown, expression) in enumerate(en.numbers) if "reset_state=True" in expression)
    skylake = lesson_checks.number_values(step)
    skylake[k] = [0.3487283075326387, 0.49286729174630356, 0.5051666402393916]
    assert lesson_checks.printed_mismatches(step, skylake) == []  # the lesson now prints only what is stable
    old_numbers = [("0.348777 0.508962 0.489084" if i == k else s, e) for i, (s, e) in enumerate(en.numbers)]
    old = dataclasses.replace(en, numbers=old_numbers)
    monkeypatch.setattr(lesson_checks, "lesson", lambda s, lang="en": old)
    found = lesson_checks.printed_mismatches(step, skylake)
    assert any("prints 0.508962" in f for f in found) and any("prints 0.348777" in f for f in found), found
