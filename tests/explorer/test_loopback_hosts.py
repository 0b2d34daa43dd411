"""Bound to any loopback address (127.0.0.0/8, ::1), the explorer refuses foreign Host headers (DNS
rebinding) and does not claim to be reachable from other machines."""

from __future__ import annotations

import http.client

import pytest

from seqlab.cli import main
from seqlab.explorer.server import ExplorerServer, is_loopback, start_in_thread


def _status(host: str, port: int, header: str) -> int:
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", "/", headers={"Host": header})
        return conn.getresponse().status
    finally:
        conn.close()


def test_is_loopback_against_the_ipaddress_oracle():
    import ipaddress

    for host in ("127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "0.0.0.0", "10.0.0.1", "192.168.1.5", "::"):
        assert is_loopback(host) == ipaddress.ip_address(host).is_loopback, host
    assert is_loopback("localhost") and is_loopback("::ffff:127.0.0.3") and not is_loopback("example.org")


def test_a_server_on_127_0_0_2_refuses_a_foreign_host_header():
    try:
        server, thread = start_in_thread("127.0.0.2", 0)
    except OSError as exc:  # a system without the whole 127/8 on its loopback interface
        pytest.skip(f"cannot bind 127.0.0.2: {exc}")
    try:
        port = server.server_address[1]
        assert _status("127.0.0.2", port, "evil.example") == 403
        assert _status("127.0.0.2", port, f"evil.example:{port}") == 403
        assert _status("127.0.0.2", port, f"127.0.0.2:{port}") == 200
        assert _status("127.0.0.2", port, f"localhost:{port}") == 200
    finally:
        server.shutdown()
        server.server_close()


def test_no_reachable_warning_on_a_loopback_address(monkeypatch, capsys):
    def stop(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ExplorerServer, "serve_forever", stop)
    for host, warned in (("127.0.0.2", False), ("0.0.0.0", True)):
        main(["explore", "--host", host, "--port", "0", "--no-browser"])
        assert ("reachable from other machines" in capsys.readouterr().err) == warned, host
