"""Every gradient check of the labs passes on any CPU: each runs again in a child process with another
OpenBLAS kernel (set before numpy is imported) and one BLAS thread. Only kernels this CPU can run are
named (one it lacks crashes the child): with Sandybridge's, an entry of 1e-4 once failed at 1.1e-7."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.labs.checks import GRADIENT_CHECKS
from seqlab.labs.gradcheck import TOLERANCE

# x86-64 kernels of OpenBLAS and the CPU flags each one's instructions need
KERNELS = {"Sandybridge": {"avx"}, "Haswell": {"avx", "avx2", "fma"},
           "SkylakeX": {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512dq", "avx512vl"}}
CHILD = """
import json
from seqlab.labs.checks import GRADIENT_CHECKS
print(json.dumps({name: check() for name, check in GRADIENT_CHECKS.items()}))
"""


def kernels_here() -> list[str]:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.is_file() else []
    flags = next((set(line.split(":", 1)[1].split()) for line in lines if line.startswith("flags")), set())
    return [kernel for kernel, needs in KERNELS.items() if needs <= flags]


@pytest.mark.parametrize("kernel", [None, *kernels_here()], ids=lambda k: k or "one-thread")
def test_every_gradient_check_passes_under_another_blas_kernel(kernel):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_"))}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", **({"OPENBLAS_CORETYPE": kernel} if kernel else {}))
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2]), env.get("PYTHONPATH", "")])
    child = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-2000:]
    errors = json.loads(child.stdout.strip().splitlines()[-1])
    assert sorted(errors) == sorted(GRADIENT_CHECKS)
    failed = {name: worst for name, checks in errors.items() if (worst := max(checks.values())) >= TOLERANCE}
    assert failed == {}
