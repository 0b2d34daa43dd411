// "Yours" beside the reference (seqlab explore --workspace DIR): when a widget has drawn its inputs,
// each exercise of that widget whose file the workspace holds runs on the same inputs through
// POST /api/learn/yours (the student's code runs in a child process on the server). The panel
// shows the reference's values and the student's side by side; every element the server names as
// different is outlined, with the expected value on hover. Nothing is compared here. When yours
// differs, the server also runs the exercise's full check (once per edit of the file) and the panel
// shows its diagnosis: the title, where, and a link to the lesson at that mistake.
"use strict";

const LEARN = {
  listing: null,        // the promise of POST /api/learn/workspace (asked once, at the first render)
  panels: new Map(),    // "scopeId:exercise" -> {node, name, result, busy, next}
};

// Names for the parts of a tuple output (the exercise's return value), by exercise.
const LEARN_PARTS = {
  clip_global_norm: ["clipped", "norm"],
  lstm_cell_forward: ["h", "c"],
};

function learnListing() {
  if (!LEARN.listing) LEARN.listing = api("learn/workspace", {}).catch(() => null);
  return LEARN.listing;
}

// A leaf is a number, a bool, a string, or a list (or list of lists) of those.
const learnScalar = (v) => v === null || typeof v !== "object";
const learnRow = (v) => Array.isArray(v) && v.every(learnScalar);
const learnMatrix = (v) => Array.isArray(v) && v.length > 0 && v.every(learnRow);

function learnText(v) {
  if (typeof v === "number") return fmt(v);
  if (typeof v === "boolean") return v ? "✓" : "·";
  return v === null ? "—" : String(v);
}

function learnAt(value, path) {
  let v = value;
  for (const key of path) {
    if (v === null || typeof v !== "object" || !(key in v)) return undefined;
    v = v[key];
  }
  return v;
}

// The leaves of the reference, in order: [label, path].
function learnLeaves(value, path, label, out, parts) {
  if (path.length === 0 && parts && Array.isArray(value) && value.length === parts.length) {
    value.forEach((v, i) => learnLeaves(v, [i], parts[i], out, null));
  } else if (learnScalar(value) || learnRow(value) || learnMatrix(value)) out.push([label || "output", path]);
  else if (Array.isArray(value)) {
    value.forEach((v, i) => learnLeaves(v, [...path, i], `${label || "output"}[${i}]`, out, null));
  } else for (const [k, v] of Object.entries(value)) learnLeaves(v, [...path, k], label ? `${label}.${k}` : k, out, null);
  return out;
}

// One leaf as a small table; cells whose path is in marks are outlined (yours) or tinted (reference).
function learnLeafTable(value, path, marks, side, reference) {
  const cell = (v, at) => {
    const td = el("td", { class: "learn-cell mono", text: learnText(v), "data-path": at.join("/") });
    if (marks.has(at.join("/"))) {
      td.classList.add(side === "yours" ? "learn-diff" : "learn-diff-ref");
      if (side === "yours") td.title = t("learn.expected", { v: learnText(learnAt(reference, at)) });
    }
    return td;
  };
  const table = el("table", { class: "learn-values" });
  if (learnMatrix(value)) value.forEach((row, i) => table.append(el("tr", {}, ...row.map((v, j) => cell(v, [...path, i, j])))));
  else if (learnRow(value)) table.append(el("tr", {}, ...value.map((v, j) => cell(v, [...path, j]))));
  else table.append(el("tr", {}, cell(value, path)));
  return table;
}

function learnCallRows(call, label, parts) {
  const marks = new Set((call.marks || []).map((p) => p.join("/")));
  const rows = [];
  const leaves = learnLeaves(call.reference, [], "", [], parts);
  const shapeProblem = call.difference && marks.size === 0;  // another form than the reference's
  leaves.forEach(([name, path], k) => {
    const ref = learnAt(call.reference, path);
    const mine = learnAt(call.yours, path);
    let yoursCell;
    if (call.error) yoursCell = k === 0 ? el("td", { class: "learn-error", rowspan: leaves.length, text: call.error }) : null;
    else if (shapeProblem) {
      yoursCell = k === 0 ? el("td", { class: "learn-cell learn-diff mono", rowspan: leaves.length,
        text: JSON.stringify(call.yours).slice(0, 300) }) : null;
    } else yoursCell = el("td", {}, learnLeafTable(mine === undefined ? null : mine, path, marks, "yours", call.reference));
    const title = label ? (name === "output" ? label : `${label}: ${name}`) : name;
    rows.push(el("tr", {}, el("th", { class: "mono", text: title }),
      el("td", {}, learnLeafTable(ref, path, marks, "reference", call.reference)), yoursCell));
  });
  return rows;
}

function learnStatus(result) {
  if (result.not_implemented) return ["stub", t("learn.stub", { name: result.exercise, file: result.file })];
  if (result.failure) return ["failed", t("learn.failed", { msg: result.failure })];
  const raised = result.calls.findIndex((c) => c.error);
  if (raised >= 0) return ["failed", t("learn.raised", { msg: result.calls[raised].error })];
  const k = result.calls.findIndex((c) => c.difference);
  if (k >= 0) {
    const label = result.labels[k] ? result.labels[k] + ": " : "";
    return ["differs", t("learn.differs", { msg: label + result.calls[k].difference.message })];
  }
  return ["same", t("learn.same")];
}

// The address of a step's lesson (at an anchor in it) on the course page: from the widget page
// (?view=widgets) it opens the course; on the course page it is the hash route course.js follows.
function learnLessonHref(step, anchor) {
  const params = new URLSearchParams(location.search);
  params.delete("view");
  const query = params.toString();
  return location.pathname + (query ? "?" + query : "") + "#step/" + step + (anchor ? "/" + anchor : "");
}

// The full check's verdict: its diagnosis (title, where, the link to the lesson's mistake), or that it passes.
function learnCheck(check, name) {
  if (check.passed) return el("p", { class: "learn-check note", text: t("learn.check_passes", { name }) });
  const d = check.diagnosis;
  if (!d) return el("p", { class: "learn-check note", text: t("learn.check_fails", { name, checks: check.failed.join(", ") }) });
  const lang = I18N.lang === "zh" ? 1 : 0;
  const box = el("div", { class: "learn-check learn-diagnosis", "data-mistake": d.mistake || "" },
    el("p", { class: "learn-diagnosis-title" }, el("strong", { text: t("learn.diagnosis", { title: d.title[lang] }) })));
  if (d.where && !d.explanation[lang].includes(d.where)) {
    box.append(el("p", { class: "learn-where", text: t("course.where", { where: d.where }) }));
  }
  const read = d.read;
  const link = el("a", { class: "learn-read-link", href: learnLessonHref(read.step, read.anchor),
    text: t(read.anchor ? "course.read_mistake" : "learn.read_lesson") });
  link.addEventListener("click", () => {
    // the address already shown (the lesson open at that mistake, scrolled away): no hashchange
    // would come, so the course is told to go there again
    if (link.href === location.href) window.dispatchEvent(new HashChangeEvent("hashchange"));
  });
  box.append(el("p", { class: "learn-read" }, link));
  return box;
}

function learnRender(panel) {
  const { node, result, name } = panel;
  const heading = el("h3", { text: t("learn.title", { name, file: result ? result.file : name + ".py" }) });
  if (!result) { node.replaceChildren(heading, el("p", { class: "note", text: t("learn.running") })); return; }
  const [state, text] = learnStatus(result);
  node.dataset.state = state;
  const status = el("p", { class: "learn-status " + state, text });
  if (!result.calls.length || result.not_implemented) { node.replaceChildren(heading, status); return; }
  const table = el("table", { class: "learn-side" },
    el("tr", {}, el("th", {}), el("th", { text: t("learn.reference") }), el("th", { text: t("learn.yours") })));
  result.calls.forEach((call, i) => table.append(...learnCallRows(call, result.labels[i], LEARN_PARTS[name])));
  const shown = [heading, status];
  if (result.check) shown.push(learnCheck(result.check, name));
  node.replaceChildren(...shown, el("div", { class: "table-wrap" }, table));
}

async function learnUpdate(scope, endpoint, name, body) {
  const key = scope.id + ":" + name;
  let panel = LEARN.panels.get(key);
  if (!panel) {
    const node = el("div", { class: "learn-yours", id: `learn-${scope.id}-${name}`, "data-exercise": name });
    const errorBox = scope.querySelector(":scope > .error");
    if (errorBox) scope.insertBefore(node, errorBox); else scope.append(node);
    panel = { node, name, result: null, busy: false, next: null };
    LEARN.panels.set(key, panel);
    learnRender(panel);
  }
  // One request per panel at a time (the student's code may run up to the time limit): inputs that
  // change meanwhile wait, and only the newest of them is sent next.
  panel.next = { endpoint, body };
  if (panel.busy) return;
  panel.busy = true;
  while (panel.next) {
    const wanted = panel.next;
    panel.next = null;
    let result;
    try {
      result = await api("learn/yours", { widget: wanted.endpoint, exercise: name, inputs: wanted.body });
    } catch (err) {
      result = { exercise: name, file: panel.result ? panel.result.file : name + ".py", failure: errorText(err),
        calls: [], labels: [] };
    }
    if (!panel.next) { panel.result = result; learnRender(panel); }
  }
  panel.busy = false;
}

document.addEventListener("seqlab:rendered", async (event) => {
  const { endpoint, body, scope } = event.detail;
  const listing = await learnListing();
  if (!listing || !listing.workspace) return;
  for (const name of listing.widgets[endpoint] || []) {
    if (listing.exercises[name] && listing.exercises[name].present) learnUpdate(scope, endpoint, name, body);
  }
});

// A language switch re-renders every widget: the panels too.
widgets.push({ render: () => LEARN.panels.forEach(learnRender), refresh: async () => {} });
