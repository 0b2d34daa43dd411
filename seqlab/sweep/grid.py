"""The runs of a sweep: ``--grid KEY=V1,V2,...`` parsed into typed values, their Cartesian product,
and the name of each run's directory.

Every ``KEY`` is a :class:`~seqlab.lm.TrainConfig` field (``batch-size`` may be written for
``batch_size``, as on the command line); each value is parsed with the field's type (``int``, a
finite ``float``, ``str``, ``bool`` as true/false, and ``none`` where the field may be None). A run
is named by its swept settings in ``--grid`` order, floats written short::

    >>> axes = [parse_axis("lr=1e-3,3e-3"), parse_axis("batch-size=16,64")]
    >>> [v.name for v in grid_variants(axes)]
    ['lr=1e-3,batch_size=16', 'lr=1e-3,batch_size=64', 'lr=3e-3,batch_size=16', 'lr=3e-3,batch_size=64']
    >>> parse_axis("lr=1e-3,fast")
    Traceback (most recent call last):
    ...
    seqlab.sweep.grid.GridError: --grid lr=1e-3,fast: lr takes a float, and 'fast' is not one

Errors name the key and the value (an unknown key, a value of the wrong type, an empty list, a
value given twice, a key that cannot be swept); :func:`check_variants` then builds each run's
``TrainConfig`` so that a value the config refuses (``lr=-1``) is reported before anything trains.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from seqlab.lm.settings import TrainConfig

# fields that describe where and how a run is kept or shown, not what it trains
NOT_SWEPT = {
    "out_dir": "each run's directory is --out/<run name>",
    "resume": "rerunning the sweep resumes its unfinished runs",
    "overwrite": "give --overwrite to the sweep to start every run over",
    "reschedule": "a sweep's runs keep their schedule when resumed",
    "progress": "it only shows a progress bar",
    "wandb": "give --wandb to the sweep to track every run",
    "wandb_project": "give --wandb-project to the sweep",
    "tensorboard": "give --tensorboard to the sweep to track every run",
}
TRUE_WORDS, FALSE_WORDS = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
NONE_WORDS = ("none", "null")


class GridError(ValueError):
    """A ``--grid`` or recipe that cannot be run; the message names the key and the value."""


@dataclass(frozen=True)
class Axis:
    """One swept key and its values, in the order given."""

    key: str
    values: tuple[Any, ...]


@dataclass
class Variant:
    """One run of a sweep: its directory name, the TrainConfig fields it sets, and its value on each
    swept axis (what tables and final.png show; for the ablations recipe the axis is "ablation")."""

    name: str
    settings: dict[str, Any]
    point: dict[str, Any] = field(default_factory=dict)


def config_fields() -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(TrainConfig)}


def field_kind(name: str) -> tuple[type, bool]:
    """(the value type, whether None is allowed) of TrainConfig field ``name``, from its annotation."""
    hint = typing.get_type_hints(TrainConfig)[name]
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union else ()
    if args:
        kinds = [a for a in args if a is not type(None)]
        return kinds[0], len(kinds) < len(args)
    return hint, False


def sweep_key(text: str, where: str) -> str:
    """The TrainConfig field ``text`` names (dashes allowed), or a GridError naming it."""
    key = text.strip().replace("-", "_")
    known = config_fields()
    if key not in known:
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise GridError(f"{where}: unknown key {text.strip()!r}{hint}; a key is a field of `seqlab train`'s "
                        f"config: {', '.join(sorted(k for k in known if k not in NOT_SWEPT))}")
    if key in NOT_SWEPT:
        raise GridError(f"{where}: {key} cannot be swept ({NOT_SWEPT[key]})")
    return key


def parse_value(key: str, text: str, where: str) -> Any:
    """``text`` as a value of field ``key`` (see the module docstring), or a GridError naming both."""
    kind, optional = field_kind(key)
    word = text.strip()
    if optional and word.lower() in NONE_WORDS:
        return None
    what = {float: "a float", int: "an integer", bool: "true or false", str: "a string"}[kind]
    if optional:
        what += " (or none)"
    try:
        if kind is bool:
            if word.lower() in TRUE_WORDS:
                return True
            if word.lower() in FALSE_WORDS:
                return False
            raise ValueError
        if kind is int:
            try:
                return int(word)
            except ValueError:
                number = float(word)  # 2e6 is an integer written short
                if not number.is_integer():
                    raise
                return int(number)
        if kind is float:
            number = float(word)
            if not math.isfinite(number):
                raise ValueError
            return number
        choices = config_fields()[key].metadata.get("choices")
        if choices and word not in choices:
            what = "one of " + ", ".join(choices)
            raise ValueError
        return word
    except (ValueError, OverflowError):
        raise GridError(f"{where}: {key} takes {what}, and {word!r} is not one") from None


def parse_axis(spec: str) -> Axis:
    """``"KEY=V1,V2,..."`` as an :class:`Axis` of typed values (see the module docstring)."""
    where = f"--grid {spec}"
    key_text, equals, values_text = spec.partition("=")
    if not equals or not key_text.strip():
        raise GridError(f"{where}: expected KEY=V1,V2,... (for example --grid lr=1e-3,3e-3)")
    key = sweep_key(key_text, where)
    if not values_text.strip():
        raise GridError(f"{where}: the list of values for {key} is empty; give one or more, "
                        f"for example --grid {key}=V1,V2")
    values: list[Any] = []
    seen: set[tuple[type, Any]] = set()  # (type, value): 1 and 1.0 are two values
    for number, text in enumerate(values_text.split(","), 1):
        if not text.strip():
            raise GridError(f"{where}: value {number} of {key} is empty (two commas in a row, or one at an end)")
        value = parse_value(key, text, where)
        if (type(value), value) in seen:
            raise GridError(f"{where}: {key}={format_value(value)} is given twice")
        seen.add((type(value), value))
        values.append(value)
    return Axis(key, tuple(values))


def parse_grid(specs: list[str]) -> list[Axis]:
    """Every ``--grid`` of the command line; a key given twice is an error."""
    axes = [parse_axis(spec) for spec in specs]
    seen: dict[str, str] = {}
    for spec, axis in zip(specs, axes):
        if axis.key in seen:
            raise GridError(f"--grid {spec}: {axis.key} is already swept by --grid {seen[axis.key]}; "
                            f"give all its values in one list")
        seen[axis.key] = spec
    return axes


def format_value(value: Any) -> str:
    """A value as written in a run name: floats short (1e-3, 0.03, 2.5), the rest as text.

    >>> [format_value(v) for v in (0.001, 3e-05, 0.03, 1.0, 250000.0, 64, True, None, "post")]
    ['1e-3', '3e-5', '0.03', '1', '2.5e5', '64', 'true', 'none', 'post']
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, float):
        if value != 0 and not 1e-2 <= abs(value) < 1e5:
            mantissa, exponent = f"{value:.6e}".split("e")
            mantissa = mantissa.rstrip("0").rstrip(".")
            return f"{mantissa}e{int(exponent)}"
        return f"{value:.6g}"
    return str(value)


def run_name(point: dict[str, Any]) -> str:
    """The directory name of the run at ``point``: ``"lr=1e-3,batch_size=64"`` (a path separator in
    a value, as in ``data_dir=data/ts``, becomes ``_``)."""
    text = ",".join(f"{key}={format_value(value)}" for key, value in point.items())
    return text.replace("/", "_").replace("\\", "_")


def grid_variants(axes: list[Axis]) -> list[Variant]:
    """The Cartesian product of ``axes`` (the last axis varies fastest), one :class:`Variant` each."""
    variants = []
    for values in itertools.product(*(axis.values for axis in axes)):
        point = {axis.key: value for axis, value in zip(axes, values)}
        variants.append(Variant(run_name(point), dict(point), dict(point)))
    return variants


def combine(outer: list[Variant], inner: list[Variant]) -> list[Variant]:
    """Every variant of ``outer`` with every variant of ``inner`` (a recipe crossed with a grid)."""
    if not outer:
        return inner
    if not inner:
        return outer
    return [Variant(f"{a.name},{b.name}", {**a.settings, **b.settings}, {**a.point, **b.point})
            for a in outer for b in inner]


def variant_config(base: TrainConfig, variant: Variant, **run: Any) -> TrainConfig:
    """``base`` with the variant's settings (and ``run``: out_dir, resume, ...), validated."""
    return TrainConfig(**{**base.to_dict(), **variant.settings, **run})


def check_variants(base: TrainConfig, variants: list[Variant]) -> None:
    """Build every run's TrainConfig now, so a setting the config refuses (``lr=-1``, a ``min_lr``
    above a swept ``lr``) stops the sweep before anything trains, naming the run and the value; two
    runs with one name (values that differ only in ways a name cannot show) are an error too."""
    names: dict[str, Variant] = {}
    for variant in variants:
        if variant.name in names:
            raise GridError(f"runs {names[variant.name].settings} and {variant.settings} would share the "
                            f"directory name {variant.name!r}; give values that differ when written")
        names[variant.name] = variant
        try:
            variant_config(base, variant)
        except ValueError as error:
            shown = ", ".join(f"{k}={format_value(v)}" for k, v in variant.settings.items())
            raise GridError(f"run {variant.name} ({shown}): {error}") from None
