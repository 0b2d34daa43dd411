"""seqlab.learn.static_rules: what the checked function can reach is read before anything runs. Its
denials (the exercise's own and those that guard the check), the generous allowance, the student's own
modules and tests, and a refusal that names the file, the line and what is allowed."""

from __future__ import annotations

import pytest

from seqlab.learn.catalog import all_exercises, exercise
from seqlab.learn.static_rules import refusal
from seqlab.learn.words import render
from tests.learn.bundle import student_source
from tests.learn.students import english_sentences, write_student

SOFTMAX_RULES = exercise("softmax").rules
TORCH = ("numpy", "torch")


def _refusal(tmp_path, source: str, name: str = "softmax", rules=SOFTMAX_RULES, packages=TORCH, others=None) -> str | None:
    for other, text in (others or {}).items():
        write_student(tmp_path, other, text)
    return refusal(write_student(tmp_path, name, source), name, rules, packages)


def test_honest_code_passes_imports_of_the_standard_library_and_the_student_s_own_modules(tmp_path):
    assert _refusal(tmp_path, """
        from __future__ import annotations
        import math, itertools, functools, heapq, collections, dataclasses, typing, re, json, random
        from collections import defaultdict
        import numpy as np
        import torch
        from torch import nn
        from helper import stable_exp
        import helper
        def softmax(x, dim=-1):
            e = stable_exp(x, dim)
            return e / e.sum(dim, keepdim=True) * helper.ONE
        class Scale(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(1))
        """, others={"helper": "import torch\nONE = 1.0\ndef stable_exp(x, dim):\n    return (x - x.amax(dim, keepdim=True)).exp()\n"}) \
        is None


def test_the_student_s_tests_and_main_block_are_not_the_checked_code(tmp_path):
    assert _refusal(tmp_path, """
        import torch
        import torch.nn.functional as F                  # imported, but used only by the test
        def softmax(x, dim=-1):
            e = (x - x.amax(dim, keepdim=True)).exp()
            return e / e.sum(dim, keepdim=True)
        def test_softmax():
            import threading, subprocess
            x = torch.randn(3, 4)
            assert torch.allclose(softmax(x), F.softmax(x, -1))
        if __name__ == "__main__":
            import ctypes
            test_softmax()
        """) is None


def test_what_the_checked_function_reaches_is_checked_in_its_helpers_and_other_files(tmp_path):
    said = _refusal(tmp_path, """
        import torch
        from shortcut import fast
        def softmax(x, dim=-1):
            return fast(x, dim)
        """, others={"shortcut": "import torch\ndef unused():\n    pass\ndef fast(x, dim):\n    return torch.softmax(x, dim)\n"})
    assert said.startswith("shortcut.py, line 5: torch.softmax breaks this exercise's rule")
    said = _refusal(tmp_path / "b", """
        import torch
        def helper(x):
            return torch.nn.functional.softmax(x, -1)
        def softmax(x, dim=-1):
            return helper(x)
        """)
    assert said.startswith("softmax.py, line 4: torch.nn.functional.softmax breaks this exercise's rule \"no torch.nn.functional\"")
    assert "Instead: e = (x - x.amax(dim, keepdim=True)).exp()" in said


@pytest.mark.parametrize(("line", "said"), [
    ("import threading", "import threading is not allowed in an exercise's code: threads and processes run outside"),
    ("import multiprocessing", "import multiprocessing is not allowed"),
    ("from concurrent.futures import ThreadPoolExecutor", "import concurrent.futures is not allowed"),
    ("import ctypes", "import ctypes is not allowed in an exercise's code: it reaches native memory"),
    ("import subprocess", "import subprocess is not allowed"),
    ("import importlib", "import importlib is not allowed in an exercise's code: it runs code the rules cannot read"),
    ("X = __import__('torch')", "__import__ is not allowed"),
    ("X = eval('1')", "eval is not allowed"),
    ("exec('x = 1')", "exec is not allowed"),
    ("X = compile('1', 'f', 'eval')", "compile is not allowed"),
    ("X = ().__class__.__base__.__subclasses__()", ".__subclasses__ is not allowed"),
    ("X = softmax.__globals__", ".__globals__ is not allowed"),
    ("X = __builtins__", "__builtins__ is not allowed"),
    ("import sys\nX = sys.modules", "sys.modules is not allowed"),
    ("import sys\nX = sys._getframe()", "sys._getframe is not allowed"),
    ("X = getattr(softmax, '__globals__')", ".__globals__ is not allowed"),
    ("import torch\nX = getattr(torch.nn, 'functional').softmax", "torch.nn.functional.softmax breaks"),
    ("import torch\nX = torch._C", "torch._C is not allowed"),
    ("import torch\nX = torch.ops.aten._softmax", "torch.ops.aten._softmax is not allowed"),
    ("from torch.utils._python_dispatch import TorchDispatchMode", "import torch.utils._python_dispatch is not allowed"),
    ("import numpy as np\nX = np.ctypeslib", "numpy.ctypeslib is not allowed"),
    ("import os\nos.fork()", "os.fork is not allowed"),
    ("import os\nos.execv('/bin/sh', [])", "os.execv is not allowed"),
    ("from os import kill", "os.kill is not allowed"),
    ("import gc", "import gc is not allowed"),
    ("import inspect", "import inspect is not allowed"),
    ("import pickle", "import pickle is not allowed"),
    ("import socket", "import socket: socket is not among the modules the checked code may use"),
    ("import requests", "import requests: there is no module requests where your code is checked"),
    ("import seqlab", "import seqlab is not allowed in an exercise's code: seqlab's own code is not there"),
    ("from seqlab.model import softmax as ours", "import seqlab.model is not allowed"),
    ("import __main__", "import __main__ is not allowed"),
    ("from . import helper", "from . import ... is a relative import"),
    ("import torch\nX = torch.nn.Linear(2, 2)", "torch.nn.Linear breaks this exercise's rule \"no torch.nn layers\""),
    ("from torch.nn import Linear", "torch.nn.Linear breaks this exercise's rule \"no torch.nn layers\""),
    ("import torch\nX = torch.softmax", "torch.softmax breaks this exercise's rule \"no torch.softmax or Tensor.softmax"),
])
def test_each_denial_names_the_line_and_what_is_allowed(tmp_path, line, said):
    source = f"import torch\n{line}\ndef softmax(x, dim=-1):\n    return x\n"
    found = refusal(write_student(tmp_path, "softmax", source), "softmax", SOFTMAX_RULES, TORCH)
    assert found is not None and found.startswith("softmax.py, line ") and said in found, found
    assert "Allowed: numpy and torch (under this exercise's rules: no torch.nn.functional;" in found
    assert "your own modules beside the file (from softmax import softmax)" in found
    zh = render(found.said, "zh")                  # the same in Chinese: the code as it is, no English sentence
    assert zh.startswith("softmax.py，第 ") and "允许使用：numpy 和 torch" in zh and not english_sentences(zh), zh


def test_the_exercise_s_own_denials_come_from_its_rules(tmp_path):
    source = "import torch\ndef f(x):\n    return torch.nn.functional.relu(x) + torch.optim.SGD\n"
    path = write_student(tmp_path, "f", source)
    assert refusal(path, "f", None, TORCH) is None                     # no rules: the library is there
    assert "no torch.nn.functional" in refusal(path, "f", {"forbid": ["functional"]}, TORCH)
    optim = write_student(tmp_path / "o", "f", "import torch\ndef f(p):\n    return torch.optim.Optimizer, torch.optim.AdamW\n")
    assert "torch.optim.AdamW breaks this exercise's rule \"no torch.optim\"" in refusal(optim, "f", {"forbid": ["optim"]}, TORCH)


def test_a_package_the_exercise_does_not_allow_is_refused(tmp_path):
    path = write_student(tmp_path, "causal_mask", "import torch\ndef causal_mask(n):\n    return torch.ones(n)\n")
    assert "import torch: there is no module torch where your code is checked" in refusal(path, "causal_mask")
    bpe = exercise("train_bpe")
    ok = write_student(tmp_path / "bpe", "train_bpe", "import regex\nfrom seqlab.tokenizer import gpt2_pretokenize\n"
                                                       "def train_bpe(p, v, s):\n    return gpt2_pretokenize('a')\n")
    job = bpe.job(ok, [])
    assert refusal(ok, "train_bpe", job.rules, job.packages, tuple(job.helpers)) is None     # the one helper allowed
    other = write_student(tmp_path / "bpe2", "train_bpe", "from seqlab.tokenizer.trainer import train_bpe\n")
    assert "import seqlab.tokenizer.trainer is not allowed" in refusal(other, "train_bpe", job.rules, job.packages,
                                                                       tuple(job.helpers))


@pytest.mark.parametrize("name", [e.name for e in all_exercises()])
def test_every_stub_and_every_self_contained_reference_keep_the_rules(tmp_path, name):
    from seqlab.learn.workspace import stub_text
    ex = exercise(name)
    for label, source in (("stub", stub_text(ex)), ("reference", student_source(name))):
        path = write_student(tmp_path / label, name, source)
        job = ex.job(path, [])
        assert refusal(path, name, job.rules, job.packages, tuple(job.helpers)) is None, label
