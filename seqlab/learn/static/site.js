// A step's page of the static site (seqlab learn site): its view, as seqlab.learn.views gives it, from
// the page's JSON, rendered by lesson.js (the explorer's lesson renderer); the task below it, its
// answers behind a click; a widget becomes the command that shows it. No request leaves the page.
"use strict";

(function () {
  const data = JSON.parse(document.getElementById("lesson-data").textContent);
  const W = data.words;
  const view = data.view;
  const say = (key, values) => String(W[key] || key).replace(/\{(\w+)\}/g, (_, name) => (values && name in values ? values[name] : `{${name}}`));
  const colon = view.lang === "zh" ? "：" : ": ";
  LESSON_RENDER.say = (key) => say(key);
  LESSON_RENDER.widget = (b) => lessonEl("p", { class: "note site-widget", "data-anchor": b.anchor },
    ...lessonInline(say("widget", { anchor: b.anchor, n: view.number })), b.closed ? " " + say("widget_after") : "");

  // a click shows what was kept back
  function behindClick(label, nodes, id) {
    const box = lessonEl("div", { class: "course-solution", id }, ...nodes);
    box.hidden = true;
    const button = lessonEl("button", { type: "button", class: "lesson-reveal", id: id + "-show", text: label });
    button.addEventListener("click", () => { box.hidden = false; button.remove(); });
    return [button, box];
  }

  function trace(task) {
    return [lessonEl("p", { class: "course-q" }, lessonEl("strong", { text: task.title + colon }), ...lessonInline(task.question)),
      lessonEl("p", { class: "note" }, ...lessonInline(say("answer_with", { cmd: "`" + task.answer_with + "`" }))),
      ...behindClick(say("show_solution"), [document.createTextNode(say("solution", { text: task.solution }))], "site-solution")];
  }

  // a card: the worked answer only once something is written in the box
  function card(task) {
    const box = lessonEl("textarea", { id: "site-card-written", rows: "4", placeholder: say("card_write"), "aria-label": say("card_write") });
    const [button, answer] = behindClick(say("card_submit"), [document.createTextNode(task.answer)], "site-card-answer");
    button.disabled = true;
    box.addEventListener("input", () => { button.disabled = box.value.replace(/\s/g, "").length < 12; });
    return [lessonEl("p", { class: "course-q" }, lessonEl("span", { class: "lesson-tag", text: say("qkind." + task.kind) }),
      lessonEl("strong", { text: " " + task.title + colon }), ...lessonInline(task.question)),
      lessonEl("div", { class: "site-card-form" }, box, button), answer,
      lessonEl("p", { class: "note" }, ...lessonInline(say("card_with", { cmd: "`" + task.answer_with + "`" })))];
  }

  function implement(task) {
    return [lessonEl("p", { class: "course-q" }, ...lessonInline(say("implement", { signature: "`" + task.signature + "`" })),
      " — " + task.title), lessonEl("pre", { class: "lesson-math" }, lessonEl("code", { text: task.doc })),
      lessonEl("p", { class: "note" }, ...lessonInline(say("commands", { start: "`" + task.start + "`", check: "`" + task.check + "`", hint: "`" + task.hint + "`" })))];
  }

  function taskNodes(task) {
    if (task.type === "trace") return trace(task);
    if (task.type === "card") return card(task);
    if (task.type === "implement") return implement(task);
    return [lessonEl("p", { text: say("run") }), lessonEl("pre", { class: "lesson-math" }, lessonEl("code", { text: task.command })),
      lessonEl("p", { class: "note" }, ...lessonInline(say("command_check", { cmd: "`" + task.check_with + "`" }))),
      lessonEl("p", { text: say("then") }), ...taskNodes(task.then)];
  }

  const article = document.getElementById("course-lesson");
  article.replaceChildren(
    lessonEl("p", { class: "course-where" }, say("step_of", { n: view.number, of: view.of, part: view.part.title }), " · ",
      lessonEl("span", { class: "lesson-tag", text: say("kind." + view.kind) })),
    lessonEl("h2", { class: "lesson-title", text: view.title }));
  for (const section of view.sections) {
    article.append(lessonEl("section", { class: "lesson-section", id: "sec-" + section.id, "data-section": section.id },
      lessonEl("h3", { text: section.heading }), ...lessonBlocks(section.blocks)));
  }
  article.append(lessonEl("div", { class: "course-task", id: "course-task" }, lessonEl("h3", { text: say("task") }), ...taskNodes(view.task)));
  if (view.below_task.length) {
    article.append(lessonEl("div", { class: "site-widgets", id: "site-widgets" }, lessonEl("h3", { text: say("widgets") }),
      ...lessonBlocks(view.below_task)));
  }
  // a link to a mistake (#mistake-ID) lands on it now that it exists
  if (location.hash.length > 1) {
    const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    const fold = target ? target.closest("details") : null;
    if (fold) fold.open = true;           // a mistake behind "More mistakes" is shown open
    if (target) target.scrollIntoView();
  }
})();
