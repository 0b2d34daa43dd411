"""What a `seqlab learn check` child imports: torch, but not torch._dynamo (about 1.6 s per process),
which seqlab.model's attention used to import through torch.compiler.assume_constant_result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _imported(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys; print(' '.join(sys.modules))"],
                          env=env, capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_lm_references_and_mutants_do_not_import_torch_dynamo():
    modules = _imported("from seqlab.model import MultiHeadAttention, TransformerLM, TransformerBlock\n"
                        "import seqlab.model.attention, seqlab.learn.runner\n"
                        "from seqlab.learn.catalog import TORCH_NAMES, exercise\n"
                        "from seqlab.learn.judge import _call\n"
                        "def ran(f, cases):\n"              # on its first case that fits its shapes (swiglu's
                        "    for case in cases:\n"          # weights used as (in, out) run where d_ff = d_model)
                        "        try:\n"
                        "            return _call(f, case)\n"
                        "        except RuntimeError:\n"
                        "            pass\n"
                        "    raise RuntimeError(f'{f.__name__} ran on none of the cases')\n"
                        "for name in TORCH_NAMES:\n"
                        "    e = exercise(name)\n"
                        "    [ran(m.implementation, e.cases()) for m in e.mistakes if m.implementation]\n"
                        "from seqlab.training import AdamW, cross_entropy\nfrom seqlab.lm import get_batch")
    assert "torch" in modules and "seqlab.model.attention" in modules
    assert "torch._dynamo" not in modules


def test_the_torch_exercises_are_built_without_importing_torch():
    """Their check.py and seqlab.learn.kit_torch import torch inside functions: the checker's own process
    imports it while the child runs the student's code, not before."""
    modules = _imported("from seqlab.learn.catalog import TORCH_NAMES, exercise\n[exercise(n) for n in TORCH_NAMES]")
    assert "seqlab.learn.kit_torch" in modules and "seqlab.learn.course.transformer_lm.check" in modules
    assert "torch" not in modules


def test_checking_the_lm_references_does_not_import_torch_dynamo():
    modules = _imported("from seqlab.learn.catalog import exercise\n"
                        "from seqlab.learn.judge import _call\n"
                        "for name in ('adamw_step', 'transformer_lm'):\n"
                        "    e = exercise(name)\n"
                        "    [_call(e.reference(), c) for c in e.cases()]")
    assert "seqlab.model.transformer" in modules and "seqlab.training.optimizer" in modules
    assert "torch._dynamo" not in modules


def test_the_lazy_mark_is_what_torch_s_decorator_sets():
    import torch
    import torch._dynamo  # noqa: F401 - loaded here, so compare on fresh functions

    from seqlab.model import attention

    def ours():
        return 1

    def theirs():
        return 1

    saved = sys.modules.pop("torch._dynamo")
    try:
        attention._assume_constant_result(ours)
    finally:
        sys.modules["torch._dynamo"] = saved
    torch.compiler.assume_constant_result(theirs)
    assert vars(ours) == vars(theirs) and vars(theirs)
    assert vars(attention._flash_runs) == vars(theirs)


def test_the_child_program_imports_only_the_standard_library_numpy_torch_and_its_siblings():
    """The child runs without seqlab (inside the sandbox seqlab is not there): an import of anything
    else in seqlab/learn/child fails this test, the mutant below included."""
    import ast

    from seqlab.learn.runner import CHILD

    siblings = {p.stem for p in CHILD.glob("*.py")}

    def outside(source: str) -> list[str]:
        found = []
        for node in ast.walk(ast.parse(source)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in {"numpy", "torch"} | siblings:
                    found.append(name)
        return found

    for path in CHILD.glob("*.py"):
        assert outside(path.read_text(encoding="utf-8")) == [], path
    assert outside((CHILD / "main.py").read_text(encoding="utf-8") + "\nfrom seqlab.learn import compare\n") \
        == ["seqlab.learn"]
