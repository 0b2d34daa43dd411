"""seqlab.runtime: device resolution and the GPU peak table's name matching."""

import pytest
import torch

from seqlab.runtime import (
    PEAK_BF16_FLOPS,
    gpu_peak_bf16_flops,
    peak_flops,
    resolve_device,
)


@pytest.mark.parametrize("name, key", [
    ("NVIDIA H100 80GB HBM3", "H100"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA H200", "H200"),
    ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA L40", "L40"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("Tesla V100-SXM2-16GB", "V100"),
    ("Tesla T4", "T4"),
])
def test_gpu_names_match_their_own_entry_not_a_shorter_prefix(name, key):
    assert gpu_peak_bf16_flops(name) == PEAK_BF16_FLOPS[key]


def test_unknown_gpus_and_cpu_have_no_peak():
    assert gpu_peak_bf16_flops("NVIDIA GeForce GTX 1080") is None
    assert gpu_peak_bf16_flops("NVIDIA RTX 40") is None  # "RTX 4090" needs the whole word
    assert peak_flops(torch.device("cpu"), "bf16") is None


def test_resolve_device_cpu_and_unavailable_cuda():
    assert resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            resolve_device("cuda")
