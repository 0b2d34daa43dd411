"""The explorer's HTTP server: the app's own static files plus a small JSON API.

Standard library only (``http.server``). ``GET /`` serves the page, ``GET
/static/<file>`` serves files shipped in ``seqlab/explorer/static`` and the lesson
renderer of ``seqlab/learn/static`` (looked up in
a fixed table built at start-up, so no request path ever reaches the file
system), ``GET /api/defaults`` returns every widget's worked-example inputs and
``POST /api/<widget>`` runs the lab code for one widget.
"""

from __future__ import annotations

import json
import mimetypes
import socket
import sys
import threading
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

from seqlab.explorer.runs import RunRegistry
from seqlab.explorer.validation import MAX_BODY_BYTES, RequestError, parse_json_object

STATIC_DIR = Path(__file__).resolve().parent / "static"
# the lesson renderer (lesson.js, lesson.css) is seqlab.learn's, shared with the static site of `seqlab learn site`
LESSON_STATIC = Path(__file__).resolve().parents[1] / "learn" / "static"
REQUEST_TIMEOUT_S = 10  # a client that stops sending mid-body is dropped, never waited on forever
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """Whether binding to ``host`` keeps the server on this machine: "localhost" or any loopback
    address (all of 127.0.0.0/8, ::1, ::ffff:127.x.y.z), e.g. is_loopback("127.0.0.2") is True."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip().strip("[]").split("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)
LISTEN_BACKLOG = 128
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml",
                 ".png": "image/png", ".json": "application/json"}


def static_table(root: Path = STATIC_DIR) -> dict[str, tuple[bytes, str]]:
    """URL path -> (file bytes, content type) for every file under ``root``."""
    table: dict[str, tuple[bytes, str]] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            url = "/static/" + path.relative_to(root).as_posix()
            # fixed types for our own files: some systems' MIME tables map .js to text/plain,
            # which browsers refuse to run under nosniff
            kind = CONTENT_TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0]
            kind = kind or "application/octet-stream"
            if kind.startswith("text/") or kind == "image/svg+xml":
                kind += "; charset=utf-8"
            table[url] = (path.read_bytes(), kind)
    if "/static/index.html" in table:
        table["/"] = table["/index.html"] = table["/static/index.html"]
    return table


def json_bytes(payload: Any) -> bytes:
    """``payload`` as UTF-8 JSON. Any string can be sent: a lone surrogate (a byte that was not UTF-8,
    e.g. ``"bad byte \\udcff"`` from a student's file) goes out as the JSON escape ``\\udcff``,
    which every JSON parser reads back, instead of failing the encoding and leaving the request
    without an answer. NaN and infinity are refused (JSON has neither)."""
    # the same rule as seqlab.atomic.atomic_write_text
    return json.dumps(payload, allow_nan=False, ensure_ascii=False).encode("utf-8", "backslashreplace")


class ExplorerHandler(BaseHTTPRequestHandler):
    """One request; the server object carries the static table and allowed Host names."""

    server_version = "seqlab-explorer"
    timeout = REQUEST_TIMEOUT_S
    protocol_version = "HTTP/1.1"

    # --- plumbing ---------------------------------------------------------------------
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - signature from the base class
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str, *, head_only: bool = False,
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.send_header(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
            "connect-src 'self'; frame-ancestors 'none'",
        )
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def _send_json(self, status: int, payload: dict, *, head_only: bool = False,
                   headers: dict[str, str] | None = None) -> None:
        body = json_bytes(payload)
        self._send(status, body, "application/json; charset=utf-8", head_only=head_only, headers=headers)

    def _error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": message})

    def _api_endpoint(self, path: str) -> Callable[[dict[str, Any]], Any] | None:
        """What ``POST path`` runs on the request's JSON object, or None when ``path`` is no endpoint.

        The one lookup in the one table of every area's endpoints (``endpoints.endpoint_table``).
        Both the POST dispatch and the 405 for another method use it, so they cannot disagree.
        """
        if not path.startswith("/api/"):
            return None  # a static file or a typo: no need to import the API modules (and torch)
        from seqlab.explorer.endpoints import endpoint_table

        handler = endpoint_table().get(path[len("/api/"):])
        if handler is None:
            return None
        return lambda data: handler(data, self.server)

    def _allowed_methods(self, path: str) -> str | None:
        """The methods ``path`` answers (the Allow header of a 405), or None if nothing is there."""
        if self._api_endpoint(path) is not None:
            return "POST"
        if path == "/api/defaults" or path in self.server.static_files:
            return "GET, HEAD"
        return None

    def _not_allowed(self, path: str, allowed: str, *, head_only: bool = False) -> None:
        """405 with the Allow header (RFC 9110): the resource exists, the method is wrong."""
        self.close_connection = True  # a body sent with the request is left unread
        self._send_json(HTTPStatus.METHOD_NOT_ALLOWED,
                        {"error": f"{self.command} is not allowed on {path[:100]}; use {allowed}"},
                        head_only=head_only, headers={"Allow": allowed})

    def _host_allowed(self) -> bool:
        """Refuse foreign Host headers (DNS rebinding) when bound to a loopback address."""
        allowed = getattr(self.server, "allowed_hosts", None)
        if not allowed:
            return True
        host = (self.headers.get("Host") or "").strip().lower()
        if host.startswith("["):  # [::1]:8000
            name = host[1 : host.find("]")] if "]" in host else host
        else:
            name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return name in allowed

    # --- methods ------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        self._get(head_only=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._get(head_only=True)

    def _get(self, head_only: bool) -> None:
        if not self._host_allowed():
            return self._error(HTTPStatus.FORBIDDEN, "unexpected Host header")
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if path == "/api/defaults":
            from seqlab.explorer.api import widget_defaults

            return self._send_json(HTTPStatus.OK, widget_defaults(), head_only=head_only)
        entry = self.server.static_files.get(path)
        if entry is None and self._allowed_methods(path) == "POST":
            return self._not_allowed(path, "POST", head_only=head_only)
        if entry is None:
            return self._send_json(HTTPStatus.NOT_FOUND, {"error": f"not found: {path[:100]}"}, head_only=head_only)
        body, kind = entry
        self._send(HTTPStatus.OK, body, kind, head_only=head_only)

    def do_POST(self) -> None:  # noqa: N802
        if not self._host_allowed():
            return self._error(HTTPStatus.FORBIDDEN, "unexpected Host header")
        path = self.path.split("?", 1)[0]
        allowed = self._allowed_methods(path)
        if allowed is not None and "POST" not in allowed:
            return self._not_allowed(path, allowed)
        if not path.startswith("/api/"):
            return self._error(HTTPStatus.NOT_FOUND, f"not found: {path[:100]}")
        name = path[len("/api/") :]
        endpoint = self._api_endpoint(path)
        if endpoint is None:
            return self._error(HTTPStatus.NOT_FOUND, f"unknown API endpoint {name[:60]!r}")
        try:
            result = endpoint(parse_json_object(self._read_body()))
        except RequestError as exc:
            self.close_connection = True  # the body may be partly unread
            return self._send_json(HTTPStatus.BAD_REQUEST, exc.body())
        except TimeoutError:
            self.close_connection = True
            return self._error(HTTPStatus.REQUEST_TIMEOUT, "request body was not received in time")
        except ConnectionError:  # the client hung up mid-body: nobody to answer
            self.close_connection = True
            return
        except Exception as exc:  # never send a traceback to the client; keep it in the server log
            traceback.print_exc(file=sys.stderr)
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error in {name}: {type(exc).__name__}")
        if isinstance(result, dict):
            return self._send_json(HTTPStatus.OK, result)
        self._send_stream(result)

    def _send_stream(self, lines) -> None:
        """Send an iterator of dicts as JSON lines, one HTTP/1.1 chunk each, as they are produced.

        The status line is already sent when the iterator fails, so a failure becomes a last line
        ``{"error": message, "code": ...}`` (the body of the 400 or 500 it would have been), then
        the stream ends properly: the page shows the error instead of a cut-off stream."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/x-ndjson; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.close_connection = True

        def write(line: dict) -> None:
            data = json_bytes(line) + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            try:
                for line in lines:
                    write(line)
            except (BrokenPipeError, ConnectionResetError):
                raise
            except RequestError as exc:
                write(exc.body())
            except ValueError as exc:  # library functions name the value they reject
                write({"error": str(exc)})
            except Exception as exc:  # as for a 500: the traceback stays in the server log
                traceback.print_exc(file=sys.stderr)
                write({"error": f"internal error while streaming: {type(exc).__name__}"})
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page stopped reading (a new request replaced this one)

    def do_PUT(self) -> None:  # noqa: N802
        if not self._host_allowed():
            return self._error(HTTPStatus.FORBIDDEN, "unexpected Host header")
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        allowed = self._allowed_methods(path)
        if allowed is None:
            self.close_connection = True
            return self._error(HTTPStatus.NOT_FOUND, f"not found: {path[:100]}")
        self._not_allowed(path, allowed)

    do_DELETE = do_PATCH = do_OPTIONS = do_PUT

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise RequestError("chunked request bodies are not supported; send Content-Length")
        kind = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            raise RequestError(f"Content-Type must be application/json, got {kind or 'nothing'!r}")
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            raise RequestError("missing Content-Length header")
        try:
            length = int(length_text)
        except ValueError:
            raise RequestError(f"bad Content-Length {length_text[:20]!r}") from None
        if length < 0:
            raise RequestError(f"bad Content-Length {length}")
        if length > MAX_BODY_BYTES:
            raise RequestError(f"request body is {length} bytes; the limit is {MAX_BODY_BYTES}")
        body = self.rfile.read(length)
        if len(body) != length:
            raise RequestError(f"request body ended after {len(body)} of {length} bytes")
        return body


class ExplorerServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # connections the kernel holds while the accept loop is busy: the default 5 dropped some of 20
    # clients arriving together (a page loads its sections in parallel, a class opens it at once)
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address: tuple[str, int], verbose: bool = False, runs: RunRegistry | None = None):
        super().__init__(address, ExplorerHandler)
        self.static_files = {**static_table(LESSON_STATIC), **static_table()}
        self.verbose = verbose
        self.runs = runs if runs is not None else RunRegistry()
        self.workspace: str | None = None  # `seqlab explore --workspace DIR`: the "yours" panels
        host = address[0]
        # Bound to loopback: only loopback names may appear in Host. Bound elsewhere on
        # purpose (--host): the user chose to expose it, so any Host is accepted.
        self.allowed_hosts = set(LOOPBACK_HOSTS) | {host.lower()} if is_loopback(host) else None

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up (closed tab, reload, curl | head) is normal: at most one line
        (with --verbose), never a traceback. Other errors keep the standard traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, (ConnectionError, TimeoutError)):
            if self.verbose:
                print(f"{client_address[0]}: client went away ({type(error).__name__})", file=sys.stderr)
            return
        super().handle_error(request, client_address)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


class ExplorerServerIPv6(ExplorerServer):
    address_family = socket.AF_INET6


def make_server(host: str = "127.0.0.1", port: int = 8000, verbose: bool = False,
                runs: RunRegistry | None = None) -> ExplorerServer:
    """Create (and bind) the server; ``port=0`` picks a free port (see ``server.url``).
    ``runs``: the trained runs the model panels show (none by default)."""
    server_class = ExplorerServerIPv6 if ":" in host else ExplorerServer
    return server_class((host, port), verbose=verbose, runs=runs)


def start_in_thread(host: str = "127.0.0.1", port: int = 0,
                    runs: RunRegistry | None = None) -> tuple[ExplorerServer, threading.Thread]:
    """Serve in a daemon thread (used by tests); stop with ``server.shutdown(); server.server_close()``."""
    server = make_server(host, port, runs=runs)
    thread = threading.Thread(target=server.serve_forever, name="seqlab-explorer", daemon=True)
    thread.start()
    return server, thread
