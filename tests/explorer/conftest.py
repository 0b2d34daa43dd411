"""A live explorer server on a free port, shared by the explorer tests."""

from __future__ import annotations

import http.client
import json

import pytest

from seqlab.explorer.server import start_in_thread


class Client:
    """Tiny HTTP client for the explorer API (one connection per request)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def post(self, name: str, payload=None, raw: bytes | None = None, headers: dict | None = None):
        """POST JSON to /api/<name>; returns (status, decoded JSON body)."""
        body = raw if raw is not None else json.dumps({} if payload is None else payload).encode()
        status, _, data = self.request("POST", f"/api/{name}", body,
                                       {"Content-Type": "application/json", **(headers or {})})
        return status, json.loads(data)

    def ok(self, name: str, payload=None) -> dict:
        status, data = self.post(name, payload)
        assert status == 200, data
        return data


@pytest.fixture(scope="session")
def explorer_server():
    server, thread = start_in_thread("127.0.0.1", 0)
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture(scope="session")
def client(explorer_server) -> Client:
    host, port = explorer_server.server_address[:2]
    return Client(host, port)
