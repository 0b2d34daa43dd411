// The explorer's widgets. Each widget reads its inputs, POSTs them to /api/<name> and renders the
// JSON it gets back. No lesson formula is evaluated here: every number comes from seqlab.labs.
"use strict";

const $ = (id) => document.getElementById(id);
const widgets = [];          // every widget, so a language switch can re-render them all
let pending = 0;             // requests in flight (exposed on <body data-busy> for tests)

async function api(name, body) {
  pending += 1;
  document.body.dataset.busy = "1";
  try {
    const response = await fetch("/api/" + name, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await response.json();
    if (!response.ok) throw apiError(data, response);
    return data;
  } finally {
    pending -= 1;
    if (pending === 0) document.body.dataset.busy = "0";
  }
}

// A failed request as an Error carrying the server's code and params (see errorText).
function apiError(data, response) {
  const error = new Error(data.error || response.statusText);
  error.code = data.code;
  error.params = data.params || {};
  return error;
}

// The message to show for a failed request: the page's own translation when the server named the
// mistake with a code it has a label for (err.<code>), else the server's English message.
function errorText(err) {
  const key = "err." + err.code;
  return err.code && STRINGS[key] ? t(key, err.params) : err.message;
}

// --- input parsing (text -> numbers; the API validates ranges and shapes) -------------------
function parseNumber(text) {
  const trimmed = String(text).trim();
  const value = Number(trimmed);
  if (trimmed === "" || !Number.isFinite(value)) throw new Error(t("common.not_number", { text: trimmed }));
  return value;
}
const num = (id) => parseNumber($(id).value);
const int = (id) => Math.round(parseNumber($(id).value));
const parseList = (text) => text.split(/[\s,;]+/).filter((s) => s !== "").map(parseNumber);
const parseMatrix = (text) => text.split("\n").filter((line) => line.trim() !== "").map(parseList);
const matrixText = (rows) => rows.map((row) => row.join(", ")).join("\n");

// A widget: request() -> [endpoint, body]; render(data, body) draws it. Only the newest response
// is drawn, so fast slider moves never show stale numbers.
function widget(sectionId, request, render, scopeId) {
  const section = $(sectionId);
  const scope = $(scopeId || sectionId);
  const errorBox = scope.querySelector(":scope > .error");
  const w = { last: null, error: null, serial: 0, onRendered: null };
  const showError = () => {
    errorBox.textContent = t("common.error", { msg: errorText(w.error) });
    errorBox.hidden = false;
    scope.classList.add("failed");
  };
  w.render = () => {
    if (w.last) render(w.last.data, w.last.body);
    if (w.error) showError();  // re-translated on a language switch
  };
  w.fail = (err) => { w.error = err; if (w.onFail) w.onFail(); showError(); };
  w.refresh = async () => {
    const serial = ++w.serial;
    try {
      const wanted = request();
      if (!wanted) return;  // nothing to ask yet (the widget shows a hint instead)
      const [endpoint, body] = wanted;
      const data = await api(endpoint, body);
      if (serial !== w.serial) return;
      w.last = { data, body };
      w.error = null;
      errorBox.hidden = true;
      scope.classList.remove("failed");
      render(data, body);
      if (w.onRendered) w.onRendered();
      // for other files' panels on a widget (learn.js: the student's code on these inputs)
      document.dispatchEvent(new CustomEvent("seqlab:rendered", { detail: { endpoint, body, data, scope } }));
    } catch (err) {
      if (serial !== w.serial) return;
      w.fail(err);
    }
  };
  let timer = null;
  w.schedule = () => { clearTimeout(timer); timer = setTimeout(w.refresh, 60); };
  scope.addEventListener("input", (event) => { if (event.target.matches("input, textarea, select")) w.schedule(); });
  widgets.push(w);
  return w;
}

function setFields(values) {
  for (const [id, value] of Object.entries(values)) {
    const input = $(id);
    if (input.type === "checkbox") input.checked = value; else input.value = value;
  }
}

// Sliders with a six-decimal readout; spec: [key, i18n label, min, max, step].
function buildSliders(containerId, prefix, specs, defaults) {
  const container = $(containerId);
  for (const [key, label, min, max, step] of specs) {
    const input = el("input", { type: "range", id: `${prefix}-${key}`, min, max, step });
    input.value = defaults[key];
    const readout = el("output", { id: `${prefix}-${key}-out`, class: "mono" });
    const sync = () => { readout.textContent = fmt(input.value); };
    input.addEventListener("input", sync);
    sync();
    container.append(el("label", { class: "slider" }, el("span", { "data-i18n": label, text: t(label) }), input, readout));
  }
}
const setSlider = (id, value) => { $(id).value = value; $(id + "-out").textContent = fmt(value); };

// --- 1. recurrence -------------------------------------------------------------------------------
function setupRecurrence(d) {
  setFields({ "rec-a": d.a, "rec-h0": d.h0, "rec-xs": d.xs.join(", ") });
  let step = null;   // number of updates shown; null = all
  const w = widget("w-recurrence",
    () => ["recurrence", { a: num("rec-a"), h0: num("rec-h0"), xs: parseList($("rec-xs").value) }],
    (data, body) => {
      const reversed = $("rec-reverse").checked;
      const xs = reversed ? [...body.xs].reverse() : body.xs;
      const states = reversed ? data.reversed_states : data.states;
      const T = states.length;
      const k = step === null ? T : Math.min(step, T);
      const chain = $("rec-chain");
      chain.replaceChildren();
      for (let s = 0; s <= T; s++) {
        const value = s === 0 ? body.h0 : states[s - 1];
        const box = el("div", { class: "state" + (s === k && k > 0 ? " current" : "") + (s === k - 1 ? " prev" : "") + (s > k ? " future" : "") },
          el("div", { class: "name", text: `h${sub(s)}` }),
          el("div", { class: "value mono", text: s > k ? "?" : fmt(value) }),
          el("div", { class: "input mono", text: s === 0 ? "" : `x${sub(s)} = ${fmt(xs[s - 1])}` }),
          s === k - 1 ? el("div", { class: "tag", text: t("rec.enters") }) : null);
        if (s > 0) chain.append(el("div", { class: "arrow" + (s === k ? " active" : ""), text: "→" }));
        chain.append(box);
      }
      $("rec-step-label").textContent = t("common.step_of", { k, n: T });
      $("rec-update").textContent = k === 0 ? t("rec.start")
        : `h${sub(k)} = tanh(a·h${sub(k - 1)} + x${sub(k)}) = tanh(${fmt(body.a)}·${fmt(k === 1 ? body.h0 : states[k - 2])} + ${fmt(xs[k - 1])}) = ${fmt(states[k - 1])}`;
      const table = $("rec-table");
      table.replaceChildren(
        el("tr", {}, el("th", { text: t("rec.t") }), ...body.xs.map((_, i) => el("th", { text: String(i + 1) }))),
        el("tr", {}, el("th", { text: t("rec.x") }), ...xs.map((x) => el("td", { text: fmt(x) }))),
        el("tr", { class: reversed ? "" : "hi" }, el("th", { text: t("rec.h") }), ...data.states.map((h) => el("td", { text: fmt(h) }))),
        el("tr", { class: reversed ? "hi" : "" }, el("th", { text: t("rec.h_rev") }), ...data.reversed_states.map((h) => el("td", { text: fmt(h) }))));
      $("rec-compare").textContent = t("rec.compare", { a: fmt(data.states[T - 1]), b: fmt(data.reversed_states[T - 1]) });
      $("rec-back").disabled = k === 0;
      $("rec-fwd").disabled = k === T;
    });
  const current = () => (step === null ? (w.last ? w.last.data.states.length : 0) : step);
  $("rec-back").addEventListener("click", () => { step = Math.max(0, current() - 1); w.render(); });
  $("rec-fwd").addEventListener("click", () => { step = current() + 1; w.render(); });
  $("rec-reverse").addEventListener("change", () => w.render());
  return w;
}
const SUBSCRIPTS = "₀₁₂₃₄₅₆₇₈₉";
const sub = (n) => String(n).split("").map((c) => SUBSCRIPTS[Number(c)]).join("");

// --- 2. character LM ------------------------------------------------------------------------------
function setupCharLM(d) {
  setFields({ "lm-steps": d.steps, "lm-lr": d.lr, "lm-reset": d.reset_state });
  $("lm-steps-out").textContent = d.steps;
  let playing = false;
  const w = widget("w-charlm",
    () => ["char_lm", { steps: int("lm-steps"), lr: num("lm-lr"), seed: d.seed, reset_state: $("lm-reset").checked }],
    (data, body) => {
      lineChart($("lm-loss-chart"), [{ values: data.loss_trace, label: t("lm.step_label", { k: body.steps }), cls: "s0" }],
        { yTickFormat: (y) => y.toFixed(2) });
      $("lm-final-loss").textContent = fmt(data.final_loss);
      $("lm-params").textContent = String(data.parameters);
      $("lm-greedy").textContent = `${data.inputs} → ${data.greedy}`;
      $("lm-generated").textContent = `h → ${data.generated}`;
      const dists = $("lm-dists");
      dists.replaceChildren();
      data.distributions.forEach((row, p) => {
        const chart = el("div", { class: "chart" });
        dists.append(el("div", { class: "dist" }, el("h4", { text: t("lm.position", { x: data.inputs[p], y: data.targets[p] }) }), chart));
        barChart(chart, row, data.vocab, { highlight: data.vocab.indexOf(data.targets[p]) });
      });
      $("lm-reset-note").textContent = t(body.reset_state ? "lm.reset_on" : "lm.reset_off");
    });
  const steps = $("lm-steps");
  const showSteps = () => { $("lm-steps-out").textContent = steps.value; };
  steps.addEventListener("input", showSteps);
  const setPlaying = (on) => {
    playing = on;
    $("lm-play").dataset.i18n = on ? "lm.pause" : "lm.play";
    $("lm-play").textContent = t($("lm-play").dataset.i18n);
  };
  // Playing advances the step count after each response, so requests never pile up.
  w.onRendered = () => {
    if (!playing) return;
    if (Number(steps.value) >= Number(steps.max)) { setPlaying(false); return; }
    steps.value = Math.min(Number(steps.max), Number(steps.value) + 20);
    showSteps();
    setTimeout(w.refresh, 30);
  };
  $("lm-play").addEventListener("click", () => {
    if (playing) { setPlaying(false); return; }
    if (Number(steps.value) >= Number(steps.max)) steps.value = 0;
    showSteps();
    setPlaying(true);
    w.refresh();
  });
  $("lm-zero").addEventListener("click", () => { setPlaying(false); steps.value = 0; showSteps(); w.refresh(); });
  return w;
}

// --- 3. gradient flow --------------------------------------------------------------------------------
function setupGradient(factor, clip, tb) {
  setFields({ "gf-a": factor.factors[0], "gf-b": factor.factors[1], "gf-steps": factor.steps });
  const wf = widgetPart("gf-factor-panel", "w-gradient",
    () => ["repeated_factor", { factors: [num("gf-a"), num("gf-b")], steps: int("gf-steps") }],
    (data, body) => {
      ["a", "b"].forEach((name, i) => {
        $(`gf-label-${name}`).textContent = t("gf.product", { f: body.factors[i], n: body.steps });
        $(`gf-product-${name}`).textContent = fmt(data.products[i]);
      });
      lineChart($("gf-chart"), data.trajectories.map((values, i) => ({ values, label: String(body.factors[i]), cls: "s" + i })),
        { width: 320, height: 180, yTransform: (v) => Math.log10(Math.abs(v)), yTickFormat: (y) => "10^" + y.toFixed(1) });
    });

  setFields({ "clip-vector": clip.vector.join(", "), "clip-threshold": clip.threshold });
  const wc = widgetPart("clip-panel", "w-gradient",
    () => ["clipping", { vector: parseList($("clip-vector").value), threshold: num("clip-threshold") }],
    (data, body) => {
      $("clip-norm").textContent = fmt(data.global_norm.norm);
      $("clip-global").textContent = fmtVec(data.global_norm.clipped);
      $("clip-coord").textContent = fmtVec(data.coordinatewise);
      drawClipping($("clip-svg"), body.vector, data.global_norm.clipped, data.coordinatewise, body.threshold);
    });

  setFields({ "tb-steps": tb.num_steps, "tb-chunk": tb.chunk_length, "tb-loss": tb.loss_step });
  const wt = widgetPart("tb-panel", "w-gradient",
    () => ["tbptt", { num_steps: int("tb-steps"), chunk_length: int("tb-chunk"), loss_step: int("tb-loss") }],
    (data, body) => {
      const strip = $("tb-strip");
      strip.replaceChildren();
      for (let s = 0; s < body.num_steps; s++) {
        const cls = ["cell"];
        if (data.reach.includes(s)) cls.push("reached");
        if (s === body.loss_step) cls.push("loss");
        if (data.chunk_starts.includes(s) && s > 0) cls.push("boundary");
        strip.append(el("div", { class: cls.join(" "), text: String(s) }));
      }
      $("tb-reach").textContent = t("tb.reach", { s: body.loss_step, list: data.reach.join(", ") });
    });
  return [wf, wc, wt];
}

// A widget inside a panel of a larger section (errors shown in the section's error line).
// (only this panel's inputs trigger it; errors go to the section's error line)
function widgetPart(panelId, sectionId, request, render) {
  return widget(sectionId, request, render, panelId);
}

function drawClipping(container, g, global, coord, threshold) {
  if (g.length !== 2) { container.replaceChildren(); return; }
  const size = 200, c = size / 2;
  const reach = Math.max(Math.abs(g[0]), Math.abs(g[1]), threshold) * 1.15;
  const s = (v) => (v / reach) * (c - 8);
  const svg = svgRoot(size, size);
  svg.append(svgEl("line", { x1: 0, y1: c, x2: size, y2: c, class: "axis" }));
  svg.append(svgEl("line", { x1: c, y1: 0, x2: c, y2: size, class: "axis" }));
  svg.append(svgEl("circle", { cx: c, cy: c, r: s(threshold), class: "threshold" }));
  svg.append(svgEl("rect", { x: c - s(threshold), y: c - s(threshold), width: 2 * s(threshold), height: 2 * s(threshold), class: "box" }));
  const arrow = (v, cls) => {
    svg.append(svgEl("line", { x1: c, y1: c, x2: c + s(v[0]), y2: c - s(v[1]), class: "vec " + cls }));
    svg.append(svgEl("circle", { cx: c + s(v[0]), cy: c - s(v[1]), r: 3.5, class: "dot " + cls }));
  };
  arrow(g, "orig");
  arrow(coord, "coord");
  arrow(global, "glob");
  const legend = el("div", { class: "legend" },
    el("span", { class: "key orig", text: t("clip.legend_g") }), el("span", { class: "key glob", text: t("clip.legend_n") }),
    el("span", { class: "key coord", text: t("clip.legend_c") }), el("span", { class: "key thr", text: t("clip.legend_t") }));
  container.replaceChildren(svg, legend);
}

// --- 4. LSTM ---------------------------------------------------------------------------------------
function setupLSTM(d) {
  buildSliders("lstm-sliders", "lstm", [
    ["c_prev", "lstm.c_prev", -2, 2, 0.01], ["f", "lstm.f", 0, 1, 0.01], ["i", "lstm.i", 0, 1, 0.01],
    ["g", "lstm.g", -1, 1, 0.01], ["o", "lstm.o", 0, 1, 0.01]], d);
  return widget("w-lstm",
    () => ["lstm", Object.fromEntries(["c_prev", "f", "i", "g", "o"].map((k) => [k, num("lstm-" + k)]))],
    (data) => {
      for (const k of ["retained", "written", "c", "h"]) $("lstm-" + k).textContent = fmt(data[k]);
      drawCellBar($("lstm-bar"), data.retained, data.c);
    });
}

// A number line from -2 to 2: the retained part runs from 0, the written part from there to c.
function drawCellBar(container, retained, c) {
  const W = 340, H = 74, L = 20, R = 20;
  const x = (v) => L + ((Math.max(-2, Math.min(2, v)) + 2) / 4) * (W - L - R);
  const svg = svgRoot(W, H);
  svg.append(svgEl("line", { x1: L, y1: 40, x2: W - R, y2: 40, class: "axis" }));
  for (const v of [-2, -1, 0, 1, 2]) {
    svg.append(svgEl("line", { x1: x(v), y1: 36, x2: x(v), y2: 44, class: "axis" }));
    svg.append(svgEl("text", { x: x(v), y: 60, class: "tick", "text-anchor": "middle" }, String(v)));
  }
  const seg = (a, b, cls, y) => svg.append(svgEl("rect", { x: Math.min(x(a), x(b)), y, width: Math.abs(x(b) - x(a)), height: 12, class: cls }));
  seg(0, retained, "retained", 14);
  seg(retained, c, "written", 14);
  svg.append(svgEl("line", { x1: x(c), y1: 8, x2: x(c), y2: 44, class: "cmark" }));
  svg.append(svgEl("text", { x: x(c), y: 8, class: "tick", "text-anchor": "middle" }, "c"));
  const legend = el("div", { class: "legend" }, el("span", { class: "key retained", text: t("lstm.retained") }),
    el("span", { class: "key written", text: t("lstm.written") }));
  container.replaceChildren(svg, legend);
}

// --- 5. GRU ----------------------------------------------------------------------------------------
function setupGRU(d) {
  buildSliders("gru-sliders", "gru", [
    ["h_prev", "gru.h_prev", -1, 1, 0.01], ["z", "gru.z", 0, 1, 0.01], ["candidate", "gru.candidate", -1, 1, 0.01]], d);
  $(d.convention === "keep_old" ? "gru-conv-old" : "gru-conv-new").checked = true;
  const convention = () => ($("gru-conv-old").checked ? "keep_old" : "keep_new");
  const w = widget("w-gru",
    () => ["gru", { h_prev: num("gru-h_prev"), z: num("gru-z"), candidate: num("gru-candidate"), convention: convention() }],
    (data, body) => {
      $("gru-formula").textContent = t(body.convention === "keep_old" ? "gru.formula_old" : "gru.formula_new");
      $("gru-h").textContent = fmt(data.h);
      $("gru-other").textContent = t("gru.other", {
        conv: t(data.other.convention === "keep_old" ? "gru.keep_old" : "gru.keep_new"), z: fmt(data.other.z), h: fmt(data.other.h) });
    });
  // Switching the convention re-expresses the same step: z becomes the other convention's z.
  $("w-gru").querySelectorAll("input[name=gru-conv]").forEach((radio) => radio.addEventListener("change", () => {
    if (w.last && w.last.data.other.convention === convention()) setSlider("gru-z", w.last.data.other.z);
  }));
  return w;
}

// --- 6. attention ----------------------------------------------------------------------------------
function setupAttention(selfDefaults, crossDefaults) {
  let mode = "self";
  const texts = {
    self: { q: matrixText(selfDefaults.queries), k: matrixText(selfDefaults.keys), v: matrixText(selfDefaults.values) },
    cross: { q: matrixText(crossDefaults.queries), k: matrixText(crossDefaults.keys), v: matrixText(crossDefaults.values) },
  };
  const load = () => setFields({ "att-queries": texts[mode].q, "att-keys": texts[mode].k, "att-values": texts[mode].v });
  const save = () => { texts[mode] = { q: $("att-queries").value, k: $("att-keys").value, v: $("att-values").value }; };
  const resetToggles = (dflt) => setFields({ "att-causal": !!dflt.causal, "att-reverse": !!dflt.reverse_mask,
    "att-padding": dflt.padding, "att-valid": dflt.valid_length });
  load();
  resetToggles(selfDefaults);
  const w = widget("w-attention", () => {
    const body = { queries: parseMatrix($("att-queries").value), keys: parseMatrix($("att-keys").value),
      values: parseMatrix($("att-values").value), padding: $("att-padding").checked, valid_length: int("att-valid") };
    if (mode === "cross") return ["cross_attention", body];
    return ["attention", { ...body, causal: $("att-causal").checked, reverse_mask: $("att-causal").checked && $("att-reverse").checked }];
  }, (data) => {
    const rows = data.weights.length, cols = data.weights[0].length;
    const rowLabel = (i) => t(mode === "cross" ? "att.target_row" : "att.query_row", { i: i + 1 });
    const colLabel = (j) => t(mode === "cross" ? "att.source_col" : "att.key_col", { j: j + 1 });
    const rowLabels = [...Array(rows).keys()].map(rowLabel), colLabels = [...Array(cols).keys()].map(colLabel);
    const finite = data.scores.flat().filter((s) => s !== null);
    const scale = Math.max(1e-9, ...finite.map(Math.abs));
    heatmap($("att-scores"), rows, cols, rowLabels, colLabels,
      (r, c) => (data.scores[r][c] === null ? t("att.masked") : fmt(data.scores[r][c])),
      (r, c) => (data.scores[r][c] === null ? null : data.scores[r][c] / scale));
    heatmap($("att-weights"), rows, cols, rowLabels, colLabels,
      (r, c) => (data.mask[r][c] ? fmt(data.weights[r][c]) : t("att.masked")),
      (r, c) => (data.mask[r][c] ? data.weights[r][c] : null));
    $("att-output").replaceChildren(...data.output.map((row, i) => el("div", { text: `${rowLabel(i)}: ${row.length === 1 ? fmt(row[0]) : fmtVec(row)}` })));
    $("att-flags").textContent = data.fully_masked_rows.length ? t("att.fully_masked", { rows: data.fully_masked_rows.map((r) => r + 1).join(", ") }) : "";
    const leak = $("att-leak");
    leak.className = "note";
    if (mode === "cross") leak.textContent = t("att.cross_note");
    else if (!data.leak_check.checked) leak.textContent = t("att.leak_off");
    else if (data.leak_check.leaks.length) {
      leak.textContent = t("att.leak_found", { pairs: data.leak_check.leaks.map(([i, j]) => `${i + 1}←${j + 1}`).join(", ") });
      leak.classList.add("bad");
    } else { leak.textContent = t("att.leak_ok"); leak.classList.add("good"); }
    $("att-reverse").disabled = !$("att-causal").checked;
    $("att-queries-label").dataset.i18n = mode === "cross" ? "att.queries_cross" : "att.queries";
    $("att-keys-label").dataset.i18n = mode === "cross" ? "att.keys_cross" : "att.keys";
    I18N.apply($("w-attention"));
  });
  const setMode = (next) => {
    save();
    mode = next;
    load();
    $("att-mode-self").classList.toggle("active", mode === "self");
    $("att-mode-cross").classList.toggle("active", mode === "cross");
    $("w-attention").classList.toggle("cross", mode === "cross");
    resetToggles(mode === "self" ? selfDefaults : crossDefaults);
    w.refresh();
  };
  $("att-mode-self").addEventListener("click", () => setMode("self"));
  $("att-mode-cross").addEventListener("click", () => setMode("cross"));
  $("att-equal").addEventListener("click", () => {
    // a zero query scores every key the same (0), whatever the keys are
    try { $("att-queries").value = matrixText(parseMatrix($("att-queries").value).map((row) => row.map(() => 0))); } catch (e) { /* the refresh reports it */ }
    w.refresh();
  });
  $("att-default").addEventListener("click", () => {
    const dflt = mode === "self" ? selfDefaults : crossDefaults;
    texts[mode] = { q: matrixText(dflt.queries), k: matrixText(dflt.keys), v: matrixText(dflt.values) };
    load();
    resetToggles(dflt);
    w.refresh();
  });
  return w;
}

// --- 7. causal mask ----------------------------------------------------------------------------------
function setupMask(d) {
  setFields({ "mask-tokens": d.tokens.join(" ") });
  return widget("w-mask", () => ["causal_mask", { tokens: $("mask-tokens").value.split(/\s+/).filter(Boolean) }],
    (data) => {
      const n = data.tokens.length;
      heatmap($("mask-grid"), n, n, data.tokens, data.tokens, (r, c) => (data.mask[r][c] ? "✓" : ""),
        (r, c) => (data.mask[r][c] ? 0.6 : null), { compact: true, corner: t("mask.corner") });
      $("mask-visible").textContent = t("mask.visible", { v: data.visible, n });
    });
}

// --- 8. multi-head shapes ------------------------------------------------------------------------------
function setupMultihead(d) {
  setFields({ "mh-n": d.n, "mh-d": d.d_model, "mh-h": d.num_heads });
  return widget("w-multihead", () => ["multihead", { n: int("mh-n"), d_model: int("mh-d"), num_heads: int("mh-h") }],
    (data) => {
      const flow = $("mh-flow");
      flow.replaceChildren();
      data.shapes.forEach(([name, shape], idx) => {
        if (idx > 0) flow.append(el("div", { class: "arrow", text: "→" }));
        const perHead = ["q", "k", "v", "scores", "weights", "head_output"].includes(name);
        flow.append(el("div", { class: "shape" + (perHead ? " per-head" : ""), id: "mh-" + name },
          el("div", { class: "name", text: t("mh." + name, { h: data.num_heads }) }),
          el("div", { class: "dims mono", text: `${shape[0]} × ${shape[1]}` }),
          perHead ? el("div", { class: "tag", text: `× ${data.num_heads}` }) : null));
      });
    });
}

// --- 9. BPE ----------------------------------------------------------------------------------------
function parseWordCounts(text) {
  const counts = {};
  for (const part of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const match = part.match(/^(\S+)\s+(\d+)$/);
    if (!match) throw new Error(t("bpe.bad_words") + `: "${part}"`);
    counts[match[1]] = Number(match[2]);
  }
  return counts;
}

function setupBPE(d) {
  setFields({ "bpe-words": Object.entries(d.word_counts).map(([w, c]) => `${w} ${c}`).join(", "), "bpe-merges": d.num_merges });
  let step = 1;
  const w = widget("w-bpe", () => ["bpe", { word_counts: parseWordCounts($("bpe-words").value), num_merges: int("bpe-merges") }],
    (data) => {
      const n = data.steps.length;
      if (n === 0) {  // single-character words: nothing to merge
        $("bpe-step-label").textContent = t("bpe.none");
        for (const id of ["bpe-pairs", "bpe-words-after", "bpe-merge-list"]) $(id).replaceChildren();
        $("bpe-chosen").textContent = $("bpe-tie").textContent = "";
        $("bpe-back").disabled = $("bpe-fwd").disabled = true;
        return;
      }
      step = Math.max(1, Math.min(step, n));
      const s = data.steps[step - 1];
      $("bpe-step-label").textContent = t("common.step_of", { k: step, n });
      const same = (p, q) => p[0] === q[0] && p[1] === q[1];
      const table = $("bpe-pairs");
      table.replaceChildren(el("tr", {}, el("th", { text: t("bpe.pair") }), el("th", { text: t("bpe.count") })),
        ...s.pair_counts.map(([a, b, c]) => el("tr", {
          class: same([a, b], s.chosen) ? "chosen" : s.tied.some((p) => same(p, [a, b])) ? "tied" : "" },
          el("td", { class: "mono", text: `${a} ${b}` }), el("td", { text: String(c) }))));
      $("bpe-chosen").textContent = t("bpe.chosen", { k: step, a: s.chosen[0], b: s.chosen[1], ab: s.chosen.join(""), c: s.best_count });
      $("bpe-tie").textContent = s.tied.length > 1
        ? t("bpe.tie", { c: s.best_count, pairs: s.tied.map((p) => `“${p[0]} ${p[1]}”`).join(", ") }) : t("bpe.no_tie");
      $("bpe-words-after").replaceChildren(...Object.entries(s.words).map(([word, parts]) =>
        el("div", { class: "word" }, el("span", { class: "w", text: word }), ...parts.map((p) => el("span", { class: "tok", text: p })))));
      $("bpe-merge-list").replaceChildren(...data.steps.slice(0, step).map((x) => el("li", { text: `${x.chosen[0]} ${x.chosen[1]}` })));
      $("bpe-back").disabled = step <= 1;
      $("bpe-fwd").disabled = step >= n;
    });
  $("bpe-back").addEventListener("click", () => { step -= 1; w.render(); });
  $("bpe-fwd").addEventListener("click", () => { step += 1; w.render(); });
  return w;
}

// --- 10. self-check ------------------------------------------------------------------------------------
const CARDS = [
  ["recurrence", (a) => ({ h3: fmt(a.recurrence.h3), rev: fmt(a.recurrence.reversed_h3) })],
  ["char_lm", (a) => ({ row1: fmtVec(a.char_lm.reset_l_rows[0]), row2: fmtVec(a.char_lm.reset_l_rows[1]) })],
  ["gradient", (a) => ({ small: fmt(a.gradient.products[0]), large: fmt(a.gradient.products[1]),
    global: fmtVec(a.gradient.clipping.global_norm.clipped), coord: fmtVec(a.gradient.clipping.coordinatewise) })],
  ["lstm", (a) => ({ c: fmt(a.lstm.keep.c), c0: fmt(a.lstm.default.c), h0: fmt(a.lstm.default.h) })],
  ["gru", (a) => ({ h: fmt(a.gru.h) })],
  ["attention", (a) => ({ w: fmtVec(a.attention.weights), out: fmt(a.attention.output[0]), eq: fmt(a.attention.equal_output[0]),
    causal: fmt(a.attention.causal.output[0][0]) })],
  ["mask", (a) => ({ v3: a.causal_mask.visible3, v5: a.causal_mask.visible5 })],
  ["multihead", (a) => ({ q: a.multihead.q.join(" × "), s: a.multihead.scores.join(" × "), c: a.multihead.concat.join(" × ") })],
  ["bpe", (a) => ({ a: a.bpe.first.chosen[0], b: a.bpe.first.chosen[1], c: a.bpe.first.best_count,
    tied: a.bpe.first.tied.filter((p) => p.join(" ") !== a.bpe.first.chosen.join(" ")).map((p) => `“${p[0]} ${p[1]}”`).join(", ") })],
  ["dependency", (a) => ({ answer: t(a.dependency.depends[0][3] ? "common.yes" : "common.no"),
    list: a.dependency.depends[0].map((dep, j) => (dep ? j + 1 : null)).filter((j) => j !== null).join(", ") })],
];

function setupSelfCheck() {
  const container = $("sc-cards");
  const open = new Set();
  return widget("w-selfcheck", () => ["selfcheck", {}], (answers) => {
    container.replaceChildren(...CARDS.map(([name, fill]) => {
      const answer = el("p", { class: "answer", id: "sc-answer-" + name, text: t("sc.a." + name, fill(answers)) });
      answer.hidden = !open.has(name);
      const button = el("button", { type: "button", id: "sc-reveal-" + name, text: t(open.has(name) ? "common.hide" : "common.reveal") });
      button.addEventListener("click", () => {
        if (open.has(name)) open.delete(name); else open.add(name);
        answer.hidden = !open.has(name);
        button.textContent = t(open.has(name) ? "common.hide" : "common.reveal");
      });
      return el("div", { class: "card", id: "sc-card-" + name }, el("p", { class: "question", text: t("sc.q." + name) }), button, answer);
    }));
  });
}

// --- 11. dependency map ----------------------------------------------------------------------------------
function setupDependency(d) {
  setFields({ "dep-kind": d.kind, "dep-n": d.num_tokens, "dep-seed": d.seed });
  return widget("w-dependency", () => ["dependency", { kind: $("dep-kind").value, num_tokens: int("dep-n"), seed: int("dep-seed") }],
    (data) => {
      const largest = Math.max(1e-12, ...data.change.flat());
      heatmap($("dep-grid"), data.output_labels.length, data.input_labels.length, data.output_labels, data.input_labels,
        (r, c) => (data.depends[r][c] ? fmt(data.change[r][c]) : ""),
        (r, c) => (data.depends[r][c] ? 0.3 + 0.7 * data.change[r][c] / largest : null), { corner: t("dep.corner") });
      $("dep-note").textContent = t("dep.note");
    });
}

// --- 12. language and glossary ---------------------------------------------------------------------------
function renderGlossary() {
  $("glossary").replaceChildren(...GLOSSARY.map(([en, zh]) =>
    el("div", { class: "term" }, el("span", { class: "en", text: en }), el("span", { class: "zh", text: zh }))));
}

function setLanguage(lang) {
  I18N.lang = lang;
  try { localStorage.setItem("seqlab-lang", lang); } catch (e) { /* private mode: not remembered */ }
  $("lang-en").classList.toggle("active", lang === "en");
  $("lang-zh").classList.toggle("active", lang === "zh");
  I18N.apply();
  renderGlossary();
  widgets.forEach((w) => w.render());
}

async function main() {
  let lang = new URLSearchParams(location.search).get("lang");
  if (lang !== "en" && lang !== "zh") { try { lang = localStorage.getItem("seqlab-lang"); } catch (e) { lang = null; } }
  I18N.lang = lang === "zh" ? "zh" : "en";
  // course.js: the path and the open step's lesson, drawn first (its widget moved into it); the
  // widgets' defaults are asked for after it, so that their computation does not hold the course up
  await setupCourse();
  const response = await fetch("/api/defaults");
  const d = await response.json();
  setupRecurrence(d.recurrence);
  setupCharLM(d.char_lm);
  setupGradient(d.repeated_factor, d.clipping, d.tbptt);
  setupLSTM(d.lstm);
  setupGRU(d.gru);
  setupAttention(d.attention, d.cross_attention);
  setupMask(d.causal_mask);
  setupMultihead(d.multihead);
  setupBPE(d.bpe);
  setupSelfCheck();
  setupDependency(d.dependency);
  await setupModel();
  $("lang-en").addEventListener("click", () => setLanguage("en"));
  $("lang-zh").addEventListener("click", () => setLanguage("zh"));
  setLanguage(I18N.lang);
  await Promise.all(widgets.map((w) => w.refresh()));
  document.body.dataset.ready = "1";
}

document.addEventListener("DOMContentLoaded", main);
