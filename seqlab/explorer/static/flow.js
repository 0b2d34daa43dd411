// Section "Information flow": the logit lens, direct logit attribution, activation patching,
// attention knockout and head roles of a language-model run: by default the induction experiment's
// 2-layer model when the explorer has one (its heads have roles), else the run chosen in section 12.
// Each panel POSTs the run and the prompts to /api/interpret/<panel> (seqlab.interpret through
// seqlab/explorer/interpret_api.py) and draws the numbers it gets back, on the colour scale the API
// gives (it has a floor, so rounding noise stays pale) with its range and notes; nothing is computed here.
//
// Labels never overlap: a text is cut to the width of its cell, and where cells are narrower than
// a label, only every n-th column (or row) is labelled, as the translate panel thins its labels;
// the hover line names every cell.
"use strict";

// A worked example in which a copy is predictable: the story grammar repeats its hero's name, so
// after "But then" the next token is the name read earlier. The corrupted prompt swaps the name
// for another of the same length in tokens.
const FLOW_CLEAN = "There was a little girl named Emma. Emma had a shiny stone. One cold morning, Emma wanted to play with Joe. But then";
const FLOW_CORRUPT = "There was a little girl named Lily. Lily had a shiny stone. One cold morning, Lily wanted to play with Joe. But then";
const FLOW_ROLES = ["previous_token", "duplicate_token", "induction", "first_token"];
const FLOW_FONT = 11, FLOW_CHAR = FLOW_FONT * 0.62;  // the monospace advance, generously

const flowPiece = (text, chars) => { const v = visible(text); return v.length > chars ? v.slice(0, chars - 1) + "…" : v; };
const fitChars = (width) => Math.max(1, Math.floor((width - 4) / FLOW_CHAR));
// Every n-th of labels `size` px apart, so that labels `need` px long never touch.
const thinStep = (size, need) => Math.max(1, Math.ceil(need / size));

// The range and the notes of a result (a saturated prediction, an effect below float32 resolution).
function flowNotes(container, data) {
  const lines = [];
  if (data.scale) lines.push(el("span", { class: "flow-range", text: t("flow.range", { lo: fmt(data.scale.min), hi: fmt(data.scale.max), bound: fmt(data.scale.bound) }) }));
  (data.notes || []).forEach((note) => lines.push(el("span", { class: "flow-warn", "data-code": note.code,
    text: STRINGS["flow.note." + note.code] ? t("flow.note." + note.code, { p: fmt(note.params.p), largest: fmt(note.params.largest) }) : `${note.message} ${note.suggestion}` })));
  container.replaceChildren(...lines);
}

// Diverging colour of x in [-1, 1]: blue for positive, orange for negative (as charts.js heatmap).
function flowDiverging(x) {
  const a = Math.min(1, Math.abs(Number.isFinite(x) ? x : 0));
  return x >= 0 ? `rgba(37, 99, 235, ${0.06 + 0.84 * a})` : `rgba(234, 88, 12, ${0.06 + 0.84 * a})`;
}

function flowLayerLabel(row) { return row === 0 ? t("flow.embed") : t("model.layer_n", { l: row - 1 }); }

// Token labels along the top of a grid: rotated when columns are narrow, one in `step` columns.
function columnLabels(svg, tokens, left, top, colW, mark) {
  const horizontal = colW >= 7 * FLOW_CHAR;
  const step = horizontal ? 1 : thinStep(colW, FLOW_FONT + 3);
  tokens.forEach((tok, c) => {
    if (c % step) return;
    const cls = "flow-label col" + (mark && mark.includes(c) ? " changed" : "");
    if (horizontal) {
      svg.append(svgEl("text", { x: left + c * colW + colW / 2, y: top - 6, class: cls, "text-anchor": "middle" },
        flowPiece(tok.text, fitChars(colW))));
    } else {
      svg.append(svgEl("text", { x: 0, y: 0, class: cls, transform: `translate(${left + c * colW + colW / 2 + 4}, ${top - 5}) rotate(-90)` },
        flowPiece(tok.text, 8)));
    }
  });
}

// --- the logit lens: rows = embedding and each layer (the model's output on top), columns = tokens;
// each cell the top token and its probability, shaded by the probability of the actual next token.
// The grid fits the panel's width: columns narrow with the prompt's length (down to 3 px), and
// below 40 px a cell shows its shade only (the hover line names its top tokens).
function drawLens(container, data, hover) {
  const rows = data.top_ids.length, cols = data.tokens.length;
  const cellH = 32, left = 64;
  const room = Math.max(320, (container.clientWidth || 720) - left - 8);
  const colW = Math.max(3, Math.min(54, Math.floor(room / cols)));
  const written = colW >= 40;
  const top = colW >= 7 * FLOW_CHAR ? 22 : 64;
  const width = left + cols * colW + 4, height = top + rows * cellH + 4;
  const svg = svgRoot(width, height);
  svg.classList.add("flow-lens");
  svg.style.width = `${width}px`;
  svg.style.maxWidth = "none";
  columnLabels(svg, data.tokens, left, top, colW);
  for (let r = 0; r < rows; r++) {
    const row = rows - 1 - r;  // the model's output on top, the embedding at the bottom
    const y = top + r * cellH;
    svg.append(svgEl("text", { x: left - 6, y: y + cellH / 2 + 4, class: "flow-label row", "text-anchor": "end" }, flowLayerLabel(row)));
    for (let c = 0; c < cols; c++) {
      const p = data.target_prob[row][c];
      const shade = p === null ? 0 : p;
      const x = left + c * colW;
      svg.append(svgEl("rect", { x, y, width: colW - 1, height: cellH - 1, class: "lens-cell" + (p === null ? " none" : ""),
        fill: p === null ? "#f1f3f6" : attnColor(shade), "data-row": row, "data-pos": c, "data-p": p === null ? "" : p,
        "data-top": data.top_ids[row][c][0] }));
      const dark = p !== null && shade > 0.55 ? " dark" : "";
      if (!written) continue;
      svg.append(svgEl("text", { x: x + colW / 2, y: y + 13, class: "lens-top" + dark, "text-anchor": "middle" },
        flowPiece(data.top_text[row][c][0], fitChars(colW))));
      svg.append(svgEl("text", { x: x + colW / 2, y: y + 27, class: "lens-prob" + dark, "text-anchor": "middle" },
        data.top_probs[row][c][0].toFixed(2)));
    }
  }
  svg.addEventListener("mousemove", (event) => {
    const cell = event.target.closest ? event.target.closest("rect.lens-cell") : null;
    if (!cell) return;
    const row = Number(cell.dataset.row), c = Number(cell.dataset.pos);
    const top = data.top_text[row][c].map((s, k) => `${visible(s)} ${fmt(data.top_probs[row][c][k])}`).join(", ");
    const next = c + 1 < cols ? t("flow.lens_next", { tok: visible(data.tokens[c + 1].text), p: fmt(data.target_prob[row][c]),
      rank: data.target_rank[row][c] }) : t("flow.lens_last");
    hover(t("flow.lens_hover", { layer: flowLayerLabel(row), i: c, tok: visible(data.tokens[c].text), top }) + " " + next);
  });
  container.replaceChildren(svg);
}

// --- direct logit attribution: one bar per head and MLP, and the embedding; positive to the right.
function drawAttribution(container, data) {
  const parts = [[t("flow.embed"), data.embed, "embed"]];
  data.heads.forEach((heads, l) => {
    heads.forEach((v, h) => parts.push([t("flow.head_short", { l, h }), v, "head"]));
    parts.push([t("flow.mlp_short", { l }), data.mlps[l], "mlp"]);
  });
  const rowH = 16, left = 86, barW = 360, valueX = left + barW + 10, top = 6;
  const width = valueX + 90, height = top + parts.length * rowH + 6;
  const svg = svgRoot(width, height);
  svg.classList.add("flow-attr");
  svg.style.maxWidth = `${width}px`;
  const most = data.scale ? data.scale.bound : Math.max(1e-9, ...parts.map(([, v]) => Math.abs(v)));
  const zero = left + barW / 2;
  svg.append(svgEl("line", { x1: zero, y1: top, x2: zero, y2: height - 4, class: "axis" }));
  parts.forEach(([label, v, kind], i) => {
    const y = top + i * rowH;
    const w = (Math.abs(v) / most) * (barW / 2);
    svg.append(svgEl("text", { x: left - 6, y: y + rowH - 4, class: "flow-label row", "text-anchor": "end" }, label));
    svg.append(svgEl("rect", { x: v >= 0 ? zero : zero - w, y: y + 2, width: Math.max(0.5, w), height: rowH - 4,
      class: `attr-bar ${kind} ${v >= 0 ? "pos" : "neg"}`, "data-v": v }));
    svg.append(svgEl("text", { x: valueX, y: y + rowH - 4, class: "flow-label value" }, v.toFixed(3)));
  });
  container.replaceChildren(svg);
}

// --- activation patching: rows = layers (or layer x head), columns = positions; recovery 0..1.
function drawPatch(container, data, hover) {
  const perHead = data.where === "head_out";
  const rows = [];
  data.recovery.forEach((r, l) => {
    if (perHead) r.forEach((values, h) => rows.push([t("flow.head_short", { l, h }), values]));
    else rows.push([t("model.layer_n", { l }), r]);
  });
  const cols = data.clean_tokens.length;
  const bound = data.scale ? data.scale.bound : 1;
  const colW = Math.max(8, Math.min(40, Math.floor(720 / cols)));
  const cellH = perHead ? 14 : 22;
  const rowStep = thinStep(cellH, FLOW_FONT + 3);
  const left = 72, top = colW >= 7 * FLOW_CHAR ? 22 : 64;
  const width = left + cols * colW + 4, height = top + rows.length * cellH + 4;
  const svg = svgRoot(width, height);
  svg.classList.add("flow-patch");
  svg.style.maxWidth = `${width}px`;
  columnLabels(svg, data.clean_tokens, left, top, colW, data.changed);
  rows.forEach(([label, values], r) => {
    const y = top + r * cellH;
    if (r % rowStep === 0) {
      svg.append(svgEl("text", { x: left - 6, y: y + cellH / 2 + 4, class: "flow-label row", "text-anchor": "end" }, label));
    }
    values.forEach((v, c) => svg.append(svgEl("rect", { x: left + c * colW, y, width: colW - 1, height: cellH - 1,
      class: "patch-cell", fill: flowDiverging(v / bound), "data-r": r, "data-pos": c, "data-v": v })));
  });
  svg.addEventListener("mousemove", (event) => {
    const cell = event.target.classList && event.target.classList.contains("patch-cell") ? event.target : null;
    if (!cell) return;
    const r = Number(cell.dataset.r), c = Number(cell.dataset.pos);
    hover(t("flow.patch_hover", { row: rows[r][0], i: c, a: visible(data.clean_tokens[c].text),
      b: visible(data.corrupt_tokens[c].text), v: fmt(Number(cell.dataset.v)) }));
  });
  container.replaceChildren(svg, flowBar(bound, t("flow.patch_bar")));
}

// A colour bar for the diverging scale: its two ends labelled with the scale's bounds, what the
// numbers mean under its middle.
const shortNumber = (x) => (x > 0 ? "+" : "") + Number(Number(x).toPrecision(3));
function flowBar(bound, meaning) {
  const width = 420, svg = svgRoot(width, 44);
  svg.classList.add("attn-bar");
  svg.style.maxWidth = `${width}px`;
  const steps = 40;
  for (let s = 0; s < steps; s++) {
    svg.append(svgEl("rect", { x: 4 + (s * (width - 8)) / steps, y: 2, width: (width - 8) / steps + 0.5, height: 10,
      fill: flowDiverging(-1 + (2 * s) / (steps - 1)) }));
  }
  svg.append(svgEl("text", { x: 4, y: 26, class: "attn-label" }, shortNumber(-bound)));
  svg.append(svgEl("text", { x: width - 4, y: 26, class: "attn-label", "text-anchor": "end" }, shortNumber(bound)));
  svg.append(svgEl("text", { x: width / 2, y: 40, class: "attn-label", "text-anchor": "middle" }, meaning));
  return svg;
}

// --- knockout flow graph: a column of token nodes per layer (its input residual) and the output;
// an edge from source s in column l to the predicted position in column l + 1, as wide as the drop
// in log p(target) when layer l may not read s there.
function drawKnockout(container, data, hover) {
  const layers = data.drops.length, pos = data.position, n = pos + 1;
  const rowH = Math.max(6, Math.min(18, Math.floor(520 / n)));
  const rowStep = thinStep(rowH, FLOW_FONT + 3);
  const left = 92, colGap = 150, top = 24;
  const width = left + layers * colGap + 40, height = top + n * rowH + 10;
  const svg = svgRoot(width, height);
  svg.classList.add("flow-knockout");
  svg.style.maxWidth = `${width}px`;
  const x = (col) => left + col * colGap, y = (s) => top + s * rowH + rowH / 2;
  for (let l = 0; l < layers; l++) {  // layer l's attention is the gap between node columns l and l + 1
    svg.append(svgEl("text", { x: (x(l) + x(l + 1)) / 2, y: 12, class: "flow-label colhead", "text-anchor": "middle" },
      t("model.layer_n", { l })));
  }
  for (let s = 0; s < n; s++) {
    if ((s % rowStep === 0 && Math.abs(s - pos) >= rowStep) || s === pos) {  // the predicted row always
      svg.append(svgEl("text", { x: left - 10, y: y(s) + 4, class: "flow-label row" + (s === pos ? " target" : ""), "text-anchor": "end" },
        flowPiece(data.tokens[s].text, 10)));
    }
  }
  const most = data.scale ? data.scale.bound : Math.max(1e-9, ...data.drops.flat().map(Math.abs));
  data.drops.forEach((row, l) => row.slice(0, n).forEach((d, s) => {
    const share = Math.abs(d) / most;
    if (share < 0.03) return;  // too small to draw; the hover on the nodes names every value
    svg.append(svgEl("line", { x1: x(l), y1: y(s), x2: x(l + 1), y2: y(pos), class: "ko-edge " + (d >= 0 ? "pos" : "neg"),
      "stroke-width": (0.75 + 9 * share).toFixed(2), "data-layer": l, "data-src": s, "data-v": d }));
  }));
  for (let col = 0; col <= layers; col++) {
    for (let s = 0; s < n; s++) {
      svg.append(svgEl("circle", { cx: x(col), cy: y(s), r: Math.min(4, rowH / 3), class: "ko-node" + (s === pos ? " target" : ""),
        "data-col": col, "data-src": s }));
    }
  }
  svg.addEventListener("mousemove", (event) => {
    const target = event.target;
    if (!target.dataset || target.dataset.src === undefined) return;
    const s = Number(target.dataset.src);
    const l = target.dataset.layer !== undefined ? Number(target.dataset.layer) : Math.min(layers - 1, Number(target.dataset.col));
    hover(t("flow.ko_hover", { l, i: s, tok: visible(data.tokens[s].text), p: pos, v: fmt(data.drops[l][s]) }));
  });
  container.replaceChildren(svg);
}

// --- head roles: layer x head squares coloured by role; hover shows the four scores.
function drawHeads(container, legend, data, hover) {
  const layers = data.roles.length, heads = data.roles[0].length;
  const cell = 30, left = 64, top = 20;
  const width = left + heads * cell + 4, height = top + layers * cell + 4;
  const svg = svgRoot(width, height);
  svg.classList.add("flow-heads");
  svg.style.maxWidth = `${width}px`;
  const colStep = thinStep(cell, 3 * FLOW_CHAR + 4);
  for (let h = 0; h < heads; h += colStep) {
    svg.append(svgEl("text", { x: left + h * cell + cell / 2, y: top - 6, class: "flow-label col", "text-anchor": "middle" }, String(h)));
  }
  data.roles.forEach((row, l) => {
    svg.append(svgEl("text", { x: left - 6, y: top + l * cell + cell / 2 + 4, class: "flow-label row", "text-anchor": "end" },
      t("model.layer_n", { l })));
    row.forEach((role, h) => {
      const node = svgEl("rect", { x: left + h * cell, y: top + l * cell, width: cell - 2, height: cell - 2,
        class: "head-role " + (role || "none"), "data-layer": l, "data-head": h, "data-role": role });
      svg.append(node);
    });
  });
  svg.addEventListener("mousemove", (event) => {
    const node = event.target;
    if (!node.classList || !node.classList.contains("head-role")) return;
    const l = Number(node.dataset.layer), h = Number(node.dataset.head);
    const scores = FLOW_ROLES.map((role) => `${t("flow.role." + role)} ${fmt(data.scores[role][l][h])}`).join(", ");
    hover(t("flow.heads_hover", { l, h, role: node.dataset.role ? t("flow.role." + node.dataset.role) : t("flow.role.none"), scores }));
  });
  container.replaceChildren(svg);
  legend.replaceChildren(...[...FLOW_ROLES, "none"].map((role) => el("span", { class: "key role " + role,
    text: role === "none" ? t("flow.role.none") : t("flow.role_key", { role: t("flow.role." + role), x: data.thresholds[role] }) })));
}

// The run the section reads: its own choice, by default the induction experiment's 2-layer model
// (read in token ids; its heads have roles) when there is one, else the run chosen in section 12.
function flowRuns(lmRuns) {
  const select = $("flow-run");
  const ids = lmRuns.filter((r) => r.tokens === "ids");
  select.replaceChildren(...lmRuns.map((r) => el("option", { value: r.id,
    text: (r.tokens === "ids" ? t("flow.run_induction") + " — " : "") + r.id + (r.error ? " ⚠" : "") })));
  if (lmRuns.length) select.value = (ids[0] || lmRuns[0]).id;
  return () => lmRuns.find((r) => r.id === select.value);
}

function setupFlow(lmRuns, noRun) {
  const chosen = flowRuns(lmRuns);
  const examples = () => {  // the worked example of the chosen run, and what the section says about its heads
    const run = chosen();
    const ids = run && run.tokens === "ids" && run.example;
    $("flow-clean").value = ids ? run.example.clean : FLOW_CLEAN;
    $("flow-corrupt").value = ids ? run.example.corrupt : FLOW_CORRUPT;
    $("flow-roles-note").textContent = t(ids ? "flow.about_induction" : "flow.about_text");
  };
  examples();
  // no language-model run: a hint (as the translate section gives), no panels and no requests
  $("flow-none").hidden = lmRuns.length > 0;
  $("flow-roles-note").hidden = !lmRuns.length;
  if (!lmRuns.length) for (const node of $("w-flow").querySelectorAll(":scope > .controls, :scope > .panel")) node.style.display = "none";
  const withRun = (extra) => {
    const run = chosen();
    const problem = run ? run.error : noRun;
    if (problem) throw apiError(problem, {});
    return { ...(run ? { run: run.id } : {}), ...extra };
  };
  const tokens = () => ({ target: $("flow-target").value, baseline: $("flow-baseline").value });
  const say = (id) => (text) => { $(id).textContent = text; };
  const parts = [];
  const lens = widget("w-flow", () => lmRuns.length && ["interpret/lens", withRun({ text: $("flow-clean").value })], (data) => {
    drawLens($("flow-lens"), data, say("flow-lens-hover"));
    $("flow-lens-hover").textContent = t("flow.hover_hint");
  }, "flow-lens-panel");
  parts.push(lens);
  parts.push(widget("w-flow", () => lmRuns.length && ["interpret/attribute", withRun({ text: $("flow-clean").value, ...tokens() })], (data) => {
    drawAttribution($("flow-attr"), data);
    const sum = data.embed + data.heads.flat().reduce((a, b) => a + b, 0) + data.mlps.reduce((a, b) => a + b, 0);
    $("flow-attr-note").textContent = t(data.baseline ? "flow.attr_note_diff" : "flow.attr_note", {
      tok: visible(data.target.text), base: data.baseline ? visible(data.baseline.text) : "", i: data.position,
      total: fmt(data.total), sum: fmt(sum) });
    flowNotes($("flow-attr-notes"), data);
  }, "flow-attr-panel"));
  parts.push(widget("w-flow", () => lmRuns.length && ["interpret/patch", withRun({ clean: $("flow-clean").value, corrupt: $("flow-corrupt").value,
    where: $("flow-where").value, ...tokens() })], (data) => {
    drawPatch($("flow-patch"), data, say("flow-patch-hover"));
    $("flow-patch-hover").textContent = t("flow.hover_hint");
    $("flow-patch-note").textContent = t("flow.patch_note", { tok: visible(data.target.text), base: visible(data.baseline.text),
      n: data.clean_tokens.length });
    flowNotes($("flow-patch-notes"), data);
  }, "flow-patch-panel"));
  parts.push(widget("w-flow", () => lmRuns.length && ["interpret/knockout", withRun({ text: $("flow-clean").value, target: $("flow-target").value })], (data) => {
    drawKnockout($("flow-knockout"), data, say("flow-ko-hover"));
    $("flow-ko-hover").textContent = t("flow.hover_hint");
    $("flow-ko-note").textContent = t("flow.ko_note", { tok: visible(data.target.text), i: data.position,
      at: visible(data.tokens[data.position].text), p: fmt(data.p) });
    flowNotes($("flow-ko-notes"), data);
  }, "flow-knockout-panel"));
  parts.push(widget("w-flow", () => lmRuns.length && ["interpret/heads", withRun({})], (data) => {
    drawHeads($("flow-heads"), $("flow-heads-legend"), data, say("flow-heads-hover"));
    $("flow-heads-hover").textContent = t("flow.hover_hint");
  }, "flow-heads-panel"));
  const refresh = () => parts.forEach((w) => w.refresh());
  let timer = null;
  for (const id of ["flow-clean", "flow-corrupt", "flow-target", "flow-baseline"]) {
    $(id).addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(refresh, 200); });
  }
  $("flow-run").addEventListener("change", () => { examples(); refresh(); });
  const render = lens.render;  // on a language switch the note follows the language
  lens.render = (...args) => { $("flow-roles-note").textContent = t(chosen() && chosen().tokens === "ids" ? "flow.about_induction" : "flow.about_text"); return render(...args); };
}
