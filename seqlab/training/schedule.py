"""Learning-rate schedule: linear warm-up then cosine decay, by steps or by elapsed time.

:func:`lr_cosine_schedule` is the formula. :class:`RunSchedule` is the schedule of one run, and
:func:`plan_schedule` chooses it from the settings, saying when it departs from them. Example: a
run of 1000 steps resumed with ``--max-steps 1500`` keeps its cosine, which ends at step 1000;
steps 1001-1500 run at min_lr (``--reschedule`` stretches the cosine to step 1500 instead, so the
rate jumps up where the run resumes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def cosine_decay(progress: float, max_learning_rate: float, min_learning_rate: float) -> float:
    """max at progress 0, min at progress 1 (progress is clamped to [0, 1]), half a cosine between."""
    progress = min(1.0, max(0.0, progress))
    return min_learning_rate + 0.5 * (1 + math.cos(math.pi * progress)) * (max_learning_rate - min_learning_rate)


def lr_cosine_schedule(it: int, max_learning_rate: float, min_learning_rate: float,
                       warmup_iters: int, cosine_cycle_iters: int) -> float:
    """Learning rate at iteration `it` (0-based).

    it < warmup_iters:                      max * it / warmup_iters
    warmup_iters <= it <= cosine_cycle_iters: min + (max - min) * (1 + cos(pi * progress)) / 2
    it > cosine_cycle_iters:                min
    where progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters).
    """
    if it < 0:
        raise ValueError(f"iteration must be >= 0, got {it}")
    if warmup_iters < 0 or cosine_cycle_iters < warmup_iters:
        raise ValueError(
            f"need 0 <= warmup_iters <= cosine_cycle_iters, got {warmup_iters} and {cosine_cycle_iters}"
        )
    if it < warmup_iters:
        return max_learning_rate * it / warmup_iters
    if it > cosine_cycle_iters:
        return min_learning_rate
    if cosine_cycle_iters == warmup_iters:
        return max_learning_rate
    progress = (it - warmup_iters) / (cosine_cycle_iters - warmup_iters)
    return cosine_decay(progress, max_learning_rate, min_learning_rate)


@dataclass(frozen=True)
class RunSchedule:
    """The learning rate of a run at each optimizer step.

    By steps: warm-up then a cosine reaching ``min_lr`` at step ``horizon`` (later steps stay
    there). With ``time_budget_s``: warm-up by steps, then the cosine's progress is elapsed
    seconds / budget, so it reaches ``min_lr`` when the budget is spent, however fast the steps are;
    if the steps run out first (``horizon``, the step cap, comes before the budget), the progress by
    steps leads instead, so the cosine still ends at ``min_lr`` on the last step. Example: a cap of
    600 steps and a budget of 60 s on a machine that does 20 steps/s: step 300 (15 s) runs at the
    midpoint of the cosine, not a quarter of the way.
    """

    lr: float
    min_lr: float
    warmup_steps: int
    horizon: int
    time_budget_s: float | None = None

    def rate(self, step: int, elapsed: float = 0.0) -> float:
        """Rate for 0-based ``step`` (schedule iteration step + 1), ``elapsed`` seconds into the run."""
        if self.time_budget_s is None:
            return lr_cosine_schedule(step + 1, self.lr, self.min_lr, self.warmup_steps, self.horizon)
        if step + 1 < self.warmup_steps:
            return self.lr * (step + 1) / self.warmup_steps
        decay_steps = self.horizon - self.warmup_steps
        by_steps = (step + 1 - self.warmup_steps) / decay_steps if decay_steps > 0 else 1.0
        return cosine_decay(max(elapsed / self.time_budget_s, by_steps), self.lr, self.min_lr)


def plan_schedule(*, lr: float, min_lr: float, warmup_steps: int, total_steps: int,
                  saved_horizon: int | None = None, reschedule: bool = False,
                  time_budget_s: float | None = None) -> tuple[RunSchedule, list[str]]:
    """(the schedule, notes for the user) of a run of ``total_steps`` steps.

    ``saved_horizon`` is the horizon of the run being resumed: it is kept unless ``reschedule``.
    A warm-up at least as long as the schedule would leave nothing but warm-up; it is cut to a
    tenth of the schedule, with a note.
    """
    notes = []
    horizon = total_steps
    if saved_horizon is not None and saved_horizon != total_steps and time_budget_s is None:
        if reschedule:
            notes.append(f"schedule: --reschedule: the cosine now ends at step {total_steps} "
                         f"instead of step {saved_horizon}")
        else:
            horizon = saved_horizon
            if total_steps > saved_horizon:
                notes.append(f"schedule: this run's cosine ends at step {saved_horizon}; steps "
                             f"{saved_horizon + 1}-{total_steps} run at min_lr {min_lr:.2e} "
                             f"(--reschedule stretches the cosine to step {total_steps} instead)")
            else:
                notes.append(f"schedule: the run stops at step {total_steps}, before its cosine ends "
                             f"at step {saved_horizon} (--reschedule ends it at step {total_steps})")
    warmup = min(warmup_steps, horizon)
    if warmup_steps >= horizon > 1:
        warmup = max(1, horizon // 10)
        notes.append(f"schedule: --warmup-steps {warmup_steps} would leave no decay in a {horizon}-step "
                     f"schedule; warming up for {warmup} steps instead")
    return RunSchedule(lr, min_lr, warmup, horizon, time_budget_s), notes
