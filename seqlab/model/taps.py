"""Taps: named points inside every seqlab model where an activation can be read or replaced.

A model's forward takes ``taps=`` the way it takes a KV cache, as an optional argument; without it
the training step's operations are those of before taps existed (tests/model/test_taps_cost.py).
Each named point is offered to the Taps object, which keeps the value (``read``) or replaces it
with what an edit function returns (``edit``)::

    taps = Taps(read=["layers.*.attn.pattern", "layers.1.resid_pre"])
    logits = model(ids, taps=taps)
    taps.cache["layers.0.attn.pattern"]          # (batch, heads, queries, keys)
    model(other, taps=Taps(edit={"layers.1.resid_pre": lambda x, point: clean}))

Names follow the module tree, each per-layer point with its layer's index (:data:`POINTS`; ``*``
matches any characters). An edit gets the value and a :class:`TapPoint` (name, and a recurrent
state's time ``step``: a state replaced at step t is what step t + 1 reads). Optional work
(attention scores and weights, which switch the layer to the reference formula; each head's output;
the final norm's scale) runs only when read or edited. ``Taps(enter={k: rows})`` starts extra batch
rows at layer k of a Transformer LM. The cache (:class:`ActivationCache`) also answers to
TransformerLens's names. Without taps a forward runs the same code with :data:`NO_TAPS`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

import torch

EditFunction = Callable[[Any, "TapPoint"], Any]

# every model's points ("{i}": a layer index); seqlab.interpret and docs/interpret.md read these
POINTS: dict[str, tuple[str, ...]] = {
    "TransformerLM": (
        "embed", "layers.{i}.resid_pre", "layers.{i}.attn.q", "layers.{i}.attn.k", "layers.{i}.attn.v",
        "layers.{i}.attn.scores", "layers.{i}.attn.pattern", "layers.{i}.attn.z", "layers.{i}.attn.head_out",
        "layers.{i}.attn_out", "layers.{i}.resid_mid", "layers.{i}.mlp_out", "layers.{i}.resid_post",
        "ln_final.scale", "ln_final.normalized",
    ),
    "TransformerSeq2Seq": (
        "encoder.embed", "encoder.layers.{i}.resid_pre", "encoder.layers.{i}.attn.pattern",
        "encoder.layers.{i}.attn.head_out", "encoder.layers.{i}.attn_out", "encoder.layers.{i}.resid_mid",
        "encoder.layers.{i}.mlp_out", "encoder.layers.{i}.resid_post", "encoder.output",
        "decoder.embed", "decoder.layers.{i}.resid_pre", "decoder.layers.{i}.self_attn.pattern",
        "decoder.layers.{i}.self_attn_out", "decoder.layers.{i}.resid_mid", "decoder.layers.{i}.cross_attn.scores",
        "decoder.layers.{i}.cross_attn.pattern", "decoder.layers.{i}.cross_attn.head_out",
        "decoder.layers.{i}.cross_attn_out", "decoder.layers.{i}.resid_mid_cross", "decoder.layers.{i}.mlp_out",
        "decoder.layers.{i}.resid_post", "decoder.ln_final.scale", "decoder.output",
    ),
    "RNNSeq2Seq": (
        "encoder.embed", "encoder.layers.{i}.state", "encoder.layers.{i}.cell", "encoder.output",
        "decoder.embed", "decoder.initial", "decoder.layers.{i}.state", "decoder.layers.{i}.cell",
        "decoder.cross_attn.scores", "decoder.cross_attn.pattern", "decoder.context", "decoder.output",
    ),
}
# the attention whose weights attention_patterns returns: a language model's self-attention, an
# encoder-decoder's cross-attention over the source
PATTERNS = {"TransformerLM": "layers.*.attn.pattern", "TransformerSeq2Seq": "decoder.layers.*.cross_attn.pattern",
            "RNNSeq2Seq": "decoder.cross_attn.pattern"}
# attention points under a MultiHeadAttention's own prefix (…attn., …self_attn., …cross_attn.)
ATTENTION_POINTS = ("q", "k", "v", "scores", "pattern", "z", "head_out")


@dataclass(frozen=True)
class TapPoint:
    """Where an edit function is called: the point's full name, and the time step of a recurrent state."""

    name: str
    step: int | None = None


class _Scope:
    """The Taps of one module: names relative to ``prefix``."""

    __slots__ = ("root", "prefix")

    def __init__(self, root: "Taps", prefix: str):
        self.root, self.prefix = root, prefix

    def name(self, point: str) -> str:
        return f"{self.prefix}.{point}" if self.prefix else point

    def scope(self, sub: str) -> "_Scope":
        """The taps of a submodule, e.g. ``taps.scope("layers.2")``."""
        return _Scope(self.root, self.name(sub))

    def wants(self, point: str) -> bool:
        """Whether ``point`` is read or edited (so that a module computes an optional value only then)."""
        return self.root.wants(self.name(point))

    def tap(self, point: str, value: Any, step: int | None = None) -> Any:
        """Offer ``value`` at ``point``: kept if read, replaced by the edit's result if edited."""
        return self.root.offer(self.name(point), value, step)

    def enter(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        return self.root.enter_rows(layer, x)


class _NoTaps:
    """The taps of a forward pass given none (:data:`NO_TAPS`): nothing is wanted, every value passes
    through unchanged and no optional work runs, so a model has one forward path with or without taps."""

    __slots__ = ()

    def scope(self, sub: str) -> "_NoTaps":
        return self

    def wants(self, point: str) -> bool:
        return False

    def tap(self, point: str, value: Any, step: int | None = None) -> Any:
        return value

    def enter(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        return x


NO_TAPS = _NoTaps()


def or_none(taps: Any) -> Any:
    """``taps``, or :data:`NO_TAPS` for None: what a forward that takes ``taps=None`` works with."""
    return NO_TAPS if taps is None else taps


class Taps(_Scope):
    """What one forward pass reads and edits (module docstring).

    read: names or ``*`` patterns to keep in :attr:`cache`, or ``True`` for every point.
    edit: {name or pattern: fn(value, point) -> value}. TransformerLens names of the LM's points
        (``blocks.{i}.hook_resid_pre``, ...) are accepted in both and translated.
    enter: {layer: rows (n, seq, d_model)}: rows that join a Transformer LM's batch at that layer.

    One Taps object serves one forward pass (the cache of a second pass would mix with the first's).
    """

    __slots__ = ("read", "edits", "entering", "cache", "_wanted", "_editor")

    def __init__(self, read: bool | Iterable[str] = (), edit: Mapping[str, EditFunction] | None = None, *,
                 enter: Mapping[int, torch.Tensor] | None = None):
        super().__init__(self, "")
        if read is True:
            self.read: tuple[str, ...] | bool = True
        elif read is False or read is None:
            self.read = ()
        elif isinstance(read, str):
            raise TypeError(f"read takes a list of names or patterns, got the string {read!r}; write [{read!r}]")
        else:
            self.read = tuple(_seqlab_name(name) for name in read)
        self.edits: list[tuple[str, EditFunction]] = []
        for name, fn in (edit or {}).items():
            if not callable(fn):
                raise TypeError(f"edit[{name!r}] must be a function (value, point) -> value, got {type(fn).__name__}")
            self.edits.append((_seqlab_name(name), _tl_edit(name, fn)))
        self.entering = dict(enter or {})
        self.cache = ActivationCache()
        self._wanted: dict[str, bool] = {}
        self._editor: dict[str, EditFunction | None] = {}

    def _reads(self, name: str) -> bool:
        return self.read is True or any(name == p or fnmatchcase(name, p) for p in self.read)

    def _edit_of(self, name: str) -> EditFunction | None:
        if name not in self._editor:
            found = [fn for pattern, fn in self.edits if name == pattern or fnmatchcase(name, pattern)]
            if len(found) > 1:
                raise ValueError(f"{len(found)} edits match the tap point {name!r}; give each point one edit")
            self._editor[name] = found[0] if found else None
        return self._editor[name]

    def wants(self, name: str) -> bool:  # type: ignore[override]
        if name not in self._wanted:
            self._wanted[name] = self._reads(name) or self._edit_of(name) is not None
        return self._wanted[name]

    def offer(self, name: str, value: Any, step: int | None = None) -> Any:
        if not self.wants(name):
            return value
        fn = self._edit_of(name)
        if fn is not None:
            value = fn(value, TapPoint(name, step))
        if self._reads(name):
            self.cache._keep(name, value, step)
        return value

    def enter_rows(self, layer: int, x: torch.Tensor) -> torch.Tensor:
        rows = self.entering.get(layer)
        if rows is None:
            return x
        if rows.shape[1:] != x.shape[1:]:
            raise ValueError(f"rows entering layer {layer} have shape {tuple(rows.shape)}, but the batch there is "
                             f"{tuple(x.shape)}: give (rows, {', '.join(str(s) for s in x.shape[1:])})")
        return torch.cat((x, rows.to(x.dtype)))

    def names(self) -> list[str]:
        """The names kept so far (the cache's keys)."""
        return list(self.cache)


def attention_patterns(model: Any, *inputs: torch.Tensor) -> torch.Tensor:
    """The one way to get a model's attention weights: (layers, batch, heads, queries, keys), read
    through the taps in one forward pass without gradients (:data:`PATTERNS` says which attention).

    A language model reads ``attention_patterns(model, ids)``, ids (batch, seq): its self-attention.
    An encoder-decoder reads ``attention_patterns(model, src_ids, tgt_ids)`` (tgt_ids = BOS + target):
    its cross-attention over the source, (layers, batch, heads, T, S); an RNN with attention has one
    layer of one head, the plain RNN none (shape (0,)): its decoder sees only the final encoder state.
    """
    name = PATTERNS.get(type(model).__name__)
    if name is None:
        raise TypeError(f"attention_patterns reads a seqlab TransformerLM or encoder-decoder, got "
                        f"{type(model).__name__}")
    taps = Taps(read=[name])
    with torch.no_grad():
        model(*inputs, return_hidden=True, taps=taps)
    return taps.cache.stack(name) if len(taps.cache) else torch.zeros(0)


# --- the cache ------------------------------------------------------------------------------------
class ActivationCache(Mapping):
    """Name -> tensor, in the order the forward pass computed them (module docstring).

    A recurrent state offered step by step is stacked on first access: (batch, steps, ...).
    TransformerLens names of an LM's points are translated (:func:`tl_name`), with their shapes.
    """

    def __init__(self, values: Mapping[str, Any] | None = None):
        self._values: dict[str, Any] = dict(values or {})
        self._steps: dict[str, list] = {}

    def _keep(self, name: str, value: Any, step: int | None) -> None:
        if step is None:
            self._values[name] = value
        else:
            self._values.setdefault(name, None)
            self._steps.setdefault(name, []).append(value)

    def _get(self, name: str) -> Any:
        if name in self._steps:
            self._values[name] = torch.stack(self._steps.pop(name), dim=1)
        return self._values[name]

    def __getitem__(self, key: str | tuple) -> Any:
        if isinstance(key, tuple):
            key = _short_name(*key)
        if key in self._values:
            return self._get(key)
        translated = _TL.translate(key)
        if translated is not None and translated[0] in self._values:
            name, transpose = translated
            value = self._get(name)
            return value.transpose(1, 2) if transpose else value
        known = ", ".join(list(self._values)[:12]) + (" ..." if len(self._values) > 12 else "")
        raise KeyError(f"no tap point {key!r} in this cache; it holds {known or 'nothing'} (read it with "
                       f"Taps(read=[{key!r}]) or Taps(read=True))")

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    def stack(self, pattern: str) -> torch.Tensor:
        """The values of every name matching ``pattern`` (``layers.*.resid_post``), stacked in layer order."""
        names = [n for n in self._values if fnmatchcase(n, pattern)]
        if not names:
            raise KeyError(f"no tap point matches {pattern!r}")
        names.sort(key=lambda n: [int(p) if p.isdigit() else p for p in n.split(".")])
        return torch.stack([self._get(n) for n in names])

    def accumulated_resid(self) -> torch.Tensor:
        """A Transformer LM's residual stream entering each layer and after the last: (L + 1, batch, seq, d)."""
        pre = self.stack("layers.*.resid_pre")
        post = self._get(f"layers.{pre.shape[0] - 1}.resid_post")
        return torch.cat((pre, post[None]))

    def __repr__(self) -> str:
        return f"ActivationCache({len(self)} points: {', '.join(list(self._values)[:6])}{' ...' if len(self) > 6 else ''})"


# --- TransformerLens's names for the LM's points ---------------------------------------------------
# (TransformerLens name pattern, seqlab name, transposed): TL's q, k, v and z are (batch, pos, head,
# d_head); seqlab keeps heads before positions, (batch, head, pos, d_head), so those two swap dims
_TL_PAIRS = (
    (r"hook_embed", "embed", False),
    (r"blocks\.(\d+)\.hook_resid_pre", "layers.{0}.resid_pre", False),
    (r"blocks\.(\d+)\.hook_resid_mid", "layers.{0}.resid_mid", False),
    (r"blocks\.(\d+)\.hook_resid_post", "layers.{0}.resid_post", False),
    (r"blocks\.(\d+)\.hook_attn_out", "layers.{0}.attn_out", False),
    (r"blocks\.(\d+)\.hook_mlp_out", "layers.{0}.mlp_out", False),
    (r"blocks\.(\d+)\.attn\.hook_pattern", "layers.{0}.attn.pattern", False),
    (r"blocks\.(\d+)\.attn\.hook_attn_scores", "layers.{0}.attn.scores", False),
    (r"blocks\.(\d+)\.attn\.hook_result", "layers.{0}.attn.head_out", False),
    (r"blocks\.(\d+)\.attn\.hook_z", "layers.{0}.attn.z", True),
    (r"blocks\.(\d+)\.attn\.hook_rot_q", "layers.{0}.attn.q", True),
    (r"blocks\.(\d+)\.attn\.hook_rot_k", "layers.{0}.attn.k", True),
    (r"blocks\.(\d+)\.attn\.hook_v", "layers.{0}.attn.v", True),
    (r"ln_final\.hook_scale", "ln_final.scale", False),
    (r"ln_final\.hook_normalized", "ln_final.normalized", False),
)
# TransformerLens's short names, as utils.get_act_name reads them: cache["pattern", 0]
_SHORT = {"resid_pre": "layers.{0}.resid_pre", "resid_mid": "layers.{0}.resid_mid",
          "resid_post": "layers.{0}.resid_post", "attn_out": "layers.{0}.attn_out", "mlp_out": "layers.{0}.mlp_out",
          "pattern": "layers.{0}.attn.pattern", "attn_scores": "layers.{0}.attn.scores",
          "result": "layers.{0}.attn.head_out", "z": "layers.{0}.attn.z", "embed": "embed"}


class _Translator:
    def __init__(self, pairs):
        self.pairs = [(re.compile(f"^{pattern}$"), target, transposed) for pattern, target, transposed in pairs]

    def translate(self, name: str) -> tuple[str, bool] | None:
        """(seqlab name, transposed) of a TransformerLens name, or None."""
        for pattern, target, transposed in self.pairs:
            match = pattern.match(name)
            if match:
                return target.format(*match.groups()), transposed
        return None


_TL = _Translator(_TL_PAIRS)


def tl_name(name: str) -> str | None:
    """The seqlab tap name of a TransformerLens hook name of the LM (None if it has none):
    tl_name("blocks.2.attn.hook_pattern") == "layers.2.attn.pattern"."""
    found = _TL.translate(name)
    return None if found is None else found[0]


def tl_names() -> list[tuple[str, str, bool]]:
    """(TransformerLens name, seqlab name, transposed) for the table of docs/interpret.md."""
    readable = lambda s: s.replace(r"(\d+)", "{i}").replace("\\", "")
    return [(readable(p), t.replace("{0}", "{i}"), tr) for p, t, tr in _TL_PAIRS]


def _seqlab_name(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"tap names are strings, got {name!r}")
    found = _TL.translate(name)
    return name if found is None else found[0]


def _tl_edit(name: str, fn: EditFunction) -> EditFunction:
    """An edit given under a transposed TransformerLens name sees and returns TL's shape."""
    found = _TL.translate(name) if isinstance(name, str) else None
    if found is None or not found[1]:
        return fn
    return lambda value, point: fn(value.transpose(1, 2), point).transpose(1, 2)


def _short_name(kind: str, layer: int | None = None, *rest: Any) -> str:
    if kind not in _SHORT:
        raise KeyError(f"unknown short name {kind!r}; known: {sorted(_SHORT)}")
    return _SHORT[kind].format(layer)
