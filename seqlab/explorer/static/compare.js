// The "compare runs" panel (section 12): the loss curves of every --run on one chart, one line per
// run. The curves come from POST /api/runs/compare, which reads each run with seqlab.sweep.records
// (the reader of `seqlab compare`); the page only draws them.
"use strict";

const COMPARE_COLORS = 8;  // line colours .s0 .. .s7 (style.css); more runs reuse them

function setupCompare() {
  widget("w-model", () => ["runs/compare", {}], (data) => {
    const kind = $("compare-curve").value;  // "val" or "train"
    const drawn = data.runs.filter((r) => r[kind].length);
    const cls = (i) => "s" + (i % COMPARE_COLORS);
    const series = drawn.map((r, i) => ({ values: r[kind].map((p) => p[1]), xs: r[kind].map((p) => p[0]), cls: cls(i) }));
    if (series.length) lineChart($("compare-chart"), series, { xLabel: t("model.step") });
    else $("compare-chart").replaceChildren(el("p", { class: "note", text: t(data.runs.length ? "compare.no_curve" : "compare.none") }));
    $("compare-legend").replaceChildren(...drawn.map((r, i) => el("span", { class: "key " + cls(i),
      text: t("compare.key", { run: r.id, status: t("compare.status." + r.status), steps: r.steps, loss: fmt(r.final_val_loss) }) })));
    $("compare-note").textContent = data.skipped.map((s) => t("compare.skipped", { run: s.id, error: s.error })).join(" ");
  }, "model-compare-panel");
}
