"""The packet the judge sees and its sealed key (plan section "Judged sample of unjudged passages").

A prepared folder holds three files, written into a folder beside the target and renamed in whole:

* ``packet.json``: per pair only the pair number, the query text and the passage text (no ids, model
  names, ranks, stages or existing judgments), in pair-number order;
* ``key.json`` (sealed): per pair number the query id, docid, groups and, for a control pair, the MIRACL
  label; the seed and the draw procedure;
* ``prepare.json``: the SHA-256 of both, the selection counts, the inputs' SHA-256 and the provenance.

``load_prepared`` refuses a packet or key whose SHA-256 differs from ``prepare.json`` or whose pair numbers
do not match each other. A folder that already holds a different preparation is never replaced (its
journal belongs to it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analysis.core.atomic import json_bytes, write_bytes_atomic
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.plan import SEED
from bench.integrity.hashing import sha256_file
from bench.judged.selection import DRAW_PROCEDURE, Selection

PACKET = "packet.json"
KEY = "key.json"
PREPARE = "prepare.json"
PACKET_FORMAT = "judged-packet/1"
KEY_FORMAT = "judged-key/1"


def _dump(obj: Any) -> bytes:
    return json_bytes(obj)


def packet_payload(
    selection: Selection, queries: Mapping[str, str], texts: Mapping[str, str]
) -> dict[str, Any]:
    missing_q = sorted({p.qid for p in selection.pairs} - set(queries))
    missing_d = sorted({p.docid for p in selection.pairs} - set(texts))
    if missing_q or missing_d:
        what = f"query id {missing_q[0]!r}" if missing_q else f"passage id {missing_d[0]!r}"
        raise BenchError(
            f"judged packet: no text for {what}; the runs and the corpus/topics do not belong together"
        )
    return {
        "format": PACKET_FORMAT,
        "pairs": [
            {"pair": p.pair, "query": queries[p.qid], "passage": texts[p.docid]} for p in selection.pairs
        ],
    }


def key_payload(selection: Selection) -> dict[str, Any]:
    return {
        "format": KEY_FORMAT,
        "seed": SEED,
        "draw_procedure": DRAW_PROCEDURE,
        "groups": selection.record(),
        "pairs": [
            {"pair": p.pair, "qid": p.qid, "docid": p.docid, "groups": list(p.groups), "control": p.control}
            for p in selection.pairs
        ],
    }


def write_prepared(
    out_dir: Path,
    selection: Selection,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    record: Mapping[str, Any],
) -> dict[str, Any]:
    """Write packet, key and prepare.json to ``out_dir`` (whole folder swapped in); returns prepare.json.

    An existing folder with the same packet and key is left as it is; a different one is refused.
    """
    packet, key = _dump(packet_payload(selection, queries, texts)), _dump(key_payload(selection))

    prepare = {
        **record,
        "packet_sha256": hashlib.sha256(packet).hexdigest(),
        "key_sha256": hashlib.sha256(key).hexdigest(),
        "pairs": len(selection.pairs),
        "groups": selection.record(),
        "notes": selection.notes(),
        "seed": SEED,
    }
    if (out_dir / PREPARE).exists():
        old = _read_json(out_dir / PREPARE)
        if (old.get("packet_sha256"), old.get("key_sha256")) == (
            prepare["packet_sha256"],
            prepare["key_sha256"],
        ):
            load_prepared(out_dir)  # the files on disk must still be those
            return old
        raise BenchError(
            f"{out_dir / PREPARE}: this folder holds another judged packet (SHA-256 "
            f"{old.get('packet_sha256')}); its journal belongs to it. Choose another --out folder."
        )
    if out_dir.exists() and any(out_dir.iterdir()):
        raise BenchError(
            f"{out_dir}: exists and is not a prepared judged folder; choose another --out folder"
        )
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    try:
        write_bytes_atomic(tmp / PACKET, packet)
        write_bytes_atomic(tmp / KEY, key)
        write_bytes_atomic(tmp / PREPARE, _dump(prepare))
        os.chmod(tmp, 0o755)
        if out_dir.exists():
            out_dir.rmdir()  # empty (checked above)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return prepare


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise BenchError(f"{path} not found: run `{hint('judged prepare')}` first") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BenchError(
            f"{path}: not valid JSON ({exc}); prepare the packet again into a new folder"
        ) from None
    if not isinstance(data, dict):
        raise BenchError(f"{path}: expected a JSON object")
    return data


@dataclass(frozen=True)
class Prepared:
    directory: Path
    prepare: dict[str, Any]
    packet: list[dict[str, Any]]  # pair, query, passage
    key: dict[int, dict[str, Any]]  # pair -> qid, docid, groups, control
    key_record: dict[str, Any]


def load_prepared(directory: Path) -> Prepared:
    """Read a prepared folder and check that packet and key are the ones prepare.json recorded."""
    prepare = _read_json(directory / PREPARE)
    for name, field in ((PACKET, "packet_sha256"), (KEY, "key_sha256")):
        path = directory / name
        if not path.is_file():
            raise BenchError(f"{path} not found; the prepared folder is incomplete, prepare it again")
        digest = sha256_file(path)
        if digest != prepare.get(field):
            raise BenchError(
                f"{path}: SHA-256 {digest} does not match {field} {prepare.get(field)} in "
                f"{directory / PREPARE}; packet and key do not belong together (edited or mixed up). "
                "Prepare them again."
            )
    packet, key = _read_json(directory / PACKET), _read_json(directory / KEY)
    if packet.get("format") != PACKET_FORMAT or key.get("format") != KEY_FORMAT:
        raise BenchError(f"{directory}: unknown packet/key format; expected {PACKET_FORMAT} and {KEY_FORMAT}")
    items = packet["pairs"]
    numbers = [p["pair"] for p in items]
    key_pairs = {int(p["pair"]): p for p in key["pairs"]}
    if numbers != list(range(1, len(numbers) + 1)) or set(numbers) != set(key_pairs):
        raise BenchError(
            f"{directory}: the packet's pair numbers and the key's do not match; prepare them again"
        )
    return Prepared(directory, prepare, items, key_pairs, key)
