// The lesson renderer: a step's lesson as seqlab.learn.views gives it (sections of plain-data blocks:
// paragraphs, lists, code, tables, figures, widgets, questions, mistakes, reveals) turned into DOM
// nodes. The explorer's course page (course.js) and the static site (seqlab learn site: site.js) both
// render with it; each page sets LESSON_RENDER.say (its words) and LESSON_RENDER.widget (what a
// widget becomes there). Text is always text (never HTML), links go only to http(s) or #anchors,
// figures are our own SVG shown as images.
"use strict";

const LESSON_RENDER = {
  say: (key) => key,                                                        // the page's words
  widget: (b) => lessonEl("div", { class: "lesson-widget", "data-anchor": b.anchor }),
};

function lessonEl(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

// A Trace step's worked numbers: shown once answered; left out until then (the explorer), or folded
// behind a button where the page cannot know (the static site: the blocks come with shown = false).
function lessonReveal(b) {
  if (b.shown) return lessonEl("div", { class: "lesson-revealed", "data-reveal": "shown" }, ...lessonBlocks(b.blocks));
  const note = lessonEl("p", { class: "note lesson-reveal-hidden", "data-reveal": "hidden", text: LESSON_RENDER.say("reveal_hidden") });
  if (!b.blocks) return note;
  const folded = lessonEl("div", { class: "lesson-revealed", "data-reveal": "folded" }, ...lessonBlocks(b.blocks));
  folded.hidden = true;
  const open = lessonEl("button", { type: "button", class: "lesson-reveal", text: LESSON_RENDER.say("reveal_open") });
  open.addEventListener("click", () => { folded.hidden = false; folded.dataset.reveal = "shown"; open.remove(); note.remove(); });
  return lessonEl("div", { class: "lesson-reveal-box" }, note, open, folded);
}

// --- Markdown (inline: **bold**, `code`, [text](url)) --------------------------------------------
function lessonLink(label, url) {
  if (url.startsWith("#")) return lessonEl("a", { href: url, text: label });
  if (/^https?:\/\//.test(url)) return lessonEl("a", { href: url, text: label, target: "_blank", rel: "noopener noreferrer" });
  return document.createTextNode(label);
}

function lessonInline(text) {
  const nodes = [];
  const pattern = /\*\*(.+?)\*\*|`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  let m;
  while ((m = pattern.exec(text)) !== null) {
    if (m.index > last) nodes.push(document.createTextNode(text.slice(last, m.index)));
    if (m[1] !== undefined) nodes.push(lessonEl("strong", {}, ...lessonInline(m[1])));
    else if (m[2] !== undefined) nodes.push(lessonEl("code", { text: m[2] }));
    else nodes.push(lessonLink(m[3], m[4]));
    last = pattern.lastIndex;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

function lessonFigure(b) {
  const img = lessonEl("img", { src: b.src || "data:image/svg+xml;charset=utf-8," + encodeURIComponent(b.svg || ""), alt: b.caption });
  return lessonEl("figure", { class: "lesson-figure", "data-figure": b.name }, img, lessonEl("figcaption", {}, ...lessonInline(b.caption)));
}

function lessonQuestion(b) {
  const answer = lessonEl("div", { class: "lesson-answer" }, ...lessonBlocks(b.answer || []));
  answer.hidden = true;
  const button = lessonEl("button", { type: "button", class: "lesson-reveal", text: LESSON_RENDER.say("reveal") });
  button.addEventListener("click", () => {
    answer.hidden = !answer.hidden;
    button.textContent = LESSON_RENDER.say(answer.hidden ? "reveal" : "hide");
  });
  return lessonEl("div", { class: "lesson-q", id: "q-" + b.id, "data-kind": b.kind },
    lessonEl("span", { class: "lesson-tag", text: LESSON_RENDER.say("qkind." + b.kind) }), ...lessonBlocks(b.blocks), button, answer);
}

function lessonMistake(b) {
  return lessonEl("div", { class: "lesson-mistake", id: b.anchor },
    lessonEl("h4", {}, lessonEl("span", { class: "lesson-tag bad", text: LESSON_RENDER.say("mistake") }), ...lessonInline(b.title)),
    ...lessonBlocks(b.blocks));
}

function lessonBlocks(blocks) {
  return blocks.map((b) => {
    switch (b.type) {
      case "paragraph": return lessonEl("p", {}, ...lessonInline(b.text));
      case "heading": return lessonEl("h4", {}, ...lessonInline(b.text));
      case "list": return lessonEl(b.ordered ? "ol" : "ul", {}, ...b.items.map((item) => lessonEl("li", {}, ...lessonInline(item))));
      case "code": return lessonEl("pre", { class: "lesson-math" }, lessonEl("code", { text: b.text }));
      case "table": {
        const table = lessonEl("table", { class: "lesson-table" });
        if (b.header.length) table.append(lessonEl("thead", {}, lessonEl("tr", {}, ...b.header.map((c) => lessonEl("th", {}, ...lessonInline(c))))));
        table.append(lessonEl("tbody", {}, ...b.rows.map((row) => lessonEl("tr", {}, ...row.map((c) => lessonEl("td", {}, ...lessonInline(c)))))));
        return lessonEl("div", { class: "table-wrap" }, table);
      }
      case "figure": return lessonFigure(b);
      case "widget": return LESSON_RENDER.widget(b);
      case "question": return lessonQuestion(b);
      case "mistake": return lessonMistake(b);
      case "reveal": return lessonReveal(b);
      case "fold":      // the less common mistakes, closed; a link to one of them opens it
        return lessonEl("details", { class: "lesson-more", id: b.id }, lessonEl("summary", { text: b.title }), ...lessonBlocks(b.blocks));
      default: return null;
    }
  });
}
