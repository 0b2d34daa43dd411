// Drawing helpers: SVG line charts, bar charts, heatmaps and small DOM builders.
// They only draw numbers they are given; nothing here computes lesson math.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

// Six decimals everywhere; "-0.000000" is shown as "0.000000".
function fmt(x) {
  if (x === null || x === undefined) return "—";
  const text = Number(x).toFixed(6);
  return /^-0\.0+$/.test(text) ? text.slice(1) : text;
}
const fmtVec = (v) => "[" + v.map(fmt).join(", ") + "]";

// the one element builder: lesson.js's (seqlab/learn/static, loaded first), shared with the static site
const el = lessonEl;

function svgEl(tag, attrs, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svgRoot(width, height) {
  return svgEl("svg", { viewBox: `0 0 ${width} ${height}`, width: "100%", role: "img", class: "svg" });
}

// Extent with padding; a flat series still gets a visible range.
function extent(values) {
  let lo = Math.min(...values), hi = Math.max(...values);
  if (!isFinite(lo) || !isFinite(hi)) { lo = 0; hi = 1; }
  if (hi - lo < 1e-12) { lo -= 0.5; hi += 0.5; }
  return [lo, hi];
}

// series: [{values: [...], xs, label, cls}]; x is xs[i] when given (e.g. training steps), else the
// index. opts.yTransform maps a value to plot space.
function lineChart(container, series, opts = {}) {
  const W = opts.width || 420, H = opts.height || 200, L = 56, R = 12, T = 12, B = 28;
  const tf = opts.yTransform || ((y) => y);
  const all = series.flatMap((s) => s.values.map(tf)).filter(isFinite);
  const [ylo, yhi] = extent(all.length ? all : [0, 1]);
  const xOf = (s, i) => (s.xs ? s.xs[i] : i);
  const xsAll = series.flatMap((s) => s.values.map((_, i) => xOf(s, i)));
  const x0 = series.some((s) => s.xs) ? Math.min(...xsAll) : 0;
  const x1 = Math.max(...xsAll, x0 + 1);
  const n = x1 + 1;  // the right-hand tick label
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => T + (1 - (y - ylo) / (yhi - ylo)) * (H - T - B);
  const svg = svgRoot(W, H);
  svg.append(svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis" }));
  svg.append(svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }));
  for (let k = 0; k <= 4; k++) {
    const y = ylo + (k / 4) * (yhi - ylo);
    svg.append(svgEl("line", { x1: L, y1: sy(y), x2: W - R, y2: sy(y), class: "grid" }));
    svg.append(svgEl("text", { x: L - 6, y: sy(y) + 4, class: "tick", "text-anchor": "end" },
                     opts.yTickFormat ? opts.yTickFormat(y) : y.toFixed(2)));
  }
  svg.append(svgEl("text", { x: L, y: H - 8, class: "tick" }, String(x0)));
  svg.append(svgEl("text", { x: W - R, y: H - 8, class: "tick", "text-anchor": "end" }, String(n - 1)));
  if (opts.xLabel) svg.append(svgEl("text", { x: (L + W) / 2, y: H - 8, class: "tick", "text-anchor": "middle" }, opts.xLabel));
  series.forEach((s, idx) => {
    const points = s.values.map((v, i) => [sx(xOf(s, i)), sy(tf(v))]).filter((p) => isFinite(p[1]));
    svg.append(svgEl("polyline", { points: points.map((p) => p.join(",")).join(" "), class: "line " + (s.cls || "s" + idx) }));
    if (s.label && points.length) {
      const [px, py] = points[points.length - 1];
      const below = py < T + 14;  // no room above the end point: write the label under it
      svg.append(svgEl("text", { x: px - 4, y: below ? py + 14 : py - 6, class: "series-label " + (s.cls || "s" + idx), "text-anchor": "end" }, s.label));
    }
  });
  container.replaceChildren(svg);
}

// Vertical bars over labels; values in [0, 1] (probabilities). highlight: index drawn darker.
function barChart(container, values, labels, opts = {}) {
  const W = 230, H = 150, T = 18, B = 22, gap = 8;
  const bw = (W - gap * (values.length + 1)) / values.length;
  const svg = svgRoot(W, H);
  svg.append(svgEl("line", { x1: 0, y1: H - B, x2: W, y2: H - B, class: "axis" }));
  values.forEach((v, i) => {
    const x = gap + i * (bw + gap);
    const h = Math.max(0, Math.min(1, v)) * (H - T - B);
    svg.append(svgEl("rect", { x, y: H - B - h, width: bw, height: h, class: i === opts.highlight ? "bar hi" : "bar" }));
    svg.append(svgEl("text", { x: x + bw / 2, y: H - B - h - 4, class: "bar-value", "text-anchor": "middle" }, fmt(v)));
    svg.append(svgEl("text", { x: x + bw / 2, y: H - 6, class: "bar-label", "text-anchor": "middle" }, labels[i]));
  });
  container.replaceChildren(svg);
}

// An HTML table heatmap. cells[r][c] is a number or null; text(r, c) gives the cell text;
// shade(r, c) gives a value in [-1, 1] for the colour (negative = orange, positive = blue).
function heatmap(container, rows, cols, rowLabels, colLabels, text, shade, opts = {}) {
  const table = el("table", { class: "heat" + (opts.compact ? " compact" : "") });
  const head = el("tr", {}, el("th", { class: "corner", text: opts.corner || "" }));
  colLabels.forEach((label) => head.append(el("th", { text: label })));
  table.append(head);
  for (let r = 0; r < rows; r++) {
    const tr = el("tr", {}, el("th", { text: rowLabels[r] }));
    for (let c = 0; c < cols; c++) {
      const s = shade(r, c);
      const td = el("td", { text: text(r, c) });
      if (s === null) td.className = "off";
      else {
        const a = Math.min(1, Math.abs(s));
        td.style.backgroundColor = s >= 0 ? `rgba(37, 99, 235, ${0.08 + 0.72 * a})` : `rgba(234, 88, 12, ${0.08 + 0.72 * a})`;
        if (a > 0.55) td.classList.add("dark");
      }
      tr.append(td);
    }
    table.append(tr);
  }
  container.replaceChildren(table);
}
