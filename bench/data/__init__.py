"""Data loaders (plan section "Data"): passages, queries and the MIRACL id order.

Every loader returns ``Passage`` objects and ``dict[qid, query]``; nothing here knows about Typesense or
rerankers. The pinned hub layouts live in ``bench.data.hub``; the bundled rehearsal sample in
``bench.data.bundled``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from bench.core.errors import BenchError
from bench.core.plan import passage_text

_MIRACL_ID = re.compile(r"^(\d+)#(\d+)$")

#: Recorded with every result: the order in which documents are imported into Typesense.
IMPORT_ORDER = (
    "ascending MIRACL passage id, compared numerically as (article, passage) for ids '<article>#<passage>' "
    "(e.g. 9#2 < 10#0 < 10#1 < 10#10); other corpora (bench rehearse --dataset): MIRACL-form ids first, then "
    "all-digit ids by number, then any other id by its Unicode code points"
)

DocidKey = tuple[int, int, int, str]


@dataclass(frozen=True, slots=True)
class Passage:
    """One corpus passage. ``passage_text`` is the plan's ``title + "\\n" + text``."""

    docid: str
    title: str
    text: str

    @property
    def passage_text(self) -> str:
        return passage_text(self.title, self.text)


def docid_key(docid: str) -> DocidKey:
    """Sort key of a passage id (``IMPORT_ORDER``): MIRACL ids ``<article>#<passage>`` numerically.

    The study's corpora hold MIRACL ids only; the other two classes exist so that ``bench rehearse
    --dataset`` can import a BEIR corpus (numeric or free-form ids) in a defined, recorded order.
    """
    if not docid:
        raise BenchError("empty passage id; every passage needs a non-empty id")
    m = _MIRACL_ID.match(docid)
    if m is not None:
        return 0, int(m.group(1)), int(m.group(2)), ""
    if docid.isascii() and docid.isdigit():
        return 1, int(docid), 0, ""
    return 2, 0, 0, docid


def format_docid_key(key: DocidKey) -> str:
    """The passage id a ``docid_key`` came from."""
    kind, a, b, s = key
    return f"{a}#{b}" if kind == 0 else (str(a) if kind == 1 else s)


def sort_passages(passages: list[Passage]) -> list[Passage]:
    """Passages in import order (``IMPORT_ORDER``); raises on duplicate ids."""
    out = sorted(passages, key=lambda p: docid_key(p.docid))
    for a, b in itertools.pairwise(out):
        if a.docid == b.docid:
            raise BenchError(f"passage id {a.docid!r} occurs twice in the corpus")
    return out
