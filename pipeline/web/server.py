"""The HTTP server of `mempipe serve --http HOST:PORT`: GET / (status page), /healthz, /metrics.

A stdlib ThreadingHTTPServer in a daemon thread beside the scheduler's event loop, not a handler
on that loop: every request does blocking database reads, which on the loop would stall the
jobs (or need a thread each anyway), and a probe must answer while a job keeps the loop busy —
a stuck loop is exactly what /healthz has to report. It reads through a store of its own (a
small pool, with connect and statement timeouts on PostgreSQL), so a scrape never waits for a
connection the jobs hold, and a job never waits for a scrape.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import urlsplit

import sqlalchemy as sa

from ..clock import Clock, system_clock
from ..config import Settings
from ..errors import MempipeError
from ..store import Store
from . import metrics
from .health import health
from .page import render_page

log = logging.getLogger("pipeline.web")
PG_TIMEOUTS = {"connect_timeout": "5", "options": "-c statement_timeout=15000"}  # seconds; ms
# The page has no script and loads nothing: inline styles and inline SVG only.
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "
                                           "form-action 'none'; frame-ancestors 'none'",
                "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def parse_address(text: str) -> tuple[str, int]:
    """HOST:PORT (IPv6 in brackets, [::1]:8089) -> (host, port). ValueError says what is wrong."""
    host, sep, port = (text or "").strip().rpartition(":")
    if not sep or not host:
        raise ValueError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8089, 0.0.0.0:8089 or [::1]:8089)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: put an IPv6 address in brackets, e.g. [::1]:8089")
    if not port.isascii() or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{text!r}: the port must be a number from 0 to 65535 (0: any free port)")
    return host, int(port)


class Role:
    """Whether this process leads now: set by the scheduler (serve's on_leader), read per request."""

    def __init__(self, leading: bool = False):
        self.leading = leading

    def __call__(self, leading: bool) -> None:
        self.leading = leading


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a slow request never holds up the process's exit

    def __init__(self, address: tuple[str, int], app: "WebApp"):
        infos = socket.getaddrinfo(address[0], address[1], type=socket.SOCK_STREAM)  # gaierror: a bad host
        self.address_family = infos[0][0]
        self.app = app
        super().__init__(infos[0][4][:2], _Handler)


class _Handler(BaseHTTPRequestHandler):
    server_version = "mempipe"
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        app = self.server.app
        path = urlsplit(self.path).path
        try:
            if path == "/healthz":
                code, body = health(app.store, app.settings, app.clock(), identity=app.identity,
                                    leading=app.role.leading)
                self._send(code, "application/json", json.dumps(body, default=str, indent=1).encode())
            elif path == "/metrics":
                self._metrics(app)
            elif path in ("/", "/index.html"):
                code, html = render_page(app.store, app.settings, app.clock(), identity=app.identity,
                                         leading=app.role.leading)
                self._send(code, "text/html; charset=utf-8", html.encode(), PAGE_HEADERS)
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found: try /, /healthz or /metrics\n")
        except Exception:  # a bug must not kill the thread silently nor show a traceback to the client
            log.exception("http: GET %s failed", path)
            self._send(500, "text/plain; charset=utf-8", b"internal error (logged)\n")

    def _metrics(self, app: "WebApp") -> None:
        try:
            text = metrics.render(app.registry)
        except MempipeError as exc:  # never zeros for an outage: the scrape fails as a whole
            log.error("http: /metrics: %s", exc)
            self._send(503, "text/plain; charset=utf-8", f"mempipe: cannot read the database: {exc}\n".encode())
            return
        self._send(200, metrics.CONTENT_TYPE, text)

    def _send(self, code: int, content_type: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # probes every few seconds: debug only
        log.debug("http: %s %s", self.address_string(), format % args)


class WebApp:
    """What a request needs: the store it reads, settings, clock, and who this process is."""

    def __init__(self, store: Store, settings: Settings, *, clock: Clock = system_clock, identity: str,
                 role: Role | None = None):
        self.store, self.settings, self.clock, self.identity = store, settings, clock, identity
        self.role = role or Role()
        self.registry = metrics.registry_for(store, settings, clock, lambda: self.role.leading)


class HttpService:
    """Bound when made (an OSError if the address is taken or not ours), serving once started."""

    def __init__(self, address: tuple[str, int], app: WebApp, *, on_close: Callable[[], None] | None = None):
        self.app = app
        self._server = _Server(address, app)
        self._on_close = on_close
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self) -> "HttpService":
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="mempipe-http", daemon=True)
        self._thread.start()
        log.info("http: serving %s (/, /healthz, /metrics)", self.url, extra={"fields": {"url": self.url}})
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()  # waits for serve_forever to return
            self._thread.join()
            self._thread = None
        self._server.server_close()
        if self._on_close is not None:
            self._on_close()
            self._on_close = None
        log.info("http: stopped")

    def __enter__(self) -> "HttpService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def reader_url(database_url: str) -> str:
    """The database URL for the web's own store: on PostgreSQL with connect and statement
    timeouts (unless the URL sets its own), so a probe answers 503 instead of hanging."""
    url = sa.engine.make_url(database_url)
    if url.get_backend_name() != "postgresql":
        return database_url
    extra = {k: v for k, v in PG_TIMEOUTS.items() if k not in url.query}
    return url.update_query_dict(extra).render_as_string(hide_password=False)


def start_http(address: tuple[str, int], settings: Settings, *, clock: Clock = system_clock, identity: str,
               role: Role) -> HttpService:
    """Open the web's store, bind `address` and serve. OSError when the address cannot be bound
    (in use, not an address of this host); the store is closed again then."""
    store = Store.open(reader_url(settings.database_url), check_schema=False, pool_size=2, max_overflow=4)
    try:
        service = HttpService(address, WebApp(store, settings, clock=clock, identity=identity, role=role),
                              on_close=store.close)
    except BaseException:
        store.close()
        raise
    return service.start()
