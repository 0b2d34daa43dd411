"""`seqlab explore [--run DIR ...] [--paths DIR] [--host 127.0.0.1] [--port 8000] [--no-browser]`, and
`seqlab explore --screenshot OUT.png [--width W] [--lang en|zh] [--section ID]` (a picture of the page
instead of serving it; see seqlab/explorer/screenshot.py)."""

from __future__ import annotations

import argparse
import os
import sys

DEMO_RUN = os.path.join("demo_out", "run")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "explore",
        help="open the interactive explorer (a local web page)",
        description="Serve the explorer: one live widget per lesson computation, driven by seqlab.labs, "
        "plus panels over your own trained models (--run). Works offline; binds to 127.0.0.1 unless "
        "--host says otherwise.",
    )
    parser.add_argument("--run", action="append", default=[], metavar="DIR",
                        help="a run directory to explore (repeatable): a language model from `seqlab train` / "
                        f"`seqlab demo`, or a seq2seq model from `seqlab seq2seq train`; default {DEMO_RUN} "
                        "when it exists")
    parser.add_argument("--paths", metavar="DIR", help="results of `seqlab paths --out DIR` to draw")
    parser.add_argument("--workspace", metavar="DIR", help="a `seqlab learn` workspace (default ./seqlab-learn, as "
                        "`seqlab learn`'s): the course keeps your answers and checks in its progress.json, and each "
                        "widget whose exercise DIR holds shows your function's output beside the reference")
    parser.add_argument("--induction", metavar="DIR", help="results of `seqlab induction --out DIR` to draw (its "
                        "2-layer model also opens the information-flow section)")
    parser.add_argument("--interpret-limit", type=float, default=None, metavar="SECONDS",
                        help="refuse an information-flow request estimated to need more (default 10 s on 2 cores); "
                             "the refusal names the seqlab interpret command that runs it")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    shot = parser.add_argument_group("screenshot (needs Debian's chromium and playwright)")
    shot.add_argument("--screenshot", metavar="OUT.png", help="write a full-page screenshot of the explorer to "
                      "OUT.png instead of serving it (e.g. out/explorer.png)")
    shot.add_argument("--width", type=int, default=1200, help="with --screenshot: viewport width in pixels")
    shot.add_argument("--lang", choices=("en", "zh"), default="en", help="with --screenshot: the page's language")
    shot.add_argument("--section", metavar="ID", help="with --screenshot: capture only this section "
                      "(e.g. w-model, w-paths)")
    parser.add_argument("--course", metavar="DIR", default=None,
                        help="a teacher's course folder (default: SEQLAB_COURSE, else the one the workspace follows)")
    parser.set_defaults(func=run_explore)


def run_explore(args: argparse.Namespace) -> int:
    if args.screenshot:
        return run_screenshot(args)
    import webbrowser

    from seqlab.learn.cli import DEFAULT_WORKSPACE
    from seqlab.learn.courses import CourseError, use
    from seqlab.learn.workspace import remembered_course
    workspace = getattr(args, "workspace", None) or DEFAULT_WORKSPACE
    try:     # before anything reads the path: the course's steps are the page's
        use(args.course or os.environ.get("SEQLAB_COURSE") or remembered_course(workspace))
    except CourseError as error:
        print(f"seqlab explore: {error}", file=sys.stderr)
        return 2

    from seqlab.explorer.runs import RunRegistry
    from seqlab.explorer.server import make_server

    if not 0 <= args.port <= 65535:
        print(f"seqlab explore: --port must be 0..65535, got {args.port}", file=sys.stderr)
        return 2
    run_ids = args.run or ([DEMO_RUN] if os.path.isdir(DEMO_RUN) else [])
    runs = RunRegistry(run_ids, paths_dir=args.paths)
    runs.induction_dir = args.induction  # the induction panel's results (seqlab.explorer.induction_api)
    runs.interpret_limit = args.interpret_limit
    for run in runs.runs:  # the page shows these too; the terminal hears first
        if run.problem is not None:
            print(f"warning: {run.problem}", file=sys.stderr)
    if args.paths and not os.path.isdir(args.paths):
        print(f"warning: --paths {args.paths} is not a directory; run `seqlab paths --out {args.paths}` first",
              file=sys.stderr)
    try:
        server = make_server(args.host, args.port, verbose=args.verbose, runs=runs)
    except OSError as exc:
        print(f"seqlab explore: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    # the course's progress and the "yours" panels (explorer/course_api.py, learn_api.py): the workspace of
    # `seqlab learn`, ./seqlab-learn unless --workspace names another
    server.workspace = workspace
    if args.workspace and not os.path.isdir(args.workspace):
        print(f"warning: --workspace {server.workspace} is not a directory; `seqlab learn start NAME "
              f"--workspace {server.workspace}` makes it", file=sys.stderr)
    print(f"seqlab explorer at {server.url}  (Ctrl+C to stop)", flush=True)
    if not run_ids:
        print("no model runs: the model panels explain how to make one (`seqlab demo --fast`)", file=sys.stderr)
    from seqlab.explorer.server import is_loopback

    if not is_loopback(args.host):
        print(f"warning: listening on {args.host}, reachable from other machines", file=sys.stderr)
    if not args.no_browser:
        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("\nstopped")
    finally:
        server.server_close()
    return 0


def run_screenshot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from seqlab.explorer.screenshot import take_screenshot

    out = Path(args.screenshot)
    try:
        size = take_screenshot(out, args.width, args.lang, runs=args.run, section=args.section, paths=args.paths,
                               induction=args.induction, workspace=args.workspace)
    except ValueError as error:  # a section the page does not have, or whose results are not given
        print(f"seqlab explore --screenshot: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({size / 1024:.0f} KiB)")
    return 0
