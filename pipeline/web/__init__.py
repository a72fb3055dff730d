"""`mempipe serve --http HOST:PORT`: the operators' status page (/), /healthz and /metrics.

- server.py: the ThreadingHTTPServer beside the scheduler, routes, start/stop, HOST:PORT parsing
- health.py: the health rule (200 / 503) and its JSON
- metrics.py: the Prometheus collector that reads the database at scrape time
- page.py + templates/: the HTML page (Jinja2, autoescaped); charts.py: its SVG geometry
- data.py: shaping of what pipeline/store/ops.py reads (days, age buckets, reason classes, quota)
"""

from .server import HttpService, Role, WebApp, parse_address, start_http

__all__ = ["HttpService", "Role", "WebApp", "parse_address", "start_http"]
