"""Bad requests get HTTP 400 with a message naming the problem; only the app's own files are served."""

from __future__ import annotations

import json
import socket

import pytest

import seqlab.labs.lstm
from seqlab.explorer.server import STATIC_DIR


@pytest.mark.parametrize(
    "name, payload, words",
    [
        ("recurrence", {"a": "0.5"}, ["a", "number"]),
        ("recurrence", {"a": True}, ["a", "number"]),
        ("recurrence", {"xs": "1, 0"}, ["xs", "list"]),
        ("recurrence", {"xs": [1, None]}, ["xs[1]", "number"]),
        ("recurrence", {"xs": []}, ["xs", "1 to 16"]),
        ("recurrence", {"xs": list(range(17))}, ["xs", "1 to 16"]),
        ("recurrence", {"a": 11}, ["a", "between"]),
        ("recurrence", {"alpha": 1}, ["unknown field", "alpha"]),
        ("char_lm", {"steps": 10**6}, ["steps", "between"]),
        ("char_lm", {"steps": 1.5}, ["steps", "integer"]),
        ("char_lm", {"reset_state": "yes"}, ["reset_state", "true or false"]),
        ("lstm", {"f": 1.5}, ["f", "between 0 and 1"]),
        ("gru", {"convention": "pytorch"}, ["convention", "keep_old"]),
        ("attention", {"keys": [[1, 0], [0]]}, ["keys", "same length"]),
        ("attention", {"queries": [[1, 0, 0]]}, ["width"]),
        ("attention", {"values": [[2]]}, ["value rows"]),
        ("attention", {"queries": [[0] * 9]}, ["queries[0]", "1 to 8"]),
        ("attention", {"reverse_mask": True}, ["causal"]),
        ("attention", {"causal": True, "queries": [[1, 0]] * 3}, ["causal", "keys"]),
        ("attention", {"padding": True, "valid_length": 5}, ["valid_length"]),
        ("causal_mask", {"tokens": ["A"] * 9}, ["tokens", "1 to 8"]),
        ("causal_mask", {"tokens": [1, 2]}, ["tokens", "strings"]),
        ("multihead", {"num_heads": 3}, ["num_heads", "split evenly"]),
        ("bpe", {"word_counts": {"low": -1}}, ["count", "low"]),
        ("bpe", {"word_counts": ["low"]}, ["word_counts", "object"]),
        ("dependency", {"kind": "transformer"}, ["kind", "rnn"]),
        ("dependency", {"num_tokens": 7}, ["num_tokens", "between 2 and 6"]),
        ("repeated_factor", {"factors": [4, 4], "steps": 1000}, ["steps"]),
    ],
)
def test_bad_fields_are_400_with_a_message(client, name, payload, words):
    status, data = client.post(name, payload)
    assert status == 400
    for word in words:
        assert word in data["error"], data["error"]


@pytest.mark.parametrize(
    "raw, words",
    [
        (b"{not json", ["malformed JSON"]),
        (b'{"a": NaN}', ["non-finite", "NaN"]),
        (b'{"a": -Infinity}', ["non-finite", "Infinity"]),
        (b'{"a": 1e400}', ["a must be finite"]),
        (b'{"xs": [1, -1e999]}', ["xs[1] must be finite"]),
        (b"[1, 2]", ["JSON object", "list"]),
        (b"\xff\xfe", ["UTF-8"]),
        (b'{"a": ' + b"9" * 5000 + b"}", ["malformed JSON"]),
        (b"[" * 5000 + b"]" * 5000, ["nested too deeply"]),
        (b'{"xs": [' + b"1," * 9000 + b"1]}", ["limit"]),
    ],
)
def test_malformed_bodies_are_400(client, raw, words):
    status, data = client.post("recurrence", raw=raw)
    assert status == 400
    for word in words:
        assert word in data["error"], data["error"]


def test_headers_are_checked(client):
    status, _, body = client.request("POST", "/api/lstm", b"{}", {"Content-Type": "text/plain"})
    assert status == 400 and "Content-Type" in json.loads(body)["error"]
    status, _, body = client.request("POST", "/api/lstm", b"{}", {"Content-Type": "application/json",
                                                                   "Host": "attacker.example:8000"})
    assert status == 403
    status, _, body = client.request("POST", "/api/nothing", b"{}", {"Content-Type": "application/json"})
    assert status == 404 and "nothing" in json.loads(body)["error"]
    status, _, _ = client.request("PUT", "/api/lstm", b"{}", {"Content-Type": "application/json"})
    assert status == 405


def _raw_exchange(server, request: bytes, half_close: bool = True) -> bytes:
    host, port = server.server_address[:2]
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(request)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_short_body_missing_length_and_chunked_do_not_hang(explorer_server, monkeypatch):
    """Each is answered from what arrived: the short body's 400 says its 2 bytes ended (a server
    waiting for the rest would answer 408 after its read timeout, here made an hour so that it would
    not answer at all before the client's 10-second socket timeout). No clock is read."""
    from seqlab.explorer.server import ExplorerHandler

    monkeypatch.setattr(ExplorerHandler, "timeout", 3600)
    short = _raw_exchange(explorer_server, b"POST /api/lstm HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{}")
    assert short.startswith(b"HTTP/1.1 400") and b"ended after 2 of 100 bytes" in short
    missing = _raw_exchange(explorer_server, b"POST /api/lstm HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            b"Content-Type: application/json\r\n\r\n{}")
    assert missing.startswith(b"HTTP/1.1 400") and b"Content-Length" in missing
    chunked = _raw_exchange(explorer_server, b"POST /api/lstm HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    assert chunked.startswith(b"HTTP/1.1 400") and b"chunked" in chunked
    huge = _raw_exchange(explorer_server, b"POST /api/lstm HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 99999999\r\n\r\n")
    assert huge.startswith(b"HTTP/1.1 400") and b"limit" in huge


def test_internal_errors_are_500_without_a_traceback(client, monkeypatch, capsys):
    def broken(*args):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(seqlab.labs.lstm, "lstm_gate_step", broken)
    status, data = client.post("lstm", {})
    assert status == 500
    assert data == {"error": "internal error in lstm: RuntimeError"}
    assert "secret detail" in capsys.readouterr().err  # kept in the server's log instead


def test_a_result_that_overflowed_is_400_not_invalid_json(client, monkeypatch):
    monkeypatch.setattr(seqlab.labs.lstm, "lstm_gate_step", lambda *args: {"c": float("inf")})
    status, data = client.post("lstm", {})
    assert status == 400
    assert data == {"error": "the result is not finite (it overflowed); try smaller inputs"}


@pytest.mark.parametrize(
    "path",
    ["/static/../../pyproject.toml", "/static/%2e%2e/%2e%2e/pyproject.toml", "/../seqlab/cli.py",
     "/static//etc/passwd", "/etc/passwd", "/static/", "/seqlab/explorer/server.py", "/static/app.js/..",
     "/static/..%2fserver.py", "/api/defaults/../../pyproject.toml"],
)
def test_only_the_apps_own_static_files_are_served(client, path):
    status, _, body = client.request("GET", path)
    assert status == 404
    assert b"[project]" not in body and b"import" not in body


def test_static_files_are_served_with_types_and_csp(client):
    for name in ("index.html", "app.js", "charts.js", "i18n.js", "style.css"):
        status, headers, body = client.request("GET", f"/static/{name}")
        assert status == 200
        assert body == (STATIC_DIR / name).read_bytes()
        assert "default-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
    status, headers, body = client.request("GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html") and b"seqlab explorer" in body
    assert client.request("GET", "/static/app.js")[1]["Content-Type"] == "text/javascript; charset=utf-8"
    assert client.request("GET", "/static/style.css")[1]["Content-Type"] == "text/css; charset=utf-8"
    status, headers, body = client.request("HEAD", "/")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 1000
    status, headers, body = client.request("HEAD", "/api/defaults")
    assert status == 200 and body == b""


def test_server_binds_loopback_by_default(explorer_server):
    assert explorer_server.server_address[0] == "127.0.0.1"
    assert explorer_server.url.startswith("http://127.0.0.1:")
