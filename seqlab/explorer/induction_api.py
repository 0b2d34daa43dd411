"""POST /api/induction: the results of ``seqlab induction --out DIR`` given to ``seqlab explore
--induction DIR``, as the induction panel (static/induction.js) draws them: per model its label,
the in-context loss and the best last-layer head's induction score at each evaluation, and the
repeat accuracy at each distance (all read from DIR/results.json, nothing recomputed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from seqlab.explorer.validation import Payload, RequestError

COLORS = {"attn1": "#d62728", "attn2": "#1f77b4", "mlp2": "#2ca02c", "lstm": "#9467bd"}  # induction.png's


def induction(p: Payload, runs: Any) -> dict:
    from seqlab.induction.results import RESULTS_FILE, read_results

    p.finish()
    directory = getattr(runs, "induction_dir", None)
    if directory is None:
        raise RequestError("no induction results: run `seqlab induction --out DIR`, then start "
                           "`seqlab explore --induction DIR`", "no_induction")
    path = Path(directory) / RESULTS_FILE
    try:
        results = read_results(directory)
    except (ValueError, OSError) as exc:
        raise RequestError(f"{exc}: not the results of `seqlab induction` as this seqlab reads them; run "
                           f"`seqlab induction --out {directory}` again", "induction_bad", path=str(path)) from None
    if results is None:
        raise RequestError(f"{path} does not exist; run `seqlab induction --out {directory}` first (about a minute "
                           "with --fast)", "induction_missing", path=str(path), dir=directory)
    models = []
    for name, record in results["models"].items():
        curve = record["curve"]
        models.append({"name": name, "label": record["label"], "arch": record["arch"], "layers": record["layers"],
                       "color": COLORS.get(name, "#444444"), "steps": curve["steps"],
                       "in_context_loss": curve["in_context_loss"], "induction": curve["induction"],
                       "by_distance": [[int(d), v] for d, v in sorted(record["by_distance"].items(), key=lambda i: int(i[0]))],
                       "final": record["final"]})
    return {"status": results["status"], "vocab_size": results["settings"]["vocab_size"], "models": models}


INDUCTION_ENDPOINTS: dict[str, Callable[[Payload, Any], dict]] = {
    "induction": induction,  # runs.induction_dir: the --induction DIR of `seqlab explore`, if any
}
