"""Server features a stage needs, with the first Typesense version that honours each (docs/field-notes.md).

Typesense 0.24.1 accepts several of the plan's settings and silently ignores them (field ``stem``,
``stopwords``, vector_query ``ef`` and ``alpha``, ``hnsw_params``). So a stage never relies on the server
to reject what it lacks, nor on this table: before it runs, the server is asked the behavioural probes of
every feature the stage needs (``bench.firststage.probes``), which refuse it by name
(``StageRefused``) or choose a rehearsal's substitute; this table is their cross-check (a disagreement is
reported and recorded). A measurement additionally refuses any server other than the plan's pinned
version (``ServerRefused``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal

from bench.core.errors import BenchError
from bench.core.plan import TYPESENSE_IMAGE, TYPESENSE_VERSION

Mode = Literal["measurement", "rehearsal"]


@dataclass(frozen=True)
class Feature:
    name: str
    first_version: str
    what: str


FEATURES: Final = MappingProxyType(
    {
        f.name: f
        for f in (
            Feature("text_search", "0.1", "keyword search with query_by, per_page, drop/typo thresholds"),
            Feature("locale", "0.24.0", "field locale (German tokenisation)"),
            Feature("seq_id_sort", "0.24.0", "sort_by _seq_id (insertion-order tie break)"),
            Feature("vector_query", "0.24.0", "float[] field with num_dim and vector_query k"),
            Feature("hybrid", "0.25.0", "keyword and vector query in one request (rank fusion)"),
            Feature("alpha", "0.25.2", "vector_query alpha (rank-fusion weight)"),
            Feature("stem", "26.0", "field stem: true"),
            Feature("stopwords", "26.0", "stop-word sets (/stopwords API, search parameter stopwords)"),
            Feature("ef", "26.0", "vector_query ef (HNSW search breadth)"),
            Feature("hnsw_params", "26.0", "schema hnsw_params"),
            # 28.0 to at least the v30 branch of 2025-09-26 read a lone "-" of a non-English locale as the
            # exclusion operator (docs/typesense-source.md); the table cannot say "not from 28.0 to 29.x":
            # the probes decide, and their disagreement with this line is recorded
            Feature(
                "hyphen_query", "0.24.0", "a hyphen inside a query word on a locale field (no exclusion)"
            ),
            Feature("hyphen_query_hybrid", "0.25.0", "a hyphen inside the keyword query of a hybrid search"),
        )
    }
)


def parse_version(version: str) -> tuple[int, ...]:
    """``"0.24.1"`` -> (0, 24, 1); ``"30.2"`` -> (30, 2); suffixes like ``.rc1`` are ignored."""
    nums = re.findall(r"\d+", version.split("-")[0])
    parts = [int(n) for n in nums[:3]]
    if not parts:
        raise BenchError(f"cannot read a Typesense version from {version!r}")
    return tuple(parts)


def supports(server_version: str, feature: str) -> bool:
    first = parse_version(FEATURES[feature].first_version)
    have = parse_version(server_version)
    width = max(len(first), len(have))
    return have + (0,) * (width - len(have)) >= first + (0,) * (width - len(first))


class StageRefused(BenchError):
    """A stage needs a feature the server lacks. ``feature`` and ``first_version`` name the first one."""

    def __init__(self, stage: str, server_version: str, missing: list[Feature], reason: str = "") -> None:
        names = ", ".join(f"{f.name} (from {f.first_version}: {f.what})" for f in missing)
        why = f" {reason}" if reason else ""
        super().__init__(
            f"stage {stage} refused: Typesense {server_version} lacks {names}.{why} The stage needs it; "
            f"run it against Typesense {TYPESENSE_VERSION} ({TYPESENSE_IMAGE})."
        )
        self.stage = stage
        self.server_version = server_version
        self.missing = missing
        self.feature = missing[0].name
        self.first_version = missing[0].first_version


class ServerRefused(BenchError):
    """A measurement against a server other than the plan's pinned version."""


def missing_features(server_version: str, needed: Iterable[str]) -> list[Feature]:
    return [FEATURES[n] for n in needed if not supports(server_version, n)]


def require(stage: str, server_version: str, needed: Iterable[str]) -> None:
    """Raise ``StageRefused`` naming every needed feature the server lacks."""
    missing = missing_features(server_version, needed)
    if missing:
        raise StageRefused(stage, server_version, missing)


def check_server(mode: Mode, server_version: str) -> None:
    """A measurement runs only against the pinned version; a rehearsal against any version."""
    if mode == "measurement" and parse_version(server_version) != parse_version(TYPESENSE_VERSION):
        raise ServerRefused(
            f"measurement refused: the server reports Typesense {server_version}, the plan fixes "
            f"{TYPESENSE_VERSION} ({TYPESENSE_IMAGE}). Start the pinned image (docker compose) and point "
            "BENCH_TYPESENSE_URL at it; use `bench rehearse` for other servers."
        )
    if mode not in ("measurement", "rehearsal"):
        raise BenchError(f"unknown mode {mode!r}")
