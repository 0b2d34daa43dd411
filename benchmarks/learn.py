"""Time what a student waits for in `seqlab learn`, on 2 cores:

- checks: `seqlab learn check NAME` of every exercise, the whole command as a student runs it (goal:
  under 2 s for a NumPy exercise, under 5 s for an LM component), with the reference solution as the
  student's file (self-contained: tests/learn/bundle.py). The peer is the floor every check pays: two
  Python processes (the command and the child that runs the student's code) that import numpy, or
  torch for the LM components;
- sandbox: what the bubblewrap sandbox costs: numpy's and torch's import inside it and outside, and
  bwrap's own start (``/bin/true`` and ``python -c pass`` in the sandbox and without it);
- views: `seqlab learn show NAME` (the whole command with its bytecode cached, as installed; goal under
  0.5 s), the explorer's lesson view
  (POST /api/learn/lesson, and in Chromium a click on the step until its lesson is drawn, goal under
  0.5 s) and a notebook's check cell (`check(NAME, function)` in an IPython shell, as in a kernel;
  goal under 2 s for a NumPy exercise), for every step with a lesson (or --only).

- first paint: `seqlab explore` started afresh (its own process), its home page opened in Chromium: the
  seconds from the navigation until the course (the current step's lesson) is on screen, the first
  load after the server starts and then warm loads (goal under 0.5 s), and whether a widget of the
  widget page was ever on screen before the course (it must not be).

    python benchmarks/learn.py [--what checks|sandbox|views|first-paint|all] [--repeats 3] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")


def wall(command: list[str], env: dict, cwd: str, expect: int = 0) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return seconds


def _row(name: str, kind: str, seconds: float, goal: float, floor: float | None = None) -> str:
    extra = f" {seconds / floor:8.2f}" if floor else ""
    return f"{name:<30} {kind:<10} {seconds:9.3f} {goal:7.1f}{extra}" + ("" if seconds < goal else "  OVER GOAL")


def checks(names: list[str], repeats: int, env: dict) -> None:
    from seqlab.learn.catalog import NUMPY_NAMES
    from seqlab.learn.sandbox import for_check
    from tests.learn.bundle import student_source
    print(f"the student's code runs in: {for_check().report()}")

    with tempfile.TemporaryDirectory() as ws:
        floor = {}
        for kind, module in (("numpy", "numpy"), ("torch", "torch")):
            command = [sys.executable, "-c", f"import {module}"]
            floor[kind] = statistics.median(2 * wall(command, env, ws) for _ in range(repeats))
        print(f"floor (2 processes importing numpy): {floor['numpy']:.2f} s; importing torch: {floor['torch']:.2f} s")
        print(f"{'exercise':<30} {'kind':<10} {'median s':>9} {'goal s':>7} {'x floor':>8}")
        worst = {"numpy": 0.0, "torch": 0.0}
        for name in names:
            kind = "numpy" if name in NUMPY_NAMES else "torch"
            Path(ws, f"{name}.py").write_text(student_source(name))
            command = [sys.executable, "-m", "seqlab", "learn", "check", name, "--workspace", ws]
            seconds = statistics.median(wall(command, env, ws) for _ in range(repeats))
            worst[kind] = max(worst[kind], seconds)
            print(_row(name, kind, seconds, 2.0 if kind == "numpy" else 5.0, floor[kind]))
        print(f"slowest NumPy exercise {worst['numpy']:.2f} s (goal 2 s); slowest LM component "
              f"{worst['torch']:.2f} s (goal 5 s)")


def sandbox_costs(repeats: int) -> None:
    """numpy's and torch's import in the sandbox and outside it, and bwrap's own start (medians)."""
    import shutil

    from seqlab.learn.sandbox import Bubblewrap, bubblewrap_failure
    failure = bubblewrap_failure()
    if failure is not None:
        print(f"no sandbox to time: {failure}")
        return
    python = os.path.realpath(sys.executable)
    timer = ("import sys, time; sys.path.append('/check/site'); t = time.perf_counter(); import {m}; "
             "print(time.perf_counter() - t)")
    with tempfile.TemporaryDirectory() as root:
        os.mkdir(os.path.join(root, "work"))
        box = Bubblewrap()

        def inside(program: list[str], packages=("numpy",)) -> list[str]:
            return box.argv(root, packages, program)

        def median(command: list[str], printed: bool = False) -> float:
            values = []
            for _ in range(repeats):
                start = time.perf_counter()
                done = subprocess.run(command, capture_output=True, text=True, check=True, cwd=root)
                values.append(float(done.stdout) if printed else time.perf_counter() - start)
            return statistics.median(values)

        print(f"{'what':<44} {'outside s':>10} {'in bwrap s':>10} {'difference':>11}")
        true = shutil.which("true") or "/bin/true"
        rows = [("start /bin/true", median([true]), median(inside([true])))]
        rows.append(("start python -c pass", median([python, "-I", "-S", "-c", "pass"]),
                     median(inside([python, "-I", "-S", "-c", "pass"]))))
        for module, packages in (("numpy", ("numpy",)), ("torch", ("numpy", "torch"))):
            outside = [python, "-I", "-c", timer.format(m=module)]
            rows.append((f"import {module} (its own timer)", median(outside, True),
                         median(inside([python, "-I", "-S", "-c", timer.format(m=module)], packages), True)))
        for what, out, box_s in rows:
            print(f"{what:<44} {out:10.3f} {box_s:10.3f} {1000 * (box_s - out):+9.0f} ms")


def _browser_opens(steps: list[str], repeats: int) -> dict[str, float]:
    """Seconds from a click on a step in the explorer's path until its lesson is drawn (median)."""
    from playwright.sync_api import sync_playwright

    from seqlab.explorer.server import start_in_thread
    server, _ = start_in_thread()
    seconds: dict[str, list[float]] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                        args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(server.url + "#step/explain_order")
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            for _ in range(repeats):
                for step in steps:
                    other = "explain_order" if step != "explain_order" else "trace_recurrence"   # away first
                    page.evaluate("(s) => { location.hash = '#step/' + s; }", other)
                    page.wait_for_selector(f"#course-lesson[data-step={other}]")
                    start = time.perf_counter()
                    page.click(f"#course-step-{step}")
                    page.wait_for_selector(f"#course-lesson[data-step={step}] #course-task h3")
                    seconds.setdefault(step, []).append(time.perf_counter() - start)
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    return {step: statistics.median(values) for step, values in seconds.items()}


# at every animation frame from the page's start: when the course's lesson is first drawn, and whether a
# widget of the widget page was on screen before it
FIRST_PAINT = """
window.__paint = { course: null, widgetFirst: null };
(function watch() {
  const lesson = document.querySelector('#course:not([hidden]) #course-lesson .lesson-title');
  const shown = (e) => { const r = e.getBoundingClientRect(); return r.height > 0 && r.top < innerHeight && r.bottom > 0
    && getComputedStyle(e).visibility !== 'hidden'; };
  if (lesson && shown(lesson)) { window.__paint.course = performance.now(); return; }
  const widget = [...document.querySelectorAll('main > section.widget, main > section.panel')].find(shown);
  if (widget && window.__paint.widgetFirst === null) window.__paint.widgetFirst = widget.id + ' at ' + performance.now().toFixed(0) + ' ms';
  requestAnimationFrame(watch);
})();
"""


def first_paint(repeats: int, env: dict) -> None:
    """The explorer's home page in Chromium: seconds until the course is drawn, and what was drawn first."""
    import socket

    from playwright.sync_api import sync_playwright
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as ws:
        server = subprocess.Popen([sys.executable, "-m", "seqlab", "explore", "--port", str(port), "--no-browser",
                                   "--workspace", ws], env=env, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        try:
            url = f"http://127.0.0.1:{port}/"
            deadline = time.time() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.time() > deadline or server.poll() is not None:
                        raise SystemExit(f"seqlab explore did not start:\n{server.stdout.read()}")
                    time.sleep(0.05)
            rows = []
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM),
                                            args=["--no-sandbox", "--disable-background-networking", "--disable-gpu"])
                for k in range(repeats + 1):
                    context = browser.new_context(viewport={"width": 1280, "height": 900})
                    page = context.new_page()
                    page.add_init_script(FIRST_PAINT)
                    page.goto(url)
                    deadline = time.time() + 60          # (wait_for_function evaluates a string: the CSP forbids it)
                    while (paint := page.evaluate("() => window.__paint"))["course"] is None:
                        if time.time() > deadline:
                            raise SystemExit("the explorer's course was not drawn within 60 s")
                        page.wait_for_timeout(20)
                    rows.append((paint["course"] / 1000, paint["widgetFirst"]))
                    print(f"{'first load' if k == 0 else 'load ' + str(k):<12} course drawn at {paint['course'] / 1000:.3f} s"
                          f"  widget on screen first: {paint['widgetFirst'] or 'never'}")
                    context.close()
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    warm = statistics.median(seconds for seconds, _ in rows[1:]) if len(rows) > 1 else rows[0][0]
    flashed = [w for _, w in rows if w]
    print(f"the explorer's home: the course on screen {rows[0][0]:.3f} s after the first load's navigation, "
          f"{warm:.3f} s warm (median of {len(rows) - 1}; goal 0.5 s); the widget page first: "
          f"{'in ' + str(len(flashed)) + ' loads' if flashed else 'never'}")


def views(steps: list[str], exercises: list[str], repeats: int, env: dict) -> None:
    from seqlab.explorer.learn_api import LEARN_ENDPOINTS
    from seqlab.learn.checking import check
    from tests.learn.bundle import student_source

    with tempfile.TemporaryDirectory() as ws:
        # as an installed seqlab runs: with its modules' bytecode cached (a first, untimed run writes it)
        cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = os.path.join(ws, "pycache")
        print(f"{'step':<30} {'what':<10} {'median s':>9} {'goal s':>7}")
        worst = {"show": 0.0, "api": 0.0, "page": 0.0, "notebook": 0.0}
        for step in steps:
            command = [sys.executable, "-m", "seqlab", "learn", "show", step, "--workspace", ws]
            wall(command, cached, ws)
            seconds = statistics.median(wall(command, cached, ws) for _ in range(repeats))
            worst["show"] = max(worst["show"], seconds)
            print(_row(step, "show", seconds, 0.5))
            LEARN_ENDPOINTS["learn/lesson"]({"step": step, "lang": "en"}, ws)       # the first parse is cached
            timed = []
            for _ in range(repeats):
                start = time.perf_counter()
                for lang in ("en", "zh"):
                    LEARN_ENDPOINTS["learn/lesson"]({"step": step, "lang": lang}, ws)
                timed.append((time.perf_counter() - start) / 2)
            worst["api"] = max(worst["api"], statistics.median(timed))
            print(_row(step, "api", statistics.median(timed), 0.5))
        if CHROMIUM.exists():
            for step, seconds in _browser_opens(steps, repeats).items():
                worst["page"] = max(worst["page"], seconds)
                print(_row(step, "page", seconds, 0.5))
        else:
            print(f"(no {CHROMIUM}: the lesson's drawing in the page is not timed)")
        for name in exercises:
            given = Path(ws, "given", f"{name}.py")       # the file form of check(NAME, ...): seqlab's own
            given.parent.mkdir(exist_ok=True)             # function would be imported, which the rules refuse
            given.write_text(student_source(name))
            timed = []
            for _ in range(repeats):
                start = time.perf_counter()
                report = check(name, given, workspace=ws)
                timed.append(time.perf_counter() - start)
                if not report.passed:
                    raise SystemExit(f"the reference of {name} does not pass its check:\n{report}")
            worst["notebook"] = max(worst["notebook"], statistics.median(timed))
            print(_row(name, "notebook", statistics.median(timed), 2.0))
        print(f"slowest: learn show {worst['show']:.3f} s, lesson API {worst['api']:.3f} s, lesson in the page "
              f"{worst['page']:.3f} s (goals 0.5 s); a notebook's NumPy check cell {worst['notebook']:.2f} s (goal 2 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=("checks", "sandbox", "views", "first-paint", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=None, help="one exercise or step")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from seqlab.learn import lessons
    from seqlab.learn.catalog import NUMPY_NAMES, TORCH_NAMES
    from seqlab.learn.path import STEPS

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}")
    if args.what in ("sandbox", "all"):
        sandbox_costs(max(args.repeats, 5))
    if args.what in ("checks", "all"):
        checks([n for n in (*NUMPY_NAMES, *TORCH_NAMES) if args.only in (None, n)], args.repeats, env)
    if args.what in ("views", "all"):
        steps = [s.id for s in STEPS if lessons.has_lesson(s.id, "en") and args.only in (None, s.id)]
        if not steps and args.only:
            steps = [args.only]       # a step without a lesson shows its read line: time that
        views(steps, [n for n in NUMPY_NAMES if args.only in (None, n)], args.repeats, env)
    if args.what in ("first-paint", "all"):
        if CHROMIUM.exists():
            first_paint(args.repeats, env)
        else:
            print(f"(no {CHROMIUM}: the explorer's first paint is not measured)")
    print(f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
