"""``bench data lock``: compute entries from files actually present and add them to datasets.lock.

An entry that is already in the lock with the same content is left as it is; one whose file now hashes
differently is refused (nothing is written): a changed input is a deviation, not a re-lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from bench.errors import BenchError
from bench.integrity import datalock, hub
from bench.integrity.bundled import bundled_entries

BUNDLED = "bundled"


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
    """Add entries for ``names``; returns {"added": [...], "unchanged": [...]}.

    Raises BenchError (writing nothing) for an unknown name, a dataset not fetched, or an entry id that is
    already locked with different size, hash or rows."""
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
    return {"added": sorted(new), "unchanged": sorted(k for k in computed if k in existing)}
