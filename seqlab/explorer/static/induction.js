// The induction section: the results of `seqlab induction` (POST /api/induction, given with
// `seqlab explore --induction DIR`). Three charts, one colour per model (the colours of
// induction.png, sent by the API): the in-context loss and the best last-layer head's induction
// score against training steps, and the accuracy on the repeat against the repeat distance.
"use strict";

function inductionChart(container, models, pick, opts) {
  const shown = models.filter((m) => pick(m));
  const series = shown.map((m) => ({ values: pick(m).values, xs: pick(m).xs, cls: "ind-" + m.name }));
  if (!series.length) { container.replaceChildren(el("p", { class: "note", text: t("ind.no_heads") })); return; }
  lineChart(container, series, opts);
  container.querySelectorAll("polyline").forEach((line, i) => { line.style.stroke = shown[i].color; });
}

function setupInduction(given) {
  const w = widget("w-induction", () => {
    if (!given) {  // not started with --induction: say how, without a failing request
      $("induction-note").textContent = t("ind.none");
      return null;
    }
    return ["induction", {}];
  }, (data) => {
    const models = data.models;
    const charts = [
      ["ind.loss_title", (m) => ({ values: m.in_context_loss, xs: m.steps }), { xLabel: t("ind.step"), yTickFormat: (y) => y.toFixed(2) }],
      ["ind.score_title", (m) => (m.arch === "transformer" ? { values: m.induction, xs: m.steps } : null), { xLabel: t("ind.step") }],
      ["ind.distance_title", (m) => ({ values: m.by_distance.map((p) => p[1]), xs: m.by_distance.map((p) => p[0]) }), { xLabel: t("ind.distance") }],
    ];
    $("induction-charts").replaceChildren(...charts.map(([title, pick, opts], i) => {
      const chart = el("div", { class: "chart", id: "induction-chart-" + i });
      inductionChart(chart, models, pick, opts);
      return el("div", { class: "panel" }, el("h4", { text: t(title) }), chart);
    }));
    $("induction-legend").replaceChildren(...models.map((m) => {
      const f = m.final;
      const key = el("span", { class: "key arch", "data-model": m.name, text: t(f.induction === null ? "ind.key_lstm" : "ind.key", {
        label: m.label, loss: f.in_context_loss.toFixed(2), acc: (100 * f.repeat_accuracy).toFixed(0),
        score: f.induction === null ? "" : f.induction.toFixed(2) }) });
      key.style.setProperty("--key-color", m.color);
      return key;
    }));
    $("induction-note").textContent = t(data.status === "completed" ? "ind.note" : "ind.unfinished", { v: data.vocab_size });
  });
  if (!given) {
    const render = w.render;
    w.render = () => { render(); $("induction-note").textContent = t("ind.none"); };  // on a language switch
  }
}
