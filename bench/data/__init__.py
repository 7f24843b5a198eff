"""Data loaders (plan section "Data"): passages, queries and the MIRACL id order.

Every loader returns ``Passage`` objects and ``dict[qid, query]``; nothing here knows about Typesense or
rerankers. The pinned hub layouts live in ``bench.data.hub``; the bundled rehearsal sample in
``bench.data.bundled``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from bench.errors import BenchError
from bench.plan import passage_text

_MIRACL_ID = re.compile(r"^(\d+)#(\d+)$")

#: Recorded with every result: the order in which documents are imported into Typesense.
IMPORT_ORDER = (
    "ascending MIRACL passage id, compared numerically as (article, passage) for ids '<article>#<passage>' "
    "(e.g. 9#2 < 10#0 < 10#1 < 10#10)"
)


@dataclass(frozen=True, slots=True)
class Passage:
    """One corpus passage. ``passage_text`` is the plan's ``title + "\\n" + text``."""

    docid: str
    title: str
    text: str

    @property
    def passage_text(self) -> str:
        return passage_text(self.title, self.text)


def docid_key(docid: str) -> tuple[int, int]:
    """Sort key of a MIRACL passage id ``<article>#<passage>``: numeric (article, passage)."""
    m = _MIRACL_ID.match(docid)
    if m is None:
        raise BenchError(
            f"passage id {docid!r} is not a MIRACL id of the form '<article>#<passage>' (digits#digits); "
            "the import order is defined only for such ids"
        )
    return int(m.group(1)), int(m.group(2))


def sort_passages(passages: list[Passage]) -> list[Passage]:
    """Passages in import order (``IMPORT_ORDER``); raises on duplicate ids."""
    out = sorted(passages, key=lambda p: docid_key(p.docid))
    for a, b in itertools.pairwise(out):
        if a.docid == b.docid:
            raise BenchError(f"passage id {a.docid!r} occurs twice in the corpus")
    return out
