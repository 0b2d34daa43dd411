"""The TinyStories downloader against a local HTTP server on 127.0.0.1 (no internet)."""

from __future__ import annotations

import http.server
import os
import re
import socket
import threading

import pytest

from seqlab.lm.download import (
    TINYSTORIES_FILES,
    DownloadError,
    download_file,
    download_tinystories,
    link_local_files,
)

PAYLOAD = bytes(range(256)) * 300 + "Once upon a time \u00e9\n".encode() * 50


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD at any path, honouring Range unless the server says not to."""

    def do_GET(self):  # noqa: N802 (http.server naming)
        self.server.requests.append(dict(self.headers))
        if self.path.endswith("/missing.txt"):
            self.send_error(404)
            return
        body, status = PAYLOAD, 200
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if match and self.server.honour_range:
            start = int(match.group(1))
            if start >= len(PAYLOAD):
                self.send_error(416)
                return
            body, status = PAYLOAD[start:], 206
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            self.send_header("Content-Range", f"bytes {len(PAYLOAD) - len(body)}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.requests = []
    httpd.honour_range = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _url(server, name="file.txt"):
    return f"http://127.0.0.1:{server.server_address[1]}/data/{name}"


def test_download_writes_the_exact_bytes(server, tmp_path):
    dest = download_file(_url(server), tmp_path / "out.txt", progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert not (tmp_path / "out.txt.part").exists()


def test_download_resumes_with_a_range_request(server, tmp_path):
    dest = tmp_path / "out.txt"
    (tmp_path / "out.txt.part").write_bytes(PAYLOAD[:12345])
    download_file(_url(server), dest, progress=False)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests[-1].get("Range") == "bytes=12345-"


def test_download_restarts_when_the_server_ignores_range(server, tmp_path):
    server.honour_range = False
    dest = tmp_path / "out.txt"
    (tmp_path / "out.txt.part").write_bytes(b"stale bytes that must not stay")
    download_file(_url(server), dest, progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_download_with_complete_part_file(server, tmp_path):
    (tmp_path / "out.txt.part").write_bytes(PAYLOAD)
    download_file(_url(server), tmp_path / "out.txt", progress=False)
    assert (tmp_path / "out.txt").read_bytes() == PAYLOAD


def test_download_tinystories_names_and_http_error(server, tmp_path):
    base = f"http://127.0.0.1:{server.server_address[1]}/ds"
    paths = download_tinystories(tmp_path, base_url=base, progress=False)
    assert {p.name for p in paths.values()} == set(TINYSTORIES_FILES.values())
    assert all(p.read_bytes() == PAYLOAD for p in paths.values())
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_file(_url(server, "missing.txt"), tmp_path / "m.txt", progress=False)


def test_offline_message_points_to_input(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DownloadError, match="--input"):
        download_file(f"http://127.0.0.1:{port}/x.txt", tmp_path / "x.txt", progress=False, timeout=5)
    assert not (tmp_path / "x.txt").exists()


def test_cli_downloads_from_base_url(server, tmp_path, capsys):
    from seqlab.cli import main

    base = f"http://127.0.0.1:{server.server_address[1]}/ds"
    assert main(["data", "tinystories", "--out", str(tmp_path), "--base-url", base, "--no-progress"]) == 0
    assert (tmp_path / TINYSTORIES_FILES["valid"]).read_bytes() == PAYLOAD
    assert "seqlab prepare" in capsys.readouterr().out


def test_local_input_files(tmp_path):
    train, valid = tmp_path / "a.txt", tmp_path / "b.txt"
    train.write_text("train text")
    valid.write_text("valid text")
    paths = link_local_files([str(train), str(valid)], tmp_path / "out")
    assert paths["train"].read_text() == "train text"
    assert paths["valid"].name == TINYSTORIES_FILES["valid"]
    with pytest.raises(FileNotFoundError, match="missing"):
        link_local_files([str(train), str(tmp_path / "missing")], tmp_path / "out2")
    assert os.path.samefile(link_local_files([str(tmp_path / "out")], tmp_path / "out")["train"],
                            paths["train"])
