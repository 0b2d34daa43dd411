// Section 12: panels over the user's own trained run (seqlab explore --run DIR). Each panel POSTs
// the run and the text to /api/lm/<panel> and draws the JSON it gets back; the page computes
// nothing (no softmax, no filtering, no tokenizing): every number comes from the package.
"use strict";

const DEFAULT_MODEL_TEXT = "Once upon a time there was a little cat. The cat";

// Whitespace drawn visibly inside token pieces: "␣" space, "↵" newline, "⇥" tab.
const visible = (s) => s.replace(/ /g, "␣").replace(/\n/g, "↵").replace(/\r/g, "␍").replace(/\t/g, "⇥");
const hexBytes = (bytes) => bytes.map((b) => b.toString(16).padStart(2, "0")).join(" ");

// POST and read a stream of JSON lines (one per piece of generated text), calling onLine for each.
async function apiStream(name, body, onLine) {
  pending += 1;
  document.body.dataset.busy = "1";
  try {
    const response = await fetch("/api/" + name, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!response.ok) throw apiError(await response.json(), response);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffer.slice(0, newline));
        if (line.error !== undefined) throw apiError(line, {});  // the server's last line: what went wrong
        onLine(line);
        buffer = buffer.slice(newline + 1);
      }
    }
  } finally {
    pending -= 1;
    if (pending === 0) document.body.dataset.busy = "0";
  }
}

// An attention map: one SVG cell per (row, column) pair shaded by its weight; data-w holds the
// API's number for each cell. causal: the upper triangle (future keys) is left empty.
// The heatmap's colours: a sequential ramp (ColorBrewer Blues, light to dark, ordered in
// lightness), each row scaled to its own largest weight, so a row spread over 34 tokens shows its
// structure as clearly as a row that puts everything on one token. attnColor(0) is the palest
// stop, attnColor(1) the darkest: "rgb(8, 48, 107)".
const ATTN_RAMP = [[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]];
function attnColor(f) {
  const x = Math.max(0, Math.min(1, f)) * (ATTN_RAMP.length - 1), i = Math.min(ATTN_RAMP.length - 2, Math.floor(x));
  const mix = ATTN_RAMP[i].map((v, c) => Math.round(v + (x - i) * (ATTN_RAMP[i + 1][c] - v)));
  return `rgb(${mix[0]}, ${mix[1]}, ${mix[2]})`;
}

// The colour bar under a heatmap: the ramp from 0 to each row's largest weight.
function attnColorBar(width) {
  const svg = svgRoot(width, 30);
  svg.classList.add("attn-bar");
  svg.style.maxWidth = `${width}px`;  // drawn at its own size, like the map above it
  const steps = 40;
  for (let s = 0; s < steps; s++) {
    svg.append(svgEl("rect", { x: 4 + (s * (width - 8)) / steps, y: 2, width: (width - 8) / steps + 0.5, height: 10,
      fill: attnColor(s / (steps - 1)) }));
  }
  svg.append(svgEl("text", { x: 4, y: 26, class: "attn-label" }, "0"));
  svg.append(svgEl("text", { x: width - 4, y: 26, class: "attn-label", "text-anchor": "end", "data-i18n": "attn.bar_max" },
    t("attn.bar_max")));
  return svg;
}

// flat (the translate panel): horizontal 12 px labels over a rectangular map; a column is widened
// to its longest label while the map stays under 720 px, otherwise only every n-th column is
// labelled, so that no two labels overlap (the hover line names every cell).
function attentionMap(container, rowLabels, colLabels, weights, causal, onHover, { flat = false } = {}) {
  const rows = rowLabels.length, cols = colLabels.length;
  const cell = Math.max(4, Math.min(26, Math.floor(480 / Math.max(rows, cols))));
  const labels = flat || cell >= 11;
  const text = (label) => visible(label).slice(0, 9);
  const font = 12, charW = font * 0.62;  // the monospace advance, generously
  const longest = (ls) => Math.max(1, ...ls.map((l) => text(l).length)) * charW;
  const colW = flat && cols * (longest(colLabels) + 6) <= 720 ? Math.max(cell, Math.ceil(longest(colLabels) + 6)) : cell;
  const colStep = flat ? Math.max(1, Math.ceil((longest(colLabels) + 6) / colW)) : 1;
  const rowStep = flat ? Math.max(1, Math.ceil((font + 2) / cell)) : 1;
  const left = !labels ? 8 : flat ? Math.ceil(longest(rowLabels)) + 10 : 72;
  const top = !labels ? 8 : flat ? font + 8 : 72;
  const width = left + cols * colW + 4;
  const svg = svgRoot(width, top + rows * cell + 4);
  svg.classList.add("attn");
  if (flat) svg.classList.add("flat");
  svg.style.maxWidth = `${width}px`;
  svg.append(svgEl("rect", { x: left, y: top, width: cols * colW, height: rows * cell, class: "attn-bg" }));
  if (labels && flat) {
    rowLabels.forEach((label, r) => { if (r % rowStep === 0) svg.append(svgEl("text", { x: left - 5, y: top + r * cell + cell / 2,
      class: "attn-label row", "text-anchor": "end", "dominant-baseline": "central" }, text(label))); });
    colLabels.forEach((label, c) => { if (c % colStep === 0) svg.append(svgEl("text", { x: left + c * colW + colW / 2, y: top - 5,
      class: "attn-label col", "text-anchor": "middle" }, text(label))); });
  } else if (labels) {
    rowLabels.forEach((label, r) => svg.append(svgEl("text", { x: left - 4, y: top + r * cell + cell * 0.7,
      class: "attn-label", "text-anchor": "end" }, text(label))));
    colLabels.forEach((label, c) => svg.append(svgEl("text", { x: 0, y: 0, class: "attn-label",
      transform: `translate(${left + c * cell + cell * 0.7}, ${top - 4}) rotate(-90)` }, text(label))));
  }
  for (let q = 0; q < rows; q++) {
    const shown = causal ? q + 1 : cols;
    const rowMax = Math.max(...weights[q].slice(0, shown).map((w) => (Number.isFinite(w) ? w : 0)), 0);
    for (let k = 0; k < shown; k++) {
      const w = weights[q][k];
      const shade = rowMax > 0 ? Math.max(0, w) / rowMax : 0;
      svg.append(svgEl("rect", { x: left + k * colW, y: top + q * cell, width: colW - 1, height: cell - 1,
        class: "attn-cell", fill: attnColor(shade), "data-q": q, "data-k": k, "data-w": w, "data-shade": shade }));
    }
  }
  svg.addEventListener("mousemove", (event) => {
    const target = event.target;
    if (target.classList && target.classList.contains("attn-cell")) {
      target.classList.add("hover");
      onHover(Number(target.dataset.q), Number(target.dataset.k), Number(target.dataset.w));
    }
  });
  svg.addEventListener("mouseout", (event) => { if (event.target.classList) event.target.classList.remove("hover"); });
  container.replaceChildren(svg, attnColorBar(Math.min(width, 320)));
}

// A small canvas thumbnail of one head's weights (no labels), for comparing heads at a glance.
// causal: only the lower triangle (a square self-attention map); otherwise any rows x columns, with
// cells stretched up to twice along the shorter side so that a short target or source still gives a thumbnail one can read.
// size: the longer side in pixels, about.
function attentionThumb(weights, selected, causal = true, size = 96) {
  const rows = weights.length, cols = rows ? weights[0].length : 0;
  const px = Math.max(1, Math.floor(size / Math.max(rows, cols, 1)));
  const stretch = (n) => (causal ? px : Math.max(px, Math.min(2 * px, Math.floor(size / Math.max(n, 1)))));
  const pw = stretch(cols), ph = stretch(rows);
  const canvas = el("canvas", { width: cols * pw, height: rows * ph,
    class: "thumb" + (causal ? "" : " rect") + (selected ? " selected" : "") });
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#f1f3f6";
  ctx.fillRect(0, 0, cols * pw, rows * ph);
  for (let q = 0; q < rows; q++) {
    // a cross-attention thumbnail is shaded like the map above it: each row scaled to its largest weight
    const rowMax = causal ? 1 : Math.max(...weights[q].map((w) => (Number.isFinite(w) ? w : 0)), 0);
    for (let k = 0; k < (causal ? q + 1 : cols); k++) {
      ctx.fillStyle = causal ? `rgba(37, 99, 235, ${0.03 + 0.97 * Math.max(0, Math.min(1, weights[q][k]))})`
        : attnColor(rowMax > 0 ? Math.max(0, weights[q][k]) / rowMax : 0);
      ctx.fillRect(k * pw, q * ph, pw, ph);
    }
  }
  return canvas;
}

function fillSelect(select, count, keep) {
  const previous = Number(select.value);
  select.replaceChildren(...[...Array(count).keys()].map((i) => el("option", { value: String(i), text: String(i) })));
  select.value = String(keep && previous < count ? previous : 0);
}

async function setupModel() {
  const { runs, no_lm_run: noRun, no_s2s_run: noS2S, paths, induction } = await api("runs", {});
  const translateOpened = setupTranslate(runs.filter((r) => r.kind === "seq2seq"), noS2S);
  setupPaths(paths);
  setupPathsAsk(runs.filter((r) => r.kind === "seq2seq"));
  setupCompare();
  setupInduction(induction);
  setupFlow(runs.filter((r) => r.kind !== "seq2seq"), noRun);  // the information-flow section (flow.js)
  const lmRuns = runs.filter((r) => r.kind !== "seq2seq" && r.tokens !== "ids");  // the panels below read prose
  const runSelect = $("model-run");
  const renderRuns = () => {
    if (!lmRuns.length) {
      runSelect.replaceChildren(el("option", { value: "", "data-i18n": "model.no_runs", text: t("model.no_runs") }));
      runSelect.disabled = true;
      return;
    }
    const current = runSelect.value;
    runSelect.replaceChildren(...lmRuns.map((r) => el("option", { value: r.id, text: r.id + (r.error ? " ⚠" : "") })));
    if (current) runSelect.value = current;
  };
  renderRuns();
  $("model-text").value = DEFAULT_MODEL_TEXT;
  // A run the server already called unusable (or no run at all) is reported without a request.
  const withRun = (extra) => {
    const run = lmRuns.find((r) => r.id === runSelect.value);
    const problem = run ? run.error : noRun;
    if (problem) throw apiError(problem, {});
    return { ...(run ? { run: run.id } : {}), ...extra };
  };
  const withText = (extra) => withRun({ text: $("model-text").value, ...extra });
  const textWidgets = [];

  // --- run: loss curve and config
  const info = widget("w-model", () => ["lm/info", withRun({})], (data) => {
    const { train, val } = data.loss;
    const series = [];
    if (train.length) series.push({ values: train.map((p) => p[1]), xs: train.map((p) => p[0]), cls: "s0" });
    if (val.length) series.push({ values: val.map((p) => p[1]), xs: val.map((p) => p[0]), cls: "s1" });
    if (series.length) lineChart($("model-loss"), series, { xLabel: t("model.step") });
    else $("model-loss").replaceChildren(el("p", { class: "note", text: t("model.no_log") }));
    drawHeadScores(data.heads);
    const m = data.model;
    const facts = [["model.checkpoint_step", data.step], ["model.parameters", data.parameters.toLocaleString("en")], ["model.layers", m.num_layers],
      ["model.heads", m.num_heads], ["model.d_model", m.d_model], ["model.context", m.context_length],
      ["model.vocab", m.vocab_size]];
    if (val.length) facts.push(["model.last_val", fmt(val[val.length - 1][1])]);
    $("model-facts").replaceChildren(...facts.flatMap(([key, value]) => [el("dt", { text: t(key) }), el("dd", { text: String(value) })]));
    $("model-config").replaceChildren(...Object.entries(data.config).map(([key, value]) =>
      el("tr", {}, el("th", { text: key }), el("td", { text: typeof value === "object" ? JSON.stringify(value) : String(value) }))));
  }, "model-info-panel");

  // --- head scores beside the loss (a run trained with --track-heads): the best head's score per
  // role at each evaluation, on a 0..1 axis under the loss curve
  function drawHeadScores(heads) {
    let box = $("model-heads");
    if (!heads) { if (box) box.parentNode.remove(); return; }
    if (!box) {
      box = el("div", { id: "model-heads", class: "chart" });
      $("model-loss").parentNode.append(el("div", { class: "head-scores" },
        el("h4", { text: t("model.heads_title") }), box, el("div", { class: "legend" })));
    }
    box.parentNode.querySelector("h4").textContent = t("model.heads_title");
    const labels = { previous_token: "model.role_previous_token", duplicate_token: "model.role_duplicate_token",
      induction: "model.role_induction", first_token: "model.role_first_token" };
    const roles = Object.keys(labels).filter((r) => heads.best[r]);
    const series = roles.map((role, i) => ({ values: heads.best[role], xs: heads.steps, cls: "s" + (i + 2) }));
    lineChart(box, series, { xLabel: t("model.step"), height: 150, yTickFormat: (y) => y.toFixed(2) });
    box.nextSibling.replaceChildren(...roles.map((role, i) => el("span", { class: "key s" + (i + 2), text: t(labels[role]) })));
  }

  // --- tokens
  textWidgets.push(widget("w-model", () => ["lm/tokens", withText({})], (data) => {
    $("model-tokens").replaceChildren(...data.tokens.map((tok, i) => el("span", { class: "piece", title: t("model.piece_title", { i, bytes: hexBytes(tok.bytes) }) },
      el("span", { class: "piece-text", text: visible(tok.text) }),
      el("span", { class: "piece-id", text: String(tok.id) }),
      el("span", { class: "piece-bytes", text: hexBytes(tok.bytes) }))));
    $("model-context").textContent = t("model.context_used", { n: data.tokens.length, ctx: data.context_length });
    const cut = $("model-cut");
    cut.hidden = !data.truncated;
    cut.textContent = data.truncated ? t("model.cut", { n: data.total - data.tokens.length, ctx: data.context_length, text: data.cut_text.slice(0, 200) }) : "";
  }, "model-tokens-panel"));

  // --- attention: one head large, every head small
  let heads = null;  // the last lm/heads response, for the grid
  const drawGrid = () => {
    if (!heads) return;
    const layer = Number($("attn-layer").value), head = Number($("attn-head").value);
    $("attn-grid").replaceChildren(...heads.weights.map((layerWeights, l) => el("div", { class: "grid-row" },
      el("span", { class: "grid-label", text: t("model.layer_n", { l }) }),
      ...layerWeights.map((w, h) => {
        const thumb = el("button", { type: "button", class: "thumb-button", id: `attn-thumb-${l}-${h}`, title: t("model.layer_head", { l, h }) },
          attentionThumb(w, l === layer && h === head), el("span", { text: t("model.head_n", { h }) }));
        thumb.addEventListener("click", () => {
          $("attn-layer").value = String(l);
          $("attn-head").value = String(h);
          attention.refresh();
        });
        return thumb;
      }))));
  };
  const attention = widget("w-model", () => ["lm/attention", withText({
    layer: Number($("attn-layer").value || 0), head: Number($("attn-head").value || 0) })], (data) => {
    const pieces = data.tokens.map((tok) => tok.text);
    attentionMap($("attn-map"), pieces, pieces, data.weights, true, (q, k, w) => {
      $("attn-hover").textContent = t("model.hover", { q, k, a: visible(data.tokens[q].text), b: visible(data.tokens[k].text), w: fmt(w) });
    });
    $("attn-hover").textContent = t("model.hover_hint");
    drawGrid();
  }, "model-attn-panel");
  textWidgets.push(attention);
  const grid = widget("w-model", () => ["lm/heads", withText({})], (data) => {
    heads = data;
    fillSelect($("attn-layer"), data.weights.length, true);
    fillSelect($("attn-head"), data.weights[0].length, true);
    drawGrid();
  }, "attn-grid-box");
  textWidgets.push(grid);

  // --- next token
  const sliders = [["temperature", "model.temperature", 0, 2, 0.05, 1], ["top_k", "model.top_k", 0, 50, 1, 0],
    ["top_p", "model.top_p", 0.05, 1, 0.01, 1]];
  for (const [key, label, min, max, step, value] of sliders) {
    const input = el("input", { type: "range", id: "next-" + key, min, max, step });
    input.value = value;
    const readout = el("output", { id: `next-${key}-out`, class: "mono" });
    const sync = () => { readout.textContent = key === "top_k" && Number(input.value) === 0 ? t("model.off") : input.value; };
    input.addEventListener("input", sync);
    input.sync = sync;
    sync();
    $("next-sliders").append(el("label", { class: "slider" }, el("span", { "data-i18n": label, text: t(label) }), input, readout));
  }
  const filters = () => ({ temperature: Number($("next-temperature").value),
    top_k: Number($("next-top_k").value), top_p: Number($("next-top_p").value) });
  const next = widget("w-model", () => ["lm/next", withText(filters())], (data) => {
    $("next-top_k").sync();
    $("next-kept").textContent = t("model.kept_total", { n: data.kept_total, v: data.vocab_size });
    const top = Math.max(...data.candidates.map((c) => c.prob), 1e-12);
    const bar = (p, cls) => {  // CSSOM, not a style attribute: the page's CSP forbids inline styles
      const node = el("span", { class: "pbar " + cls });
      node.style.width = `${Math.round(120 * Math.min(1, p))}px`;
      return node;
    };
    $("next-table").replaceChildren(
      el("tr", {}, ...["model.rank", "model.token", "model.id", "model.prob", "model.kept", "model.filtered"].map((k) => el("th", { text: t(k) }))),
      ...data.candidates.map((c, i) => el("tr", { class: c.kept ? "kept" : "dropped" },
        el("td", { text: String(i + 1) }), el("td", { class: "tok", text: visible(c.text) }), el("td", { text: String(c.id) }),
        el("td", {}, bar(c.prob / top, "p"), el("span", { text: fmt(c.prob) })),
        el("td", { class: "kept-mark", text: c.kept ? "✓" : "✗" }),
        el("td", {}, c.kept ? bar(c.filtered_prob, "f") : null, el("span", { text: fmt(c.filtered_prob) })))));
  }, "model-next-panel");
  textWidgets.push(next);

  // --- shapes
  textWidgets.push(widget("w-model", () => ["lm/shapes", withText({})], (data) => {
    const perHead = ["q", "k", "v", "scores", "weights", "head_output"];
    $("model-flow").replaceChildren(...data.shapes.flatMap(([name, shape], idx) => [
      idx > 0 ? el("div", { class: "arrow", text: "→" }) : null,
      el("div", { class: "shape" + (perHead.includes(name) ? " per-head" : ""), id: "model-shape-" + name },
        el("div", { class: "name", text: t("mshape." + name, { h: data.num_heads, l: data.num_layers }) }),
        el("div", { class: "dims mono", text: shape.join(" × ") }))]).filter(Boolean));
  }, "model-shapes-panel"));

  // --- sample and generate: both change the text, then every panel follows it
  // the server reloads a run whose checkpoint changed; the info panel follows (step, loss curve)
  const refreshText = () => { info.refresh(); textWidgets.forEach((w) => w.refresh()); };
  let timer = null;
  $("model-text").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refreshText, 150); });
  runSelect.addEventListener("change", refreshText);
  const busy = (on) => { $("next-sample").disabled = $("next-generate").disabled = on; };
  $("next-sample").addEventListener("click", async () => {
    busy(true);
    try {
      const data = await api("lm/sample", withText(filters()));
      $("model-text").value = data.text;
      $("next-generated").textContent = t("model.sampled", { piece: visible(data.token.text), id: data.token.id });
      refreshText();
    } catch (err) { next.fail(err); } finally { busy(false); }
  });
  $("next-generate").addEventListener("click", async () => {
    busy(true);
    let added = "";
    try {
      await apiStream("lm/generate", withText({ ...filters(), max_tokens: 40 }), (line) => {
        if (line.piece !== undefined) {
          added += line.piece;
          $("model-text").value += line.piece;
          $("next-generated").textContent = t("model.generating", { text: visible(added) });
        } else if (line.done) {
          $("next-generated").textContent = t(line.stopped === "eos" ? "model.generated_eos" : "model.generated", { n: line.tokens });
        }
      });
      refreshText();
    } catch (err) { next.fail(err); } finally { busy(false); }
  });
  await translateOpened;
}

// Section 13: a seq2seq run translates the source text; its cross-attention per layer and head,
// the mean over heads, and for a character model the same summed over words. The panel opens on
// the run's worked example (seq2seq/info); every number shown comes from the API.
function setupTranslate(s2sRuns, noRun) {
  const select = $("tr-run");
  if (s2sRuns.length) select.replaceChildren(...s2sRuns.map((r) => el("option", { value: r.id, text: r.id })));
  else {
    select.replaceChildren(el("option", { value: "", "data-i18n": "model.no_runs", text: t("model.no_runs") }));
    select.disabled = true;
  }
  $("tr-text").value = "";
  $("tr-beam").value = 1;
  let info = null;  // the selected run's seq2seq/info
  const hint = () => {
    if (!s2sRuns.length) { $("tr-hint").textContent = t("tr.none"); return; }  // a hint, as section 14 gives
    if (!info) { $("tr-hint").textContent = ""; return; }
    const task = info.task || "pairs";
    $("tr-hint").textContent = t("tr.hint." + task, { lo: info.lengths[0], hi: info.lengths[1], example: info.example,
      file: info.pairs || "", n: info.task === "dates" ? info.formats.length : info.words.length });
  };
  const clear = () => {  // nothing of an earlier translation stays beside an error
    for (const id of ["tr-output", "tr-step", "tr-hover", "tr-note"]) $(id).textContent = "";
    for (const id of ["tr-map", "tr-grid", "tr-notes"]) $(id).replaceChildren();
  };
  if (!s2sRuns.length) {  // nothing to translate with: the hint alone, no empty menus
    for (const node of $("w-translate").querySelectorAll(".controls, .facts, .cols, #tr-notes")) node.style.display = "none";
  }
  const w = widget("w-translate", () => {
    if (!s2sRuns.length) { hint(); return null; }
    if (!$("tr-text").value && !info) return null;
    return ["seq2seq/translate", { run: select.value, text: $("tr-text").value, beam: Number($("tr-beam").value) }];
  }, (data) => draw(data));
  w.onFail = clear;

  // which map: view "last" (last layer, mean over heads), "mean" (a layer's mean over heads) or
  // "head" (one head); units "chars" or "words" (character models only)
  const draw = (data) => {
    $("tr-output").textContent = data.output;
    $("tr-step").textContent = String(data.step);
    $("tr-notes").replaceChildren(...data.notes.map((n) => el("li", { text: t("note." + n.code, n.params) })));
    const words = $("tr-units").value === "words" && data.words;
    $("tr-units").disabled = !data.words;
    if (!data.words) $("tr-units").value = "chars";
    const source = words ? data.words.source : data.source_tokens;
    const output = words ? data.words.output : data.output_tokens;
    const heads = words ? data.words.cross_attention : data.cross_attention;
    const means = words ? data.words.mean_attention : data.mean_attention;
    if (!heads.length) {
      $("tr-note").textContent = t("tr.no_attention", { arch: data.arch });
      for (const id of ["tr-map", "tr-grid"]) $(id).replaceChildren();
      return;
    }
    fillSelect($("tr-layer"), heads.length, true);
    fillSelect($("tr-head"), heads[0].length, true);
    const view = $("tr-view").value;
    if (view === "last") $("tr-layer").value = String(heads.length - 1);
    const layer = Number($("tr-layer").value), head = Number($("tr-head").value);
    const weights = view === "head" ? heads[layer][head] : means[layer];
    $("tr-map").dataset.view = `${view} ${layer} ${view === "head" ? head : "mean"} ${words ? "words" : "chars"}`;
    $("tr-note").textContent = t(words ? "tr.note_words" : "tr.note") + " " +
      t(view === "head" ? "tr.showing_head" : "tr.showing_mean", { l: layer, h: head });
    attentionMap($("tr-map"), output, source, weights, false, (q, k, wt) => {
      $("tr-hover").textContent = t("tr.hover", { q, k, a: visible(output[q]), b: visible(source[k]), w: fmt(wt) });
    }, { flat: true });
    $("tr-hover").textContent = t("model.hover_hint");
    $("tr-grid").replaceChildren(...heads.map((layerHeads, l) => el("div", { class: "grid-row" },
      el("span", { class: "grid-label", text: t("model.layer_n", { l }) }),
      ...[...layerHeads.map((hw, h) => [hw, h, "head"]), [means[l], null, "mean"]].map(([hw, h, kind]) => {
        const chosen = kind === "head" ? view === "head" && l === layer && h === head : view !== "head" && l === layer;
        const thumb = el("button", { type: "button", class: "thumb-button", id: kind === "head" ? `tr-thumb-${l}-${h}` : `tr-thumb-${l}-mean`,
          title: kind === "head" ? t("model.layer_head", { l, h }) : t("tr.layer_mean", { l }) },
          attentionThumb(hw, chosen, false, 168), el("span", { text: kind === "head" ? t("model.head_n", { h }) : t("tr.mean") }));
        thumb.addEventListener("click", () => {
          $("tr-view").value = kind === "head" ? "head" : (l === heads.length - 1 ? "last" : "mean");
          $("tr-layer").value = String(l);
          if (kind === "head") $("tr-head").value = String(h);
          redraw();
        });
        return thumb;
      }))));
  };
  const redraw = () => { if (w.last) draw(w.last.data); };
  // choosing a head shows that head; choosing a layer shows its mean unless a head is shown
  $("tr-head").addEventListener("change", () => { $("tr-view").value = "head"; });
  $("tr-layer").addEventListener("change", () => { if ($("tr-view").value === "last") $("tr-view").value = "mean"; });
  const open = async () => {  // the run's worked example, translated at once (awaited before data-ready)
    info = null;
    clear();
    if (!s2sRuns.length) return w.refresh();
    try {
      info = await api("seq2seq/info", { run: select.value });
      $("tr-text").value = info.example;
      hint();
    } catch (err) { w.fail(err); return; }
    w.refresh();
  };
  select.addEventListener("change", open);
  const render = w.render;
  w.render = () => { render(); hint(); };  // re-translated on a language switch
  return open();
}
