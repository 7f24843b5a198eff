"""The German stop-word set (plan section "First stages"; DEVIATIONS.md D-002).

Rule: the Snowball German stop list (data/bundled/snowball-german-stop/stop.txt, BSD) plus the Snowball
German stem of every entry (PyPI ``snowballstemmer``), because Typesense stems the query before it removes
stop words. Canonical serialisation for the SHA-256: the distinct strings sorted by Python's default
string order (code points), UTF-8, joined by ``"\\n"``, no trailing newline.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import snowballstemmer

from bench.core.errors import BenchError
from bench.core.paths import bundled_dir
from bench.integrity.enforce import require_locked

CANONICAL_FORM = "distinct strings, sorted by code point, UTF-8, joined by '\\n', no trailing newline"


@dataclass(frozen=True)
class StopwordSet:
    words: tuple[str, ...]  # sorted, distinct
    list_words: int  # entries of the Snowball list
    source: str
    sha256: str
    snowballstemmer_version: str

    @property
    def size(self) -> int:
        return len(self.words)

    def record(self) -> dict[str, object]:
        return {
            "size": self.size,
            "sha256": self.sha256,
            "list_words": self.list_words,
            "source": self.source,
            "rule": "Snowball German stop list plus the Snowball German stem of every entry",
            "canonical_form": CANONICAL_FORM,
            "snowballstemmer": self.snowballstemmer_version,
            "server_form_size": len(server_form(self.words)),
            "server_form": "tokens Typesense 26.0+ keeps with locale de: Unicode case folding, not stemmed",
        }


def default_path() -> Path:
    return bundled_dir() / "snowball-german-stop" / "stop.txt"


def read_snowball_list(path: Path) -> list[str]:
    """Words of a Snowball stop file: the first token of each line, ``|`` starts a comment."""
    if not path.is_file():
        raise BenchError(f"{path}: Snowball stop list missing (see data/bundled/SOURCES.md)")
    require_locked(path)
    words: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        body = line.split("|", 1)[0].strip()
        if body:
            words.append(body.split()[0])
    if not words:
        raise BenchError(f"{path}: no stop words found")
    return words


def canonical_bytes(words: tuple[str, ...]) -> bytes:
    return "\n".join(words).encode("utf-8")


def german_stopwords(path: Path | None = None) -> StopwordSet:
    src = path if path is not None else default_path()
    base = read_snowball_list(src)
    stemmer = snowballstemmer.stemmer("german")
    words = tuple(sorted(set(base) | {stemmer.stemWord(w) for w in base}))

    try:
        rel = str(src.resolve().relative_to(bundled_dir().parent.parent))
    except ValueError:
        rel = str(src)
    return StopwordSet(
        words=words,
        list_words=len(base),
        source=rel,
        sha256=hashlib.sha256(canonical_bytes(words)).hexdigest(),
        snowballstemmer_version=version("snowballstemmer"),
    )


def server_form(words: tuple[str, ...]) -> set[str]:
    """The tokens Typesense (26.0 and later) keeps for ``words`` in a set with ``locale: "de"``: each word is
    tokenised with the set's locale and not stemmed, and that tokeniser applies Unicode full case folding
    (docs/typesense-source.md), so ``daß`` is kept as ``dass``. For the plan's words (letters only, checked in
    the tests) that is ``str.casefold``, the same Unicode folding."""
    return {w.casefold() for w in words}


def install_stopwords(server: Any, set_id: str, sw: StopwordSet) -> None:
    """PUT the set (Typesense >= 26.0), then read it back with GET and check the server keeps exactly the
    plan's words in the server's form (``server_form``). The PUT answer is not evidence: the server echoes the
    request body there; only GET returns the tokens it applies (docs/typesense-source.md)."""
    server.request("PUT", f"/stopwords/{set_id}", json={"stopwords": list(sw.words), "locale": "de"})
    got = server.request("GET", f"/stopwords/{set_id}")
    body = got.get("stopwords") if isinstance(got, dict) else None
    # 26.0-30.x nest the set in "stopwords"
    stored = body.get("stopwords") if isinstance(body, dict) else body
    if not isinstance(stored, list):
        raise BenchError(
            f"Typesense GET /stopwords/{set_id} returned no word list ({str(got)[:200]}); cannot check that "
            "the plan's stop-word set is applied"
        )
    kept, wanted = set(stored), server_form(sw.words)
    if kept != wanted:
        missing = sorted(wanted - kept)[:10]
        added = sorted(kept - wanted)[:10]
        raise BenchError(
            f"Typesense stored stop-word set {set_id} differently ({len(kept)} tokens, {len(wanted)} "
            f"expected, missing {missing}, added {added}); the plan's set would not be applied as recorded"
        )


_WORD = re.compile(r"\w+")


def rehearsal_strip_stopwords(query: str, sw: StopwordSet, *, mode: str) -> str:
    """Rehearsal only: ``query`` with every word of the plan's stop set removed, for a server
    without stop-word sets (before 26.0; DEVIATIONS.md D-040).

    A word is a run of Unicode word characters, compared lower-cased (Typesense lower-cases tokens with
    ``locale: "de"`` too); everything else of the query (punctuation, quotes) stays, runs of whitespace
    become one space. A query made only of stop words (and punctuation) becomes empty (the stage then finds
    nothing for it, and it scores 0). A measurement never calls this: the pinned server applies the set
    itself, so ``mode="measurement"`` raises.
    """
    if mode != "rehearsal":
        raise BenchError(
            "rehearsal_strip_stopwords is the rehearsal's substitute for Typesense stop-word sets; a "
            f"measurement ({mode!r}) applies the plan's set on Typesense 30.2 and never strips on the client"
        )
    words = set(sw.words)
    kept = _WORD.sub(lambda m: "" if m.group(0).lower() in words else m.group(0), query)
    if _WORD.search(kept) is None:  # only punctuation left: no word to search for
        return ""
    return " ".join(kept.split())
