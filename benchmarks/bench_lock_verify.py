"""Hash throughput of `bench data verify` (bench.integrity.hashing.sha256_file) against `openssl dgst -sha256`
on the same temporary file (default 1 GiB), printed side by side. Target: within 10 % of openssl.

    uv run python benchmarks/bench_lock_verify.py [--size-mb 1024] [--repeat 3]

Each tool hashes the file ``repeat`` times after one warm-up read (so both read from the page cache); the best
run counts. Both digests must agree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.integrity.hashing import sha256_file


def make_file(path: Path, size_mb: int) -> None:
    chunk = os.urandom(1 << 20)
    with open(path, "wb") as fh:
        for i in range(size_mb):
            fh.write(chunk[i % 251 :] + chunk[: i % 251])  # distinct blocks, cheap to make


def best_of(repeat: int, fn: object) -> tuple[float, str]:
    assert callable(fn)
    best = float("inf")
    digest = ""
    for _ in range(repeat):
        start = time.perf_counter()
        digest = fn()
        best = min(best, time.perf_counter() - start)
    return best, digest


def measure(size_mb: int, repeat: int, where: str | None = None) -> tuple[int, list[tuple[str, float, str]]]:
    """File size in bytes and rows (tool, best seconds, sha256): ours, then openssl's if it is installed.
    Also used by ``guard.py``."""
    openssl = shutil.which("openssl")
    with tempfile.TemporaryDirectory(dir=where) as tmp:
        path = Path(tmp) / "blob.bin"
        make_file(path, size_mb)
        size = path.stat().st_size
        sha256_file(path)  # warm the page cache
        ours_s, ours = best_of(repeat, lambda: sha256_file(path))
        rows = [("bench sha256_file", ours_s, ours)]
        if openssl:

            def run_openssl() -> str:
                out = subprocess.run(
                    [openssl, "dgst", "-sha256", "-r", str(path)], capture_output=True, text=True, check=True
                ).stdout
                return out.split()[0]

            ossl_s, ossl = best_of(repeat, run_openssl)
            rows.append(("openssl dgst -sha256", ossl_s, ossl))
    return size, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where to put the temporary file (default: $TMPDIR)")
    args = parser.parse_args()
    size, rows = measure(args.size_mb, args.repeat, args.dir)
    print(f"file: {size / 2**20:.0f} MiB, best of {args.repeat}, page cache warm")
    print(f"{'tool':24} {'seconds':>8} {'MB/s':>8}  sha256")
    for name, seconds, digest in rows:
        print(f"{name:24} {seconds:8.3f} {size / 1e6 / seconds:8.1f}  {digest}")
    if len(rows) == 2:
        ratio = rows[1][1] / rows[0][1]
        print(f"ours / openssl throughput: {ratio:.3f} ({'within' if ratio >= 0.9 else 'NOT within'} 10 %)")
        if rows[0][2] != rows[1][2]:
            print("DIGESTS DIFFER", file=sys.stderr)
            return 1
    else:
        print("openssl not found: no comparison", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
