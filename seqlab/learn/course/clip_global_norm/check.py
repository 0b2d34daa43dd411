"""clip_global_norm: the cases, the checks of its sentences, the invariants, its mutants and recognisers
(the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_values
from seqlab.learn.kit import rng
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    generator = rng(3)
    return [Case(said("cases.worked"), (np.array([3.0, 4.0]), 2.0)),
            Case(said("cases.random", k=1), ([generator.normal(size=(3, 2)) * 4, generator.normal(size=5) * 4], 1.5)),
            Case(said("cases.random", k=2), ([np.array([10.0, 0.1]), np.array([0.2, -0.3])], 1.0))]


def _below_cases() -> list[Case]:
    generator = rng(61)
    return [Case(say("list_under"), ([generator.normal(size=4) * 0.1, generator.normal(size=(2, 2)) * 0.1],
                                                5.0)),
            Case(say("array_at"), (np.array([0.6, 0.8]), 1.0))]


def _form_cases() -> list[Case]:
    generator = rng(62)
    return [Case(say("one_array"), (generator.normal(size=(3, 4)) * 3, 2.0)),
            Case(say("list_of_one"), ([generator.normal(size=3) * 3], 1.0)),
            Case(say("list_of_three"), ([generator.normal(size=2), generator.normal(size=(2, 3)),
                                             generator.normal(size=1)], 0.5))]


def _zero_cases() -> list[Case]:
    return [Case(say("all_zero"), ([np.zeros(3), np.zeros((2, 2))], 1.0)),
            Case(say("zero_array"), (np.zeros(4), 0.5))]


CHECKS = {"below the threshold": Check(_below_cases), "form": Check(_form_cases),
          "norm before clipping": Check(verify=same_values(1)), "zero gradients": Check(_zero_cases)}


def invariants(case, out):
    grads, threshold = case.args
    clipped = out[0]
    arrays = [clipped] if isinstance(clipped, np.ndarray) else list(clipped)
    originals = [grads] if isinstance(grads, np.ndarray) else list(grads)
    norm = float(np.sqrt(sum(np.sum(np.asarray(a, dtype=float) ** 2) for a in arrays)))
    if norm > threshold * (1 + 1e-9):
        return say("norm_above", norm=f"{norm:.6g}", threshold=f"{threshold}")
    flat = np.concatenate([np.ravel(a) for a in arrays]).astype(float)
    before = np.concatenate([np.ravel(a) for a in originals]).astype(float)
    factor = float(flat @ before / (before @ before)) if before.any() else 1.0
    if not np.allclose(flat, factor * before, rtol=1e-9, atol=1e-12):
        return say("other_direction")
    return None


# --- mistakes -----------------------------------------------------------------------------------------
def coordinatewise(grads, threshold):
    from seqlab.labs.clipping import clip_coordinatewise, global_norm
    norm = global_norm(grads)
    if isinstance(grads, np.ndarray):
        return clip_coordinatewise(grads, threshold), norm
    return [clip_coordinatewise(g, threshold) for g in grads], norm


def each_array_its_own_norm(grads, threshold):
    from seqlab.labs.clipping import clip_global_norm, global_norm
    if isinstance(grads, np.ndarray):
        return clip_global_norm(grads, threshold)
    return [clip_global_norm(np.asarray(g, dtype=np.float64), threshold)[0] for g in grads], global_norm(grads)


def always_rescaled(grads, threshold):
    from seqlab.labs.clipping import global_norm
    norm = global_norm(grads)
    if isinstance(grads, np.ndarray):
        return grads * (threshold / norm), norm
    return [np.asarray(g, dtype=np.float64) * (threshold / norm) for g in grads], norm


def norm_after_clipping(grads, threshold):
    from seqlab.labs.clipping import clip_global_norm, global_norm
    clipped, _ = clip_global_norm(grads, threshold)
    return clipped, global_norm(clipped)


MUTANTS = {"coordinatewise": coordinatewise, "each_array_its_own_norm": each_array_its_own_norm,
           "always_rescaled": always_rescaled, "norm_after_clipping": norm_after_clipping}
def _norm_not_zero(case) -> bool:
    grads = case.args[0]
    return any(np.any(np.asarray(g) != 0) for g in ([grads] if isinstance(grads, np.ndarray) else grads))


RECOGNISERS = {"always_rescaled": D.matches(always_rescaled, None, "all", say("always_rescaled"), only=_norm_not_zero),
               "norm_after_clipping": D.matches(norm_after_clipping, (1,), "own"),
               "nan_for_zero_gradients": D.failed_check("zero gradients", raises=True),
               "form_changed": D.failed_check("form", raises=True)}
