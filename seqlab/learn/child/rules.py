"""An exercise's rules ("no torch.nn.functional", "no torch.softmax", ...), enforced in the child process
that runs a student's code: the runner's rules hook (three calls around a job).

- :func:`enter` (rules), before the student's file is imported: each forbidden function or class is
  replaced by one raising :class:`RuleBroken` with the rule and how to write it instead, so
  ``from torch.nn.functional import softmax`` is caught as well as ``F.softmax``;
- :func:`call` (function, args, kwargs, rules) -> (output, {"ops": n, "ops_before": m}): the call under a
  ``TorchDispatchMode`` that counts the aten operations dispatched (a Python loop over heads makes
  the count grow with the heads) and refuses the aten operations behind the forbidden functions
  (``aten._softmax``, ``aten.silu``, ...), a second net for paths around the first;
- :func:`leave` (): everything put back.

A breach the student's code catches is still reported: it is recorded when it happens and raised when
the call returns. ``rules`` is plain data: ``{"forbid": [group, ...]}``, groups of :data:`GROUPS`;
where two groups refuse one aten operation, the first listed names the rule.

Example: ``enter({"forbid": ["functional"]}); out, extra = call(f, (x,), {}, rules); leave()``.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import Any


class RuleBroken(Exception):
    """The student's code used what the exercise forbids (the runner reports the class by this name)."""


@dataclasses.dataclass(frozen=True)
class Group:
    rule: str                                  # the rule as the exercise's text says it
    names: tuple[str, ...] = ()                # dotted names of functions or methods that break it
    aten: tuple[str, ...] = ()                 # aten operation names (without "aten::") behind them
    instead: str = ""                          # how to write it instead (a group's default)


_SOFTMAX = "e = (x - x.amax(dim, keepdim=True)).exp(); e / e.sum(dim, keepdim=True), or your own softmax " \
           "(from softmax import softmax)"
_LOG_SOFTMAX = ("shifted = x - x.amax(-1, keepdim=True); shifted - shifted.exp().sum(-1, keepdim=True).log() "
                "(log-sum-exp with the maximum subtracted)")

# How to write each torch.nn.functional function with tensor operations (the functions the course
# meets; the others get the group's default).
INSTEAD: dict[str, str] = {
    "softmax": _SOFTMAX,
    "softmin": "softmax of -x: " + _SOFTMAX,
    "log_softmax": _LOG_SOFTMAX,
    "silu": "a * torch.sigmoid(a)",
    "sigmoid": "torch.sigmoid(x), the tensor operation",
    "tanh": "torch.tanh(x), the tensor operation",
    "relu": "x.clamp_min(0)",
    "gelu": "0.5 * x * (1 + torch.erf(x / math.sqrt(2)))",
    "linear": "x @ weight.T (+ bias)",
    "embedding": "weight[ids]",
    "one_hot": "logits.gather(-1, targets[..., None]) picks each target's entry without a one-hot matrix",
    "cross_entropy": "log-sum-exp with the maximum subtracted, minus logits.gather(-1, targets[..., None]), "
                     "averaged with .mean()",
    "nll_loss": "-log_probs.gather(-1, targets[..., None]).mean()",
    "scaled_dot_product_attention": "scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k); hidden keys' scores set to "
                                    "-inf with masked_fill; weights = your softmax of the scores; weights @ V",
    "multi_head_attention_forward": "the heads as a batch dimension: view the projections as (..., seq, heads, w), "
                                    "transpose to (..., heads, seq, w), attend, transpose back and reshape",
    "rms_norm": "x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight",
    "layer_norm": "(x - mean) / torch.sqrt(variance + eps) * weight + bias, over the last dimension",
    "normalize": "x / x.norm(dim=-1, keepdim=True).clamp_min(eps)",
    "dropout": "no dropout is needed here",
    "pad": "torch.cat with a block of zeros",
}

GROUPS: dict[str, Group] = {
    "functional": Group("no torch.nn.functional",
                        instead="write it with tensor operations (x @ w.T, .exp(), .sum(), torch.where, ...)"),
    "layers": Group("no torch.nn layers",
                    instead="the exercise gives you the weights as tensors: a layer's forward is tensor operations "
                            "on them (nn.Linear's is x @ weight.T)"),
    "optim": Group("no torch.optim",
                   instead="this exercise is the optimizer: write the update of p, m and v with tensor operations"),
    "softmax": Group("no torch.softmax or Tensor.softmax (nor their log_softmax)",
                     ("torch.softmax", "torch.log_softmax", "torch._softmax", "torch._log_softmax", "torch._safe_softmax",
                      "torch._masked_softmax", "torch.special.softmax", "torch.special.log_softmax",
                      "torch.Tensor.softmax", "torch.Tensor.log_softmax"),
                     ("_softmax", "_log_softmax", "_safe_softmax", "_masked_softmax"), _SOFTMAX),
    "attention": Group("no torch.nn.functional.scaled_dot_product_attention",
                       aten=("_safe_softmax", "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_attention_math",
                             "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                             "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_fused_attention_overrideable",
                             "_scaled_dot_product_attention_math_for_mps"),
                       instead=INSTEAD["scaled_dot_product_attention"]),
    "silu": Group("no torch.nn.functional.silu", aten=("silu", "silu_"), instead=INSTEAD["silu"]),
    "cross_entropy": Group("no torch.nn.functional.cross_entropy or nll_loss",
                           aten=("nll_loss_forward", "nll_loss2d_forward", "nll_loss", "nll_loss_nd"),
                           instead=INSTEAD["cross_entropy"]),
    "rms_norm": Group("no torch.rms_norm", ("torch.rms_norm",), ("_fused_rms_norm",), INSTEAD["rms_norm"]),
    "adam": Group("no torch.optim", ("torch._fused_adam_", "torch._fused_adamw_", "torch._fused_adam"),
                  ("_fused_adam_", "_fused_adamw_", "_fused_adam"),
                  "this exercise is the optimizer: write the update of p, m and v with tensor operations"),
}

# torch.nn classes a from-scratch model may use: the base class and the containers
ALLOWED_MODULES = frozenset({"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"})
# torch.nn.functional's helpers that are not functions of tensors
_NOT_FUNCTIONS = frozenset({"Optional", "boolean_dispatch", "handle_torch_function", "has_torch_function",
                            "has_torch_function_unary", "has_torch_function_variadic", "assert_int_or_pair"})

# what is swapped: (owner, attribute, the original, whether the owner's own __dict__ held it)
_swapped: list[tuple[Any, str, Any, bool]] = []
_breach: list[str] = []                      # the first rule broken since enter(), kept across calls
_refused: dict[str, str] = {}                # aten operation name -> the message of its rule
_counts: list[int] = []                      # the op counts of this job's calls so far


def check_rules(rules: dict) -> list[str]:
    """The groups ``rules`` forbids; a ValueError names an unknown one."""
    groups = list(rules.get("forbid", ()))
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown rule group(s) {unknown}; the groups are {sorted(GROUPS)}")
    return groups


def message(rule: str, used: str, instead: str) -> str:
    """The text of a RuleBroken: what was used, the rule, and how to write it instead."""
    return f"{used} breaks this exercise's rule \"{rule}\". Instead: {instead}."


def _record(text: str) -> RuleBroken:
    if not _breach:
        _breach.append(text)
    return RuleBroken(text)


def _raiser(dotted: str, text: str):
    def forbidden(*args, **kwargs):
        raise _record(text)
    forbidden.__name__ = forbidden.__qualname__ = dotted.rsplit(".", 1)[-1]
    forbidden.__doc__ = text
    forbidden.__wrapped_rule__ = text
    return forbidden


def _forbidden_class(cls: type, dotted: str, text: str) -> type:
    """A subclass of ``cls`` that cannot be made: isinstance() and issubclass() against it still work."""
    def __new__(klass, *args, **kwargs):
        raise _record(text)
    with warnings.catch_warnings():                       # deprecated classes warn when subclassed
        warnings.simplefilter("ignore")
        return type(cls.__name__, (cls,), {"__new__": __new__, "__module__": cls.__module__, "__doc__": text,
                                           "__qualname__": cls.__qualname__})


def _swap(owner, attribute: str, replacement) -> None:
    own = attribute in vars(owner) if isinstance(owner, type) else True
    _swapped.append((owner, attribute, getattr(owner, attribute), own))
    setattr(owner, attribute, replacement)


def _resolve(dotted: str):
    """(owner, attribute) of a dotted name such as "torch.Tensor.softmax", or None if torch has no such name."""
    import importlib
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part, None)
        return (owner, parts[-1]) if owner is not None and hasattr(owner, parts[-1]) else None
    return None


def _swap_classes(namespace, base: type, allowed, group: Group, where: str) -> None:
    """Every subclass of ``base`` in ``namespace`` (and in the module that defines it) except ``allowed``."""
    for name, value in list(vars(namespace).items()):
        if not (isinstance(value, type) and issubclass(value, base)) or name in allowed or name.startswith("_"):
            continue
        text = message(group.rule, f"{where}.{name}", group.instead)
        try:
            replacement = _forbidden_class(value, f"{where}.{name}", text)
        except TypeError:                                 # a class that cannot be subclassed
            replacement = _raiser(f"{where}.{name}", text)
        homes = {namespace, sys.modules.get(value.__module__)}
        for home in homes:
            if home is not None and getattr(home, name, None) is value:
                _swap(home, name, replacement)


def enter(rules: dict | None) -> None:
    """Replace what ``rules`` forbids (call before the student's file is imported; :func:`leave` undoes it)."""
    if _swapped or _refused or _counts:
        leave()
    if not rules:
        return
    groups = check_rules(rules)
    import torch
    import torch.nn.functional as F
    for key in groups:
        group = GROUPS[key]
        if key == "functional":
            for name, value in list(vars(F).items()):
                if name.startswith("_") or name in _NOT_FUNCTIONS or isinstance(value, type) or not callable(value) \
                        or type(value).__name__ == "module":
                    continue
                instead = INSTEAD.get(name, group.instead)
                _swap(F, name, _raiser(f"torch.nn.functional.{name}",
                                       message(group.rule, f"torch.nn.functional.{name}", instead)))
        elif key == "layers":
            _swap_classes(torch.nn, torch.nn.Module, ALLOWED_MODULES, group, "torch.nn")
            _swap_classes(torch.nn.modules, torch.nn.Module, ALLOWED_MODULES, group, "torch.nn")
        elif key == "optim":
            _swap_classes(torch.optim, torch.optim.Optimizer, {"Optimizer"}, group, "torch.optim")
        for dotted in group.names:
            found = _resolve(dotted)
            if found is not None:
                instead = INSTEAD.get(dotted.rsplit(".", 1)[-1].lstrip("_"), group.instead)
                _swap(*found, _raiser(dotted, message(group.rule, dotted, instead)))
        for op in group.aten:
            _refused.setdefault(op, message(group.rule, underneath(op), group.instead))


def underneath(op: str) -> str:
    """What a RuleBroken says was used when the aten operation ``op`` was refused."""
    return f"aten::{op} (what {_ATEN_SOURCES.get(op, 'a forbidden function')} runs underneath)"


_ATEN_SOURCES = {
    "_softmax": "torch.softmax, Tensor.softmax or torch.nn.functional.softmax",
    "_log_softmax": "torch.log_softmax, Tensor.log_softmax, torch.nn.functional.log_softmax or cross_entropy",
    "_safe_softmax": "torch.nn.functional.scaled_dot_product_attention",
    "silu": "torch.nn.functional.silu",
    "silu_": "torch.nn.functional.silu(inplace=True)",
    "nll_loss_forward": "torch.nn.functional.cross_entropy or nll_loss",
    "nll_loss2d_forward": "torch.nn.functional.cross_entropy or nll_loss",
    "_fused_rms_norm": "torch.rms_norm or torch.nn.functional.rms_norm",
    "_fused_adamw_": "torch.optim.AdamW(fused=True)",
    "_fused_adam_": "torch.optim.Adam(fused=True)",
} | {op: "torch.nn.functional.scaled_dot_product_attention" for op in GROUPS["attention"].aten}


def leave() -> None:
    """Put back everything :func:`enter` replaced, in reverse order."""
    while _swapped:
        owner, attribute, original, own = _swapped.pop()
        if own:
            setattr(owner, attribute, original)
        else:
            delattr(owner, attribute)
    _refused.clear()
    _breach.clear()
    _counts.clear()


def _mode():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Counting(TorchDispatchMode):
        """Counts every aten operation dispatched and refuses the forbidden ones."""

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch wraps a mode's __torch_dispatch__ in torch._dynamo.disable unless told not to, which
            # imports torch._dynamo (about 2-4 s) in a process that never compiles
            return False

        def __init__(self):
            super().__init__()
            self.ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops += 1
            name = func._schema.name.split("::", 1)[-1]
            if name in _refused:
                raise _record(_refused[name])
            return func(*args, **(kwargs or {}))

    return Counting()


def call(function, args: tuple, kwargs: dict, rules: dict | None) -> tuple[Any, dict]:
    """``function(*args, **kwargs)`` under the rules: (its output, {"ops": aten operations dispatched,
    "ops_before": the count of the job's previous call, or None}); an exercise compares the two on a
    case made with 4 times the heads of the case before it. Raises :class:`RuleBroken` if the call
    (or the import before it) broke a rule, even if the student's code caught the error."""
    if _breach:
        raise RuleBroken(_breach[0])
    if not rules:
        return function(*args, **kwargs), {}
    mode = _mode()
    try:
        with mode:
            output = function(*args, **kwargs)
    except BaseException as error:
        _counts.append(None)                                 # no count to compare the next call with
        if _breach and not isinstance(error, RuleBroken):   # the student's code caught it and failed otherwise
            raise RuleBroken(_breach[0]) from error
        raise
    if _breach:
        raise RuleBroken(_breach[0])
    before = _counts[-1] if _counts else None
    _counts.append(mode.ops)
    return output, {"ops": mode.ops, "ops_before": before}
