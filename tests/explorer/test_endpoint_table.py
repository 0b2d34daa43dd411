"""The explorer's one endpoint table (seqlab.explorer.endpoints): every area's endpoints are served
through it, a name two areas claim is refused, and whatever string an endpoint answers reaches the
client (a lone surrogate too)."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
import types

import pytest

from seqlab.explorer import endpoints
from tests.explorer.conftest import client_for, serving


def test_the_table_holds_every_areas_endpoints_once():
    table = endpoints.endpoint_table()
    names = []
    for module, table_name, _ in endpoints.AREAS:
        names += list(getattr(importlib.import_module(module), table_name))
    assert sorted(names) == sorted(table) and len(names) == len(set(names))
    assert {"lstm", "lm/next", "interpret/lens", "induction", "learn/yours"} <= set(table)


def test_every_endpoint_of_the_table_is_served(client):
    """GET on each name answers 405 "use POST": the server knows it (an unknown name is a 404)."""
    for name in endpoints.endpoint_table():
        status, headers, _ = client.request("GET", f"/api/{name}")
        assert (status, headers.get("Allow")) == (405, "POST"), name
    assert client.request("GET", "/api/no/such/endpoint")[0] == 404


def test_a_name_two_areas_serve_is_refused(monkeypatch):
    first, second = types.ModuleType("area_one"), types.ModuleType("area_two")
    first.TABLE, second.TABLE = {"a": print, "shared": print}, {"shared": len}
    monkeypatch.setitem(sys.modules, "area_one", first)
    monkeypatch.setitem(sys.modules, "area_two", second)
    call = lambda handler, data, server: handler(data)  # noqa: E731
    assert set(endpoints.join_tables([("area_one", "TABLE", call)])) == {"a", "shared"}
    with pytest.raises(ValueError, match=r"/api/shared is served twice: by area_one.TABLE and by area_two.TABLE"):
        endpoints.join_tables([("area_one", "TABLE", call), ("area_two", "TABLE", call)])


LONE_SURROGATE = "bad byte \udcff in caf\u00e9 \u4e2d"


def _echo(data, server):
    return {"error": LONE_SURROGATE, "workspace": server.workspace}


def _stream(data, server):
    yield {"line": LONE_SURROGATE}
    yield {"line": "two"}


def test_the_server_looks_up_the_one_table(monkeypatch):
    """An endpoint added to the table (and nowhere else) is served, and a handler gets the server's
    state: the server has no list of its own. Its strings reach the client even with a lone
    surrogate, which strict UTF-8 cannot encode (it used to leave the request unanswered)."""
    table = {"test/echo": _echo, "test/stream": _stream}
    monkeypatch.setattr(endpoints, "endpoint_table", lambda: table)
    with serving() as server:
        server.workspace = "/some/ws"
        client = client_for(server)
        assert client.post("test/echo", {}) == (200, {"error": LONE_SURROGATE, "workspace": "/some/ws"})
        status, _, body = client.request("POST", "/api/test/stream", b"{}", {"Content-Type": "application/json"})
        assert status == 200
        assert [json.loads(line) for line in body.splitlines()] == [{"line": LONE_SURROGATE}, {"line": "two"}]
        assert client.request("GET", "/api/test/echo")[0] == 405


def test_a_students_error_with_a_lone_surrogate_is_answered(tmp_path):
    """POST /api/learn/yours on a workspace file whose error text holds \\udcff: an HTTP answer
    that carries the text (the student's text with that character written as an escape), not a
    dropped connection."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "attention.py").write_text(textwrap.dedent("""
        def attention(q, keys, values, mask=None):
            raise ValueError(b"bad byte \\xff".decode("utf-8", "surrogateescape"))
    """), encoding="utf-8")
    with serving() as server:
        server.workspace = str(ws)
        status, data = client_for(server).post("learn/yours", {"exercise": "attention", "widget": "attention",
                                                                "inputs": {}})
    assert status == 200, data
    assert r"ValueError: bad byte \udcff" in data["calls"][0]["error"], data
    json.dumps(data, ensure_ascii=False).encode("utf-8")
