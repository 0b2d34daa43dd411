"""report.md of ``seqlab induction``: the numbers of every model and what they show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seqlab.atomic import atomic_write_text
from seqlab.induction.results import budgets


def _number(value: Any, form: str) -> str:
    return "—" if value is None else format(value, form)


def findings(results: dict[str, Any]) -> list[str]:
    """Sentences comparing the models (only what the numbers say)."""
    models = results["models"]
    lines = []
    for name in ("attn2", "mlp2"):
        record, bump = models.get(name), (models.get(name) or {}).get("bump")
        if record and bump and bump["induction_before"] is not None:
            lines.append(f"- {record['label']}: the in-context loss fell most between steps {bump['from_step']} and "
                         f"{bump['to_step']} (by {bump['loss_drop']:.2f} nats), while the best layer-2 head's "
                         f"induction score went from {bump['induction_before']:.2f} to {bump['induction_after']:.2f}.")
    one, two = models.get("attn1"), models.get("attn2")
    if one and two and one["final"]["induction"] is not None and two["final"]["induction"] is not None:
        lines.append(f"- One attention layer: best induction score {one['final']['induction']:.2f} and in-context "
                     f"loss {one['final']['in_context_loss']:+.2f} at the end, against "
                     f"{two['final']['induction']:.2f} and {two['final']['in_context_loss']:+.2f} with two layers.")
    lstm = models.get("lstm")
    if lstm:
        by = lstm["by_distance"]
        near, far = min(by, key=int), max(by, key=int)
        lines.append(f"- LSTM: repeat accuracy {by[near]:.0%} at distance {near}, {by[far]:.0%} at distance {far}: "
                     "its state must carry the whole segment, where an induction head looks it up.")
    return lines


def write_report(path: str | Path, results: dict[str, Any]) -> None:
    s = results["settings"]
    distances = [str(d) for d in s["distances"]]
    lines = ["# How a Transformer learns to copy", "",
             f"Status: {results['status']}; {results['total_seconds']:.0f} s in all "
             f"({results['machine']['threads'] if results.get('machine') else '?'} thread).", "",
             f"Examples: {2 * s['half']} random ids from a vocabulary of {s['vocab_size']}, ending in a segment "
             f"repeated once (repeat distance {s['min_repeat']} to {s['half']}); {s['steps']} steps of "
             f"{s['batch_size']} examples per attention-only Transformer, {s.get('mlp_steps') or s['steps']} for the one "
             f"with MLPs, {s['lstm_steps']} for the LSTM.", "",
             "In-context loss = mean loss on the repeat's copyable tokens minus mean loss before the repeat "
             "(nats/token; 0 = the context does not help). Induction score = mean attention from a repeated token "
             "to the token after its earlier copy, for the best head of the last layer.", "",
             *findings(results), "",
             *([f"**Unequal budgets.** {budgets(results)['note']}", ""] if budgets(results)["note"] else []),
             "| model | parameters | steps | in-context loss | repeat accuracy | induction score (last layer) | "
             "previous-token score (layer 1) | " + " | ".join(f"acc @ {d}" for d in distances) + " |",
             "|" + " --- |" * (7 + len(distances))]
    for name, r in results["models"].items():
        f = r["final"]
        lines.append(f"| {r['label']} (`{name}`) | {r['parameters']:,} | {r['steps']} | "
                     f"{_number(f['in_context_loss'], '+.3f')} | {_number(f['repeat_accuracy'], '.1%')} | "
                     f"{_number(f['induction'], '.3f')} | {_number(f['previous_token'], '.3f')} | "
                     + " | ".join(_number(r["by_distance"].get(d), ".0%") for d in distances) + " |")
    lines += ["", "![in-context loss, induction score and accuracy by distance](induction.png)", ""]
    atomic_write_text(path, "\n".join(lines) + "\n")
