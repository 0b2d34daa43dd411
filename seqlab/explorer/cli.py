"""`seqlab explore [--host 127.0.0.1] [--port 8000] [--no-browser]`, and the arguments of
`python -m seqlab.explorer.screenshot OUT.png` (see seqlab/explorer/screenshot.py)."""

from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "explore",
        help="open the interactive explorer (a local web page)",
        description="Serve the explorer: one live widget per lesson computation, driven by seqlab.labs. "
        "Works offline; binds to 127.0.0.1 unless --host says otherwise.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 picks a free one)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.set_defaults(func=run_explore)


def run_explore(args: argparse.Namespace) -> int:
    import webbrowser

    from seqlab.explorer.server import make_server

    if not 0 <= args.port <= 65535:
        print(f"seqlab explore: --port must be 0..65535, got {args.port}", file=sys.stderr)
        return 2
    try:
        server = make_server(args.host, args.port, verbose=args.verbose)
    except OSError as exc:
        print(f"seqlab explore: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"seqlab explorer at {server.url}  (Ctrl+C to stop)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
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


def screenshot_main(argv: list[str] | None = None) -> None:
    """``python -m seqlab.explorer.screenshot OUT.png [--width W] [--lang en|zh]``."""
    from pathlib import Path

    from seqlab.explorer.screenshot import take_screenshot

    parser = argparse.ArgumentParser(prog="python -m seqlab.explorer.screenshot",
                                     description="Regenerate the README's screenshot of the explorer.")
    parser.add_argument("out", type=Path, help="PNG file to write")
    parser.add_argument("--width", type=int, default=1200, help="viewport width in pixels")
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    args = parser.parse_args(argv)
    size = take_screenshot(args.out, args.width, args.lang)
    print(f"wrote {args.out} ({size / 1024:.0f} KiB)")
