"""``bench data lock``: compute entries from files actually present and add them to datasets.lock.

An entry that is already in the lock with the same content is left as it is; one whose file now hashes
differently is refused (nothing is written): a changed input is a deviation, not a re-lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.hints import bench_command
from bench.data.order import check_order
from bench.integrity import datalock, hub
from bench.integrity.bundled import bundled_entries

BUNDLED = "bundled"
CORPUS_FULL = "corpus-full"


def known_names() -> list[str]:
    return [BUNDLED, *hub.HUB_DATASETS]


def entries_for(root: Path, name: str) -> dict[str, datalock.Entry]:
    if name == BUNDLED:
        return bundled_entries(root)
    return hub.hub_entries(hub.dataset(name))


def available_names() -> list[str]:
    """Datasets whose files are here: the bundled files always, hub snapshots once fetched."""
    return [BUNDLED, *(n for n, d in hub.HUB_DATASETS.items() if hub.local_files(d))]


def lock(
    root: Path, names: Iterable[str] | None = None, *, lock_path: Path | None = None
) -> dict[str, list[str]]:
    """Add entries for ``names``; returns {"added": [...], "unchanged": [...], "notes": [...]}.

    For corpus-full the passage ids are checked for the import order and the result is recorded in the
    lock's notes (``bench.data.order``). Raises BenchError (writing nothing) for an unknown name, a dataset
    not fetched, or an entry id that is already locked with different size, hash or rows."""
    lock_path = lock_path or root / datalock.LOCK_NAME
    chosen = list(names) if names is not None else available_names()
    unknown = [n for n in chosen if n not in known_names()]
    if unknown:
        raise BenchError(
            f"unknown dataset name(s) {', '.join(map(repr, unknown))}; known: {', '.join(known_names())}."
        )
    existing = datalock.read_lock(lock_path) if lock_path.exists() else {}
    computed: dict[str, datalock.Entry] = {}
    for name in chosen:
        computed.update(entries_for(root, name))
    changed = sorted(k for k, e in computed.items() if k in existing and existing[k] != e)
    if changed:
        details = "\n  ".join(
            f"{k}: lock sha256 {existing[k].sha256} size {existing[k].size}, file now sha256 "
            f"{computed[k].sha256} size {computed[k].size}"
            for k in changed
        )
        raise BenchError(
            f"{lock_path}: refusing to overwrite {len(changed)} existing entry/entries "
            f"whose file changed (nothing written):\n  {details}\n"
            "Restore the original file; a genuinely new input needs a deviation entry and a new entry id."
        )
    new = {k: e for k, e in computed.items() if k not in existing}
    if new:
        datalock.add_entries(lock_path, new)
    notes = []
    if CORPUS_FULL in chosen:
        note = order_note(root, lock_path, {k: e for k, e in computed.items() if e.dataset == CORPUS_FULL})
        if note is not None:
            datalock.set_note(lock_path, CORPUS_FULL, note)
            notes.append(f"{CORPUS_FULL}: {note['import_order']['note']}")
    return {"added": sorted(new), "unchanged": sorted(k for k in computed if k in existing), "notes": notes}


def order_note(root: Path, lock_path: Path, shards: dict[str, datalock.Entry]) -> dict[str, Any] | None:
    """The import-order check of the full corpus (``bench.data.order``), or None when the lock already holds
    one for exactly these shards (the check reads every passage: minutes for 15.9 million)."""
    if not shards:
        return None
    hashes = {e.source.path: e.sha256 for e in shards.values()}
    old = datalock.read_notes(lock_path).get(CORPUS_FULL)
    if isinstance(old, dict) and old.get("shards_sha256") == hashes:
        return None
    paths = [e.file(root) for e in sorted(shards.values(), key=_shard_number)]
    report = check_order(paths)
    total = sum(e.rows for e in shards.values())
    if report.passages != total:
        raise BenchError(
            f"import-order check read {report.passages:,} passages, the locked rows say {total:,}: "
            f"a shard changed while locking; run `{bench_command('data', 'lock', 'corpus-full')}` again"
        )
    return {
        "import_order": report.record(),
        "shards_sha256": hashes,
        "checked_by": "bench.data.order.check_order",
    }


def _shard_number(e: datalock.Entry) -> int:
    name = e.source.path.rsplit("/", 1)[-1]
    return int(name.removeprefix("docs-").split(".", 1)[0])
