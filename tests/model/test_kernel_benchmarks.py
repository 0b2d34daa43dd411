"""The kernel benchmark scripts run and print their tables (tiny sizes), and the CUDA-only one exits 2
with a message on a machine without CUDA."""

import pytest
import torch
from benchmark_scripts import load_benchmark

pytestmark = pytest.mark.usefixtures("one_thread")


def test_linear_cross_entropy_benchmark_prints_every_variant(capsys):
    script = load_benchmark("linear_cross_entropy")
    assert script.main(["--tokens", "64", "--vocab", "50", "--d-model", "8", "--chunks", "16,32",
                        "--repeats", "1", "--pad-vocab", "128"]) == 0
    out = capsys.readouterr().out
    for name in ("full (seqlab)", "full (F.cross_entropy)", "chunk=default", "chunk=16", "chunk=32",
                 "chunk=default pad=128"):
        assert name in out


def test_adamw_benchmark_prints_times_and_operation_counts(capsys):
    script = load_benchmark("adamw_foreach")
    assert script.main(["--layers", "1", "--d-model", "64", "--vocab", "32", "--steps", "1", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    lines = {line.split("  ")[0].strip(): line.split() for line in out.splitlines() if line.startswith("seqlab")}
    assert lines["seqlab AdamW foreach"][-1] == "13"  # two parameter groups: 7 + 6 foreach operations
    assert int(lines["seqlab AdamW loop"][-1]) > 13


def test_attention_benchmark_on_cpu_compares_the_cpu_backends(capsys):
    script = load_benchmark("attention_backends")
    assert script.main(["--device", "cpu", "--shapes", "small", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for name in ("reference", "chunked", "sdpa"):
        row = next(line for line in out.splitlines() if line.startswith(name))
        assert float(row.split()[-1]) < 1e-5  # max |diff| against the reference
    assert "flash      (CUDA only" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
@pytest.mark.parametrize("name, argv", [("attention_backends", []), ("linear_cross_entropy", ["--device", "cuda"]),
                                        ("adamw_foreach", ["--device", "cuda"])])
def test_cuda_runs_exit_2_without_cuda(name, argv, capsys):
    assert load_benchmark(name).main(argv) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
