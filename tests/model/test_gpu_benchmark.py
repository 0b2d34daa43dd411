"""benchmarks/gpu_train.py stays ready for a GPU: exact peak-FLOP/s matching and a clear exit without CUDA."""

import pytest
import torch
from benchmark_scripts import load_benchmark

from seqlab.runtime import PEAK_BF16_FLOPS, gpu_peak_bf16_flops


@pytest.fixture(scope="module")
def gpu_train():
    return load_benchmark("gpu_train")


@pytest.mark.parametrize("name, key", [
    ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"),  # its own entry, not the L4's
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("Tesla T4", "T4"),
])
def test_peak_is_matched_by_whole_words_of_the_gpu_name(name, key):
    """gpu_train.py reads the peak through seqlab.runtime.gpu_peak_bf16_flops."""
    assert gpu_peak_bf16_flops(name) == PEAK_BF16_FLOPS[key]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_without_cuda_it_exits_2_and_says_why(gpu_train, capsys):
    assert gpu_train.main(["--steps", "3", "--warmup", "1"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
