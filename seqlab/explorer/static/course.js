// The course: the learning path as the explorer's home. The steps with their state, the current
// step opened, its lesson rendered from the structure /api/learn/lesson sends (seqlab.learn.views),
// the step's widget moved into the lesson (and back to its place below when another step opens),
// Trace questions answered here, an Implement step's latest check with a button to check again.
// Lesson text is Markdown rendered by courseInline/courseBlocks into DOM nodes: text is always
// text (never HTML), links only to http(s) or #anchors, figures are our own SVG shown as images.
// ?view=widgets is the widget page alone; #step/NAME opens a step; #step/NAME/mistake-ID one of its
// mistakes (opening the "More mistakes" fold it may sit in); #w-... a widget, wherever it is.
"use strict";

const COURSE = {
  path: null,          // /api/learn/path
  open: null,          // the step shown
  lesson: null,        // /api/learn/lesson of that step
  moved: new Map(),    // widget anchor -> the placeholder left where it was
  task: {},            // what the task box shows: {answer, solution, card, checking, error}
  hints: 0,            // hints shown
  failure: null,       // an error to show instead of the lesson
  revealed: new Set(), // steps whose Trace question was answered or its solution asked for, on this page
};

// the lesson renderer's words, from this page's strings
const COURSE_LESSON_WORDS = { reveal: "common.reveal", hide: "common.hide", mistake: "course.mistake",
  reveal_hidden: "course.reveal_hidden", reveal_open: "course.reveal_open" };
LESSON_RENDER.say = (key) => t(key.startsWith("qkind.") ? "course." + key : COURSE_LESSON_WORDS[key]);

const courseText = (pair) => (Array.isArray(pair) ? pair[I18N.lang === "zh" ? 1 : 0] : pair);
const courseStep = (id) => COURSE.path.steps.find((s) => s.id === id);

function courseView() {
  return new URLSearchParams(location.search).get("view") === "widgets" ? "widgets" : "course";
}

// --- widgets move into the lesson and back --------------------------------------------------------
function courseReturnWidgets() {
  for (const [anchor, home] of COURSE.moved) {
    const node = document.getElementById(anchor);
    if (node) home.replaceWith(node); else home.remove();
  }
  COURSE.moved.clear();
}

function courseMoveWidgets(root, step) {
  root.querySelectorAll(".lesson-widget").forEach((holder) => {
    const anchor = holder.dataset.anchor;
    const node = document.getElementById(anchor);
    if (!node || COURSE.moved.has(anchor) || node.closest("#course")) {
      holder.append(el("p", { class: "note", text: t("course.widget_missing", { anchor }) }));
      return;
    }
    const home = el("div", { class: "widget-moved", "data-anchor": anchor },
      el("span", { text: t("course.widget_moved", { step: step.number }) + " " }),
      el("a", { href: "#step/" + step.id, text: courseText(step.title) }));
    node.before(home);
    holder.append(node);
    COURSE.moved.set(anchor, home);
  });
}

// --- the path -----------------------------------------------------------------------------------------
const COURSE_MARKS = { todo: "", started: "~", passed: "✓", unconfirmed: "✓", changed: "!" };
const COURSE_DONE = ["passed", "unconfirmed"];

function courseSidebar() {
  const { steps, parts } = COURSE.path;
  const done = steps.filter((s) => COURSE_DONE.includes(s.state)).length;
  const nav = el("nav", { class: "course-path", id: "course-path", "aria-label": t("course.title") },
    el("p", { class: "course-progress", id: "course-progress", text: t("course.progress", { done, n: steps.length }) }));
  for (const part of parts) {
    const list = el("ol", { class: "course-steps" });
    for (const s of steps.filter((x) => x.part === part.id)) {
      const classes = ["course-step", "state-" + s.state];
      if (s.id === COURSE.open) classes.push("open");
      if (s.id === COURSE.path.current) classes.push("current");
      list.append(el("li", {}, el("a", { href: "#step/" + s.id, class: classes.join(" "), id: "course-step-" + s.id,
        "data-state": s.state, title: t("course.state." + s.state) },
        el("span", { class: "course-mark", text: COURSE_MARKS[s.state] || "" }),
        el("span", { class: "course-num", text: String(s.number) }),
        el("span", { class: "course-name", text: courseText(s.title) }))));
    }
    nav.append(el("div", { class: "course-part", "data-part": part.id }, el("h3", { text: courseText(part.title) }), list));
  }
  return nav;
}

function courseWorkspaceNote() {
  const ws = COURSE.path.workspace;
  return el("p", { class: "note course-ws" }, ws ? t("course.workspace", { ws }) : t("course.no_workspace"), " ",
    el("a", { href: "?view=widgets", text: t("course.widget_page") }));
}

// --- the task -----------------------------------------------------------------------------------------
function courseTrace(task) {
  const state = COURSE.task;
  const input = el("input", { type: "text", id: "course-answer", placeholder: t("course.answer_placeholder"),
    "aria-label": t("course.answer_placeholder"), autocomplete: "off" });
  if (state.value !== undefined) input.value = state.value;
  const submit = el("button", { type: "submit", id: "course-submit", text: t("course.submit") });
  const form = el("form", { class: "course-answer-form" }, input, submit);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    state.value = input.value;
    try {
      state.answer = await api("learn/answer", { question: task.id, value: input.value });
      state.error = null;
      if (state.answer.correct) { await courseRefreshPath(); return courseReveal(); }
    } catch (err) { state.error = err; state.answer = null; }
    courseRenderTask();
  });
  const out = [el("p", { class: "course-q" }, el("strong", { text: task.title + (I18N.lang === "zh" ? "：" : ": ") }),
    ...lessonInline(task.question)), form];
  const feedback = el("div", { class: "course-feedback", id: "course-feedback" });
  if (state.error) feedback.append(el("p", { class: "bad", text: t("common.error", { msg: errorText(state.error) }) }));
  if (state.answer && state.answer.correct) {
    feedback.dataset.result = "right";
    feedback.append(el("p", { class: "good", text: t(state.answer.recorded ? "course.right" : "course.right_unsaved") }));
  } else if (state.answer && state.answer.short) {
    feedback.dataset.result = "short";
    feedback.append(el("p", { class: "course-hint", text: t("course.right_so_far", { what: courseText(state.answer.what).replace(/^right so far: |^目前是对的：/, "") }) }));
  } else if (state.answer) {
    feedback.dataset.result = "wrong";
    feedback.append(el("p", { class: "bad", text: t("course.wrong", { what: courseText(state.answer.what) }) }));
    if (state.answer.wrong) {
      const known = el("p", { class: "course-hint", id: "course-known", text: t("course.known", { title: courseText(state.answer.wrong.title) }) });
      if (state.answer.wrong.anchor) known.append(" ", el("a", { href: `#step/${COURSE.lesson.name}/${state.answer.wrong.anchor}`, text: t("course.read_known") }));
      feedback.append(known);
    } else {
      feedback.append(el("p", { class: "course-hint", id: "course-hint", text: t("course.hint", { hint: courseText(state.answer.hint) }) }));
    }
  }
  if ((state.answer && !state.answer.correct) || state.solution) {
    if (state.solution) {
      feedback.append(el("p", { class: "course-solution", id: "course-solution", text: t("course.solution", { text: courseText(state.solution) }) }));
    } else {
      const show = el("button", { type: "button", id: "course-show-solution", text: t("course.show_solution") });
      show.addEventListener("click", async () => {
        try { state.solution = (await api("learn/answer", { question: task.id, solution: true })).solution; } catch (err) { state.error = err; }
        if (state.solution) return courseReveal();
        courseRenderTask();
      });
      feedback.append(show);
    }
  }
  out.push(feedback, el("p", { class: "note", text: t("course.in_terminal", { cmd: task.answer_with }) }));
  return out;
}

// A card: the student's answer first, then the worked answer, then the student's mark ("same" passes it).
function courseCard(task) {
  const state = COURSE.task;
  const out = [el("p", { class: "course-q" }, el("span", { class: "lesson-tag", text: t("course.qkind." + task.kind) }),
    el("strong", { text: " " + task.title + (I18N.lang === "zh" ? "：" : ": ") }), ...lessonInline(task.question))];
  if (!state.card) {
    const box = el("textarea", { id: "course-card-written", rows: "4", placeholder: t("course.card_write"), "aria-label": t("course.card_write") });
    if (state.written) box.value = state.written;
    const submit = el("button", { type: "submit", id: "course-card-submit", text: t("course.card_submit") });
    const form = el("form", { class: "course-card-form" }, box, submit);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      state.written = box.value;
      if (box.value.replace(/\s/g, "").length < 12) state.error = { code: "learn_write_first", params: {} };   // as the server says
      else {
        try { state.card = await api("learn/card", { card: task.id, written: box.value }); state.error = null; } catch (err) { state.error = err; }
      }
      courseRenderTask();
    });
    out.push(form);
  } else {
    out.push(el("p", { class: "course-yours", id: "course-card-yours", text: t("course.card_yours", { text: state.written }) }),
      el("p", { class: "course-solution", id: "course-card-answer", text: courseText(state.card.answer) }));
    if (state.marked) {
      out.push(el("p", { class: state.marked.state === "passed" ? "good" : "bad", id: "course-card-marked",
        text: t(state.marked.state === "passed" ? "course.card_passed" : "course.card_again") }));
    } else {
      const row = el("p", { class: "course-card-marks" }, el("span", { text: t("course.card_compare") + " " }));
      for (const mark of ["same", "partly", "missed"]) {
        const button = el("button", { type: "button", id: "course-card-mark-" + mark, "data-mark": mark, text: t("course.mark." + mark) });
        button.addEventListener("click", async () => {
          try { state.marked = await api("learn/card", { card: task.id, written: state.written, mark }); state.error = null; await courseRefreshPath(); } catch (err) { state.error = err; }
          if (state.marked && state.marked.state !== "passed") { const again = state.written; COURSE.task = { written: again, again: state.marked }; }
          courseRenderTask();
        });
        row.append(button, " ");
      }
      out.push(row);
    }
  }
  if (state.again && !state.card) out.push(el("p", { class: "bad", id: "course-card-marked", text: t("course.card_again") }));
  if (state.error) out.push(el("p", { class: "bad", text: t("common.error", { msg: errorText(state.error) }) }));
  out.push(el("p", { class: "note", text: t("course.in_terminal", { cmd: task.answer_with }) }));
  return out;
}

function courseDiagnosis(d, step) {
  // a catalogued mistake is named as the lesson names it, in the page's language
  const named = d.mistake && ((d.read || {}).step || step) === COURSE.lesson.name
    ? (COURSE.lesson.mistakes || []).find((m) => m.id === d.mistake) : null;
  const box = el("div", { class: "course-diagnosis", id: "course-diagnosis" },
    el("p", { class: "bad" }, el("strong", { text: t("course.diagnosis", { title: named ? named.title : d.title }) })));
  if (d.where) box.append(el("p", { class: "course-where", text: t("course.where", { where: d.where }) }));
  const explanation = named && named.explanation ? named.explanation : d.explanation;
  if (explanation) box.append(el("p", { text: explanation }));
  const read = d.read || {};
  const anchor = read.anchor || (d.mistake ? "mistake-" + d.mistake : "");
  const links = el("p", { class: "course-read" });
  if (anchor) links.append(el("a", { href: `#step/${read.step || step}/${anchor}`, id: "course-read-link", text: t("course.read_mistake") }));
  const widget = read.widget || (COURSE.lesson && COURSE.lesson.look);
  if (widget) links.append(" · ", el("a", { href: "#" + widget, text: t("course.see_widget") }));
  if (links.childNodes.length) box.append(links);
  return box;
}

function courseImplement(task) {
  const state = COURSE.task;
  const lesson = COURSE.lesson;
  const out = [el("p", { class: "course-q" }, ...lessonInline(t("course.implement", { signature: "`" + task.signature + "`" })),
    document.createTextNode(" — " + task.title)), el("pre", { class: "lesson-math" }, el("code", { text: task.doc }))];
  const ws = lesson.workspace;
  out.push(el("p", { class: "note", text: t("course.start", { cmd: task.start }) }));
  const box = el("div", { class: "course-check", id: "course-check" }, el("h4", { text: t("course.latest") }));
  const latest = state.latest !== undefined ? state.latest : lesson.latest;
  if (!latest) box.append(el("p", { class: "note", text: t("course.never") }));
  else {
    box.dataset.passed = latest.passed ? "1" : "0";
    box.append(el("p", { class: latest.passed ? "good" : "bad", id: "course-check-result",
      text: t(latest.passed ? "course.passed_at" : "course.failed_at", { at: latest.at.replace("T", " ") }) }));
    if (latest.diagnosis) box.append(courseDiagnosis(latest.diagnosis, lesson.name));
    (latest.notes || []).forEach((note) => box.append(el("p", { class: "note course-note", text: note })));
    // the checks as `seqlab learn check` lists them: a sentence that fails only with the values is not quoted as broken
    const rows = latest.rows ? latest.rows[I18N.lang === "zh" ? "zh" : "en"] : latest.checks.map((c) => [c.passed, c.name, c.message]);
    box.append(el("ul", { class: "course-checks" }, ...rows.map(([passed, name, message]) => el("li", { class: passed ? "good" : "bad" },
      el("span", { class: "mono", text: (passed ? "PASS " : "FAIL ") + name }), message ? ": " + message : ""))));
  }
  const run = el("button", { type: "button", id: "course-check-run", text: t(latest ? "course.check_again" : "course.check_now") });
  run.disabled = !ws || !!state.checking;
  run.addEventListener("click", async () => {
    state.checking = true;
    state.error = null;
    courseRenderTask();
    try {
      const result = await api("learn/check", { step: task.id });
      state.latest = result.latest;
      await courseRefreshPath();
    } catch (err) { state.error = err; }
    state.checking = false;
    courseRenderTask();
  });
  box.append(run);
  if (state.checking) box.append(el("p", { class: "note", text: t("course.checking") }));
  if (!ws) box.append(el("p", { class: "note", text: t("course.no_workspace") }));
  else if (!lesson.present && !state.latest) box.append(el("p", { class: "note", text: t("course.no_file", { file: lesson.file, name: task.id, ws }) }));
  if (state.error) box.append(el("p", { class: "bad", text: t("common.error", { msg: errorText(state.error) }) }));
  out.push(box);
  return out;
}

function courseRenderTask() {
  const box = $("course-task");
  if (!box || !COURSE.lesson) return;
  const task = COURSE.lesson.task;
  const parts = [el("h3", { text: t("course.task") })];
  if (task.type === "trace") parts.push(...courseTrace(task));
  else if (task.type === "card") parts.push(...courseCard(task));
  else if (task.type === "implement") parts.push(...courseImplement(task));
  else {
    parts.push(el("p", { text: t("course.run") }), el("pre", { class: "lesson-math" }, el("code", { text: task.command })),
      el("p", { class: "note", text: t("course.command_check", { cmd: task.check_with }) }),
      el("p", { text: t("course.then") }));
    parts.push(...(task.then.type === "trace" ? courseTrace(task.then) : courseCard(task.then)));
  }
  box.replaceChildren(...parts);
}

function courseHints() {
  const hints = COURSE.lesson.hints || [];
  if (!hints.length) return null;
  const box = el("div", { class: "course-hints", id: "course-hints" }, el("h3", { text: t("course.hints") }));
  box.append(el("ol", {}, ...hints.slice(0, COURSE.hints).map((h) => el("li", {}, ...lessonInline(h)))));
  if (COURSE.hints < hints.length) {
    const more = el("button", { type: "button", id: "course-hint-next", text: t("course.hint_button", { k: COURSE.hints + 1, n: hints.length }) });
    more.addEventListener("click", async () => {
      let asked = null;     // counted in progress.json, as seqlab learn hint counts them
      try { asked = (await api("learn/hint", { step: COURSE.lesson.name })).asked; } catch (err) { asked = null; }
      COURSE.hints = Math.min(hints.length, Math.max(COURSE.hints + 1, asked || 0));
      box.replaceWith(courseHints());
    });
    box.append(more);
  }
  return box;
}

// --- the page -----------------------------------------------------------------------------------------
function courseRender() {
  const root = $("course");
  courseReturnWidgets();
  const article = el("article", { class: "course-lesson", id: "course-lesson" });
  if (COURSE.failure) article.append(el("p", { class: "bad", text: t("common.error", { msg: errorText(COURSE.failure) }) }));
  const lesson = COURSE.lesson;
  if (lesson) {
    const step = courseStep(lesson.name);
    article.dataset.step = lesson.name;
    article.append(el("p", { class: "course-where" },
      t("course.step_of", { n: lesson.number, of: lesson.of, part: lesson.part.title }), " · ",
      el("span", { class: "lesson-tag", text: t("course.kind." + lesson.kind) }), " ",
      el("span", { class: "course-state state-" + step.state, id: "course-state", "data-state": step.state, text: t("course.state." + step.state) })),
      el("h2", { class: "lesson-title", text: lesson.title }));
    for (const section of lesson.sections) {
      article.append(el("section", { class: "lesson-section", id: "sec-" + section.id, "data-section": section.id },
        el("h3", { text: section.heading }), ...lessonBlocks(section.blocks)));
    }
    const hints = courseHints();
    if (hints) article.append(hints);
    article.append(el("div", { class: "course-task", id: "course-task" }));
    // a widget that computes a Trace step's answer: below the question, closed until it is answered
    const below = lesson.below_task || [];
    if (below.length) {
      const details = el("details", { class: "course-below", id: "course-below", "data-closed": below[0].closed ? "1" : "0" },
        el("summary", { text: t("course.widget_closed") }), ...lessonBlocks(below));
      details.open = !below[0].closed;
      article.append(details);
    }
  }
  root.replaceChildren(el("div", { class: "course-head" }, el("h2", { text: t("course.title") }), courseWorkspaceNote()),
    el("div", { class: "course-cols" }, courseSidebar(), article));
  if (lesson) {
    courseMoveWidgets(article, courseStep(lesson.name));
    courseRenderTask();
  }
}

async function courseRefreshPath() {
  COURSE.path = await api("learn/path", {});
  const old = $("course-path");
  if (old) old.replaceWith(courseSidebar());
  const step = COURSE.lesson && courseStep(COURSE.lesson.name);
  const badge = $("course-state");
  if (step && badge) {
    badge.className = "course-state state-" + step.state;
    badge.dataset.state = step.state;
    badge.textContent = t("course.state." + step.state);
  }
}

// The step's Trace question is answered, or its solution asked for: the lesson again, with its worked numbers.
async function courseReveal() {
  COURSE.revealed.add(COURSE.open);
  await courseOpen(COURSE.open);
}

async function courseOpen(id) {
  try {
    const lesson = await api("learn/lesson", { step: id, lang: I18N.lang, revealed: COURSE.revealed.has(id) });
    if (id !== COURSE.open) { COURSE.task = {}; COURSE.hints = lesson.hints_shown || 0; }
    COURSE.open = id;
    COURSE.lesson = lesson;
    COURSE.failure = null;
  } catch (err) {
    COURSE.failure = err;
  }
  courseRender();
}

// Scroll ``node`` to just below the sticky header, at once (a smooth scroll would still be moving
// when the page changes again).
function courseScrollTo(node) {
  const header = document.querySelector("header.top");
  const below = header && getComputedStyle(header).position === "sticky" ? header.getBoundingClientRect().height : 0;
  window.scrollTo({ top: node.getBoundingClientRect().top + window.scrollY - below - 12, behavior: "instant" });
}

function courseTarget() {
  const m = location.hash.match(/^#step\/([a-z0-9_]+)(?:\/([A-Za-z0-9_-]+))?$/);
  return m && courseStep(m[1]) ? { step: m[1], anchor: m[2] || null } : null;
}

async function courseRoute(event) {
  const target = courseTarget();
  if (target) {
    if (target.step !== COURSE.open) await courseOpen(target.step);
    const node = target.anchor ? document.getElementById(target.anchor) : $("course-lesson");
    const fold = node && target.anchor ? node.closest("details") : null;
    if (fold) fold.open = true;           // a mistake behind "More mistakes" is shown open
    if (node) {
      courseScrollTo(node);
      if (target.anchor) { node.classList.remove("flash"); void node.offsetWidth; node.classList.add("flash"); }
    }
  } else if (!COURSE.open) {
    await courseOpen(COURSE.path.current || COURSE.path.steps[0].id);
    if (!event && location.hash.startsWith("#w-")) {   // a widget's anchor: it may sit in the lesson now
      const node = document.getElementById(location.hash.slice(1));
      if (node) courseScrollTo(node);
    }
  }
}

// Called first by app.js's main(), before the widgets are set up: the home page draws the course
// first, and only then shows the widget page below it (body[data-view], course.css).
async function setupCourse() {
  const root = $("course");
  const navLink = document.querySelector("a[data-i18n='nav.course']");
  if (courseView() === "widgets") {
    root.hidden = true;
    document.body.dataset.view = "widgets";
    if (navLink) navLink.href = "/";
    return;
  }
  root.hidden = false;
  if (navLink) navLink.href = "#course";
  try {
    COURSE.path = await api("learn/path", {});
  } catch (err) {
    root.replaceChildren(el("p", { class: "bad", text: t("common.error", { msg: errorText(err) }) }));
    document.body.dataset.view = "course";
    return;
  }
  let lang = I18N.lang;
  // a language switch re-renders every widget: the lesson comes again in the new language
  widgets.push({ render: () => {
    if (lang !== I18N.lang && COURSE.open) { lang = I18N.lang; courseOpen(COURSE.open); }
  }, refresh: async () => {} });
  window.addEventListener("hashchange", courseRoute);
  await courseRoute();
  document.body.dataset.view = "course";
}
