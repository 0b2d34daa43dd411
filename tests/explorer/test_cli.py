"""`seqlab explore`: argument parsing, the browser switch, and a real process serving the page."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import pytest

from seqlab.cli import build_parser
from seqlab.explorer import server as server_module


def test_explore_is_registered_with_its_options():
    args = build_parser().parse_args(["explore"])
    assert (args.host, args.port, args.no_browser) == ("127.0.0.1", 8000, False)
    args = build_parser().parse_args(["explore", "--host", "0.0.0.0", "--port", "0", "--no-browser"])
    assert (args.host, args.port, args.no_browser) == ("0.0.0.0", 0, True)


@pytest.mark.parametrize("no_browser", [False, True])
def test_browser_opens_unless_told_not_to(monkeypatch, capsys, no_browser):
    opened = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url))
    monkeypatch.setattr(server_module.ExplorerServer, "serve_forever", lambda self: None)
    args = build_parser().parse_args(["explore", "--port", "0"] + (["--no-browser"] if no_browser else []))
    assert args.func(args) == 0
    url = capsys.readouterr().out.split()[3]
    assert url.startswith("http://127.0.0.1:")
    assert opened == ([] if no_browser else [url])


def test_port_in_use_is_a_clear_error(capsys):
    server, thread = server_module.start_in_thread("127.0.0.1", 0)
    try:
        port = server.server_address[1]
        args = build_parser().parse_args(["explore", "--port", str(port), "--no-browser"])
        assert args.func(args) == 1
        assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()


def test_explore_process_serves_the_page_offline():
    proc = subprocess.Popen([sys.executable, "-m", "seqlab", "explore", "--no-browser", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("seqlab explorer at http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[3]
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
        assert "seqlab explorer" in page and "/static/app.js" in page
        assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_run_and_paths_options():
    args = build_parser().parse_args(["explore", "--run", "a", "--run", "b", "--paths", "p"])
    assert (args.run, args.paths) == (["a", "b"], "p")
    assert build_parser().parse_args(["explore"]).run == []


def _served_runs(monkeypatch, argv) -> list[str]:
    served = []
    monkeypatch.setattr(server_module.ExplorerServer, "serve_forever", lambda self: served.append(self.runs))
    args = build_parser().parse_args(["explore", "--port", "0", "--no-browser", *argv])
    assert args.func(args) == 0
    return [run.id for run in served[0].runs]


def test_default_run_is_demo_out_when_it_exists(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert _served_runs(monkeypatch, []) == []
    assert "seqlab demo --fast" in capsys.readouterr().err
    (tmp_path / "demo_out" / "run").mkdir(parents=True)
    assert _served_runs(monkeypatch, []) == ["demo_out/run"]
    assert _served_runs(monkeypatch, ["--run", "elsewhere", "--run", "demo_out/run"]) == ["elsewhere", "demo_out/run"]
    err = capsys.readouterr().err
    assert "warning: run directory elsewhere does not exist" in err  # told in the terminal as well as the page
