"""Issue 13 item 7 (explorer): clients that hang up leave no traceback; a wrong method is 405 + Allow."""

from __future__ import annotations

import http.client
import json
import sys

import pytest

from seqlab.explorer.server import ExplorerHandler


@pytest.mark.parametrize(
    "method, path, allow",
    [("GET", "/api/lstm", "POST"), ("HEAD", "/api/attention", "POST"), ("PUT", "/api/lstm", "POST"),
     ("GET", "/api/lm/next", "POST"), ("HEAD", "/api/runs", "POST"), ("PUT", "/api/seq2seq/translate", "POST"),
     ("POST", "/api/defaults", "GET, HEAD"), ("POST", "/", "GET, HEAD"), ("DELETE", "/static/app.js", "GET, HEAD")],
)
def test_a_wrong_method_is_405_with_allow(client, method, path, allow):
    status, headers, body = client.request(method, path, b"{}" if method != "GET" else None,
                                           {"Content-Type": "application/json"})
    assert status == 405 and headers["Allow"] == allow
    if method != "HEAD":
        assert json.loads(body)["error"] == f"{method} is not allowed on {path}; use {allow}"


def test_unknown_paths_stay_404(client):
    assert client.request("GET", "/api/nothing")[0] == 404
    assert client.request("GET", "/api/lm/nothing")[0] == 404
    assert client.request("PUT", "/nothing", b"{}")[0] == 404
    assert client.post("nothing")[0] == 404


@pytest.mark.parametrize("error", [BrokenPipeError, ConnectionResetError, ConnectionAbortedError])
def test_a_client_that_hangs_up_leaves_no_traceback(client, explorer_server, monkeypatch, capsys, error):
    def hung_up(self, *args, **kwargs):
        raise error(32, "the client closed the connection")

    capsys.readouterr()
    monkeypatch.setattr(ExplorerHandler, "_send", hung_up)  # every answer meets a closed socket
    for _ in range(5):
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            client.request("GET", "/static/app.js")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            client.post("lstm", {})
    monkeypatch.undo()
    assert client.request("GET", "/")[0] == 200  # the server keeps serving
    assert capsys.readouterr().err == ""


def test_other_server_errors_keep_their_traceback(explorer_server, capsys):
    explorer_server.verbose = True
    try:
        try:
            raise BrokenPipeError(32, "Broken pipe")
        except BrokenPipeError:
            explorer_server.handle_error(None, ("127.0.0.1", 5555))
        assert capsys.readouterr().err == "127.0.0.1: client went away (BrokenPipeError)\n"
    finally:
        explorer_server.verbose = False
    try:
        raise RuntimeError("a real bug")
    except RuntimeError:
        explorer_server.handle_error(None, ("127.0.0.1", 5555))
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: a real bug" in err
    assert sys.exc_info() == (None, None, None)
