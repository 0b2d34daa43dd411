// Section 14: the results of `seqlab paths` (POST /api/paths), one chart per task, one line per
// architecture. What is drawn comes from the API (seqlab/seq2seq/paths/chart.py, which paths.png
// draws too): each architecture's colour, dash and marker, the points the small-sample rule keeps,
// their 95% Wilson intervals and sideways offsets, the pairs per length, the lines that coincide.
// This file only lays them out; it holds no colours and computes no statistics.
"use strict";

const PATHS_LINE_WIDTH = 2;
const PATHS_LABEL_GAP = 16;  // between line-end labels: an 11px label is about 14 units tall

const PATHS_MARKERS = {
  circle: (x, y, r) => svgEl("circle", { cx: x, cy: y, r }),
  square: (x, y, r) => svgEl("rect", { x: x - 0.85 * r, y: y - 0.85 * r, width: 1.7 * r, height: 1.7 * r }),
  triangle: (x, y, r) => svgEl("polygon", { points: `${x},${y - 1.2 * r} ${x - 1.05 * r},${y + 0.8 * r} ${x + 1.05 * r},${y + 0.8 * r}` }),
};

// Line-end labels: each wants the y of its line's last point. In that order (top to bottom) they
// are pushed down to at least `gap` apart, then pulled back up inside `bottom`, so none overlap.
// spreadLabels([50, 50, 120], 16, 10, 200) -> [50, 66, 120]
function spreadLabels(wanted, gap, top, bottom) {
  const order = wanted.map((y, i) => i).sort((a, b) => wanted[a] - wanted[b] || a - b);
  const ys = order.map((i) => Math.max(top, wanted[i]));
  for (let k = 1; k < ys.length; k++) ys[k] = Math.max(ys[k], ys[k - 1] + gap);
  for (let k = ys.length - 1; k >= 0; k--) ys[k] = Math.min(ys[k], k === ys.length - 1 ? bottom : ys[k + 1] - gap);
  const placed = new Array(wanted.length);
  order.forEach((i, k) => { placed[i] = ys[k]; });
  return placed;
}

// Integer ticks between lo and hi, at most about `most` of them (steps of 1, 2, 5, 10, ...).
function lengthTicks(lo, hi, most) {
  const steps = [1, 2, 5, 10, 20, 50, 100];
  const step = steps.find((s) => (hi - lo) / s <= most) || 100;
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi; v += step) ticks.push(v);
  return ticks;
}

function pathsChart(container, task, styles, minPairs) {
  const W = 560, L = 46, R = 108, T = 12, plotBottom = 200, stripTop = 214, stripBottom = 246, H = 278;
  const lengths = [...new Set(task.archs.flatMap((a) => a.points.map((p) => p[0])))].sort((a, b) => a - b);
  const counts = {};
  task.archs.forEach((a) => a.points.forEach(([n, , c]) => { counts[n] = c; }));
  const x0 = (lengths.length ? lengths[0] : 1) - 0.6, x1 = (lengths.length ? lengths[lengths.length - 1] : 2) + 0.6;
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => T + (1 - y) * (plotBottom - T);
  const maxCount = Math.max(minPairs, ...Object.values(counts));
  const sc = (c) => stripBottom - (c / (maxCount * 1.1)) * (stripBottom - stripTop);
  const svg = svgRoot(W, H);
  svg.classList.add("paths-svg");
  const trained = task.train_lengths;
  if (trained && lengths.length && lengths[lengths.length - 1] > trained[1]) {
    const left = sx(trained[1] + 0.5), right = sx(lengths[lengths.length - 1] + 0.5);
    svg.append(svgEl("rect", { x: left, y: T, width: right - left, height: plotBottom - T, class: "paths-longer" }));
    svg.append(svgEl("rect", { x: left, y: stripTop, width: right - left, height: stripBottom - stripTop, class: "paths-longer" }));
    svg.append(svgEl("text", { x: (left + right) / 2, y: T + 11, class: "tick paths-longer-label", "text-anchor": "middle" }, t("paths.longer")));
  }
  for (let k = 0; k <= 4; k++) {
    const y = k / 4;
    svg.append(svgEl("line", { x1: L, y1: sy(y), x2: W - R, y2: sy(y), class: "grid" }));
    svg.append(svgEl("text", { x: L - 6, y: sy(y) + 4, class: "tick", "text-anchor": "end" }, (100 * y).toFixed(0) + "%"));
  }
  svg.append(svgEl("line", { x1: L, y1: plotBottom, x2: W - R, y2: plotBottom, class: "axis" }));
  svg.append(svgEl("line", { x1: L, y1: T, x2: L, y2: plotBottom, class: "axis" }));
  // the strip: test pairs per length; the lengths under the rule are pale (and absent above)
  lengths.forEach((n) => {
    const w = Math.max(2, 0.7 * (sx(1) - sx(0)));
    const bar = svgEl("rect", { x: sx(n) - w / 2, y: sc(counts[n]), width: w, height: stripBottom - sc(counts[n]),
      class: counts[n] >= minPairs ? "paths-count" : "paths-count small" });
    bar.append(svgEl("title", {}, t("paths.count", { len: n, n: counts[n] })));
    svg.append(bar);
  });
  svg.append(svgEl("line", { x1: L, y1: sc(minPairs), x2: W - R, y2: sc(minPairs), class: "paths-min" }));
  svg.append(svgEl("line", { x1: L, y1: stripBottom, x2: W - R, y2: stripBottom, class: "axis" }));
  svg.append(svgEl("text", { x: L - 6, y: (stripTop + stripBottom) / 2 + 4, class: "tick", "text-anchor": "end" }, t("paths.pairs_axis")));
  lengthTicks(lengths[0] || 1, lengths[lengths.length - 1] || 2, 9).forEach((v) => {
    svg.append(svgEl("text", { x: sx(v), y: stripBottom + 12, class: "tick", "text-anchor": "middle" }, String(v)));
  });
  svg.append(svgEl("text", { x: (L + W - R) / 2, y: H - 4, class: "tick", "text-anchor": "middle" }, t("paths.length")));
  // the lines, their intervals and markers, then the labels at their ends
  const ends = [];
  task.archs.forEach((a) => {
    const style = styles[a.arch];
    const pts = a.shown.map((p) => [sx(p.x), sy(p.exact_match), p]);
    const group = svgEl("g", { class: "paths-arch", "data-arch": a.arch });
    pts.forEach(([x, , p]) => group.append(svgEl("line", { x1: x, y1: sy(p.low), x2: x, y2: sy(p.high), stroke: style.color, class: "paths-interval" })));
    group.append(svgEl("polyline", { points: pts.map(([x, y]) => `${x},${y}`).join(" "), class: "line paths-line",
      stroke: style.color, "stroke-width": PATHS_LINE_WIDTH, "stroke-dasharray": style.dash.map((d) => d * PATHS_LINE_WIDTH).join(" ") || "none",
      "data-arch": a.arch }));
    pts.forEach(([x, y, p]) => {
      const marker = (PATHS_MARKERS[style.marker] || PATHS_MARKERS.circle)(x, y, 3.4);
      marker.setAttribute("fill", style.color);
      marker.setAttribute("class", "paths-marker");
      marker.append(svgEl("title", {}, t("paths.point", { arch: a.arch, len: p.length, right: p.right, n: p.count,
        em: (100 * p.exact_match).toFixed(1), lo: (100 * p.low).toFixed(0), hi: (100 * p.high).toFixed(0) })));
      group.append(marker);
    });
    svg.append(group);
    if (pts.length) ends.push({ arch: a.arch, color: style.color, x: pts[pts.length - 1][0], y: pts[pts.length - 1][1] });
  });
  const placed = spreadLabels(ends.map((e) => e.y), PATHS_LABEL_GAP, T + 4, plotBottom);
  const labelX = W - R + 8;
  ends.forEach((e, i) => {
    svg.append(svgEl("path", { d: `M${e.x + 4},${e.y} L${labelX - 6},${placed[i] - 4} L${labelX - 2},${placed[i] - 4}`,
      class: "paths-leader", stroke: e.color }));
    svg.append(svgEl("text", { x: labelX, y: placed[i], class: "series-label paths-label", fill: e.color, "data-arch": e.arch }, e.arch));
  });
  container.replaceChildren(svg);
}

// The lines under a task's chart: trained lengths, pairs per length, what the rule left out,
// coinciding lines, architectures not trained yet.
function pathsNotes(task, minPairs) {
  const notes = [];
  if (task.train_lengths) notes.push(t("paths.trained", { lo: task.train_lengths[0], hi: task.train_lengths[1] }));
  if (task.pairs_per_length) {
    const [lo, hi] = task.pairs_per_length;
    notes.push(lo === hi ? t("paths.n_same", { n: lo }) : t("paths.n_range", { lo, hi }));
  }
  if (task.left_out.lengths.length) {
    notes.push(t("paths.left_out", { k: task.left_out.lengths.length, min: minPairs, pairs: task.left_out.pairs }));
  }
  task.coincide.forEach((group) => notes.push(t("paths.coincide", { archs: group.join(" = ") })));
  if (task.missing.length) notes.push(t("paths.missing", { archs: task.missing.join(", ") }));
  return notes;
}

function setupPaths(given) {
  const w = widget("w-paths", () => {
    if (!given) {  // not started with --paths: say how, without a failing request
      $("paths-note").textContent = t("paths.none");
      return null;
    }
    return ["paths", {}];
  }, (data) => {
    $("paths-charts").replaceChildren(...data.tasks.map((task) => {
      const chart = el("div", { class: "chart", id: "paths-" + task.task });
      pathsChart(chart, task, data.styles, data.min_pairs);
      const keys = task.archs.map((a) => {
        const key = el("span", { class: "key arch", "data-arch": a.arch,
          text: t("paths.arch", { arch: a.arch, p: a.parameters.toLocaleString("en"), em: (100 * a.exact_match).toFixed(1), n: a.pairs }) });
        key.style.setProperty("--key-color", data.styles[a.arch].color);
        return key;
      });
      return el("div", { class: "panel paths-panel" }, el("h4", { text: task.task }), chart,
        el("div", { class: "paths-side" }, el("div", { class: "legend" }, ...keys),
          ...pathsNotes(task, data.min_pairs).map((text) => el("p", { class: "note", text }))));
    }));
    const notes = [t(data.fast ? "paths.fast" : "paths.note"), t("paths.interval", { min: data.min_pairs })];
    if (data.status !== "completed") notes.push(t("paths.unfinished"));
    $("paths-note").textContent = notes.join(" ");
  });
  if (!given) {
    const render = w.render;
    w.render = () => { render(); $("paths-note").textContent = t("paths.none"); };  // on a language switch
  }
}

// --- one question, every architecture (POST /api/interpret/seq2seq) -------------------------------
// The seq2seq runs are grouped by the task they were trained on (seq2seq/info); the chosen group's
// models answer the chosen question about the same source, one heatmap each, side by side, on the
// colour scale the API gives (with its floor), titled with the architecture and the range.
const ASK_FONT = 11, ASK_CHAR = ASK_FONT * 0.62;
const askPiece = (text, chars) => { const v = visible(text); return v.length > chars ? v.slice(0, chars - 1) + "…" : v; };

function askHeatmap(result, question, hover) {
  const rows = result.values.length, cols = result.values[0] ? result.values[0].length : 0;
  const diverging = question === "knockout" || question === "patch";
  const bound = result.scale.bound;
  const cell = Math.max(10, Math.min(26, Math.floor(300 / Math.max(1, cols))));
  const cellH = Math.max(10, Math.min(22, Math.floor(260 / Math.max(1, rows))));
  const labelChars = 6, left = labelChars * ASK_CHAR + 12, top = cell >= 4 * ASK_CHAR ? 18 : 44;
  const width = left + cols * cell + 6, height = top + rows * cellH + 6;
  const svg = svgRoot(width, height);
  svg.classList.add("ask-map");
  svg.style.maxWidth = `${width}px`;
  const colStep = Math.max(1, Math.ceil((ASK_FONT + 3) / cell));
  result.columns.forEach((label, c) => {
    if (c % colStep) return;
    const x = left + c * cell + cell / 2;
    svg.append(top === 18 ? svgEl("text", { x, y: top - 5, class: "flow-label col", "text-anchor": "middle" }, askPiece(label, 4))
      : svgEl("text", { x: 0, y: 0, class: "flow-label col", transform: `translate(${x + 4}, ${top - 4}) rotate(-90)` }, askPiece(label, 5)));
  });
  const rowStep = Math.max(1, Math.ceil((ASK_FONT + 2) / cellH));
  result.rows.forEach((label, r) => {
    if (r % rowStep === 0) svg.append(svgEl("text", { x: left - 6, y: top + r * cellH + cellH / 2 + 4, class: "flow-label row", "text-anchor": "end" }, askPiece(label, labelChars)));
    result.values[r].forEach((v, c) => svg.append(svgEl("rect", { x: left + c * cell, y: top + r * cellH, width: cell - 1, height: cellH - 1,
      class: "ask-cell", fill: diverging ? flowDiverging(v / bound) : attnColor(v / bound), "data-r": r, "data-c": c, "data-v": v })));
  });
  svg.addEventListener("mousemove", (event) => {
    const node = event.target;
    if (!node.classList || !node.classList.contains("ask-cell")) return;
    const r = Number(node.dataset.r), c = Number(node.dataset.c);
    hover(t("paths.ask_hover", { arch: result.arch, row: visible(result.rows[r]), col: visible(result.columns[c]), v: fmt(Number(node.dataset.v)) }));
  });
  return svg;
}

function askCard(result, question, hover) {
  const card = el("div", { class: "ask-card", "data-arch": result.arch || "" });
  const name = result.arch + (result.cell ? ` (${result.cell})` : "");
  card.append(el("h4", { text: name }), el("p", { class: "note mono ask-run", text: result.run }));
  if (result.error) {
    card.append(el("p", { class: "note flow-warn", text: t("paths.ask_cannot", { msg: result.error }) }));
    return card;
  }
  card.append(el("p", { class: "note ask-output", text: t("paths.ask_output", { out: result.output.slice(0, -1).join("") || "∅" }) }));
  card.append(el("div", { class: "flow-scroll" }, askHeatmap(result, question, hover)));
  const notes = el("p", { class: "note flow-notes" });
  flowNotes(notes, result);
  card.append(notes);
  return card;
}

async function setupPathsAsk(s2sRuns) {
  $("paths-ask-none").hidden = s2sRuns.length > 0;
  if (!s2sRuns.length) {
    for (const node of $("paths-ask-panel").querySelectorAll(":scope > .controls")) node.style.display = "none";
    return;
  }
  const infos = await Promise.all(s2sRuns.map((r) => (r.error ? null : api("seq2seq/info", { run: r.id }).catch(() => null))));
  const groups = new Map();
  s2sRuns.forEach((r, i) => {
    const task = infos[i] ? infos[i].task || infos[i].pairs || "?" : "?";
    if (!groups.has(task)) groups.set(task, { runs: [], example: infos[i] ? infos[i].example : "" });
    groups.get(task).runs.push(r.id);
  });
  const select = $("paths-task");
  select.replaceChildren(...[...groups.keys()].map((task) => el("option", { value: task, text: `${task} (${groups.get(task).runs.length})` })));
  $("paths-task-label").hidden = groups.size < 2;
  const example = () => groups.get(select.value).example || "";
  const corruptOf = (text) => (text.length > 1 ? text.slice(0, -2) + text[text.length - 1] + text[text.length - 2] : text);
  $("paths-source").value = example();
  $("paths-corrupt").value = corruptOf(example());
  const sync = () => { $("paths-corrupt-label").hidden = $("paths-question").value !== "patch"; };
  sync();
  const hover = (text) => { $("paths-ask-hover").textContent = text; };
  const w = widget("w-paths", () => ["interpret/seq2seq", { question: $("paths-question").value, text: $("paths-source").value,
    runs: groups.get(select.value).runs.slice(0, 6), ...($("paths-question").value === "patch" ? { corrupt: $("paths-corrupt").value } : {}) }],
  (data) => {
    $("paths-ask").replaceChildren(...data.results.map((result) => askCard(result, data.question, hover)));
    $("paths-ask-hover").textContent = t("flow.hover_hint");
  }, "paths-ask-panel");
  $("paths-question").addEventListener("change", sync);
  select.addEventListener("change", () => { $("paths-source").value = example(); $("paths-corrupt").value = corruptOf(example()); w.refresh(); });
  w.refresh();
}
