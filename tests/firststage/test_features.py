"""Version gating and the stop-word set, without a server."""

from __future__ import annotations

import pytest

from bench.core.errors import BenchError
from bench.core.plan import PLANNED_STOPWORD_COUNT, STAGES
from bench.firststage.definitions import STAGE_DEFS
from bench.firststage.features import (
    ServerRefused,
    StageRefused,
    check_server,
    missing_features,
    parse_version,
    require,
    supports,
)
from bench.firststage.stopwords import canonical_bytes, german_stopwords


def test_versions() -> None:
    assert parse_version("0.24.1") == (0, 24, 1)
    assert parse_version("30.2") == (30, 2)
    assert parse_version("26.0.rc3") == (26, 0, 3)
    assert supports("30.2", "ef") and supports("26.0", "stem") and not supports("0.25.2", "stem")
    assert supports("0.25.2", "alpha") and not supports("0.25.1", "alpha") and supports("0.25.0", "hybrid")
    with pytest.raises(BenchError):
        parse_version("latest")


def test_registry_matches_plan() -> None:
    assert set(STAGE_DEFS) == set(STAGES)
    for sid, d in STAGE_DEFS.items():
        assert d.corpus == STAGES[sid].corpus


@pytest.mark.parametrize(
    ("stage", "first_missing"),
    [("keyword-71k", ("stem", "26.0")), ("keyword-full", ("stem", "26.0")), ("hybrid-71k", ("stem", "26.0"))],
)
def test_refusals_on_0241(stage: str, first_missing: tuple[str, str]) -> None:
    with pytest.raises(StageRefused) as info:
        require(stage, "0.24.1", STAGE_DEFS[stage].features)
    assert (info.value.feature, info.value.first_version) == first_missing
    assert "26.0" in info.value.message


def test_hybrid_names_hybrid_and_alpha() -> None:
    names = {f.name: f.first_version for f in missing_features("0.24.1", STAGE_DEFS["hybrid-71k"].features)}
    assert names == {"stem": "26.0", "stopwords": "26.0", "hybrid": "0.25.0", "alpha": "0.25.2"}


def test_runs_on_0241() -> None:
    require("keyword-plain-71k", "0.24.1", STAGE_DEFS["keyword-plain-71k"].features)
    require("vector-71k", "0.24.1", STAGE_DEFS["vector-71k"].features)
    for stage in STAGE_DEFS.values():
        require(stage.id, "30.2", stage.features)


def test_measurement_only_on_302() -> None:
    check_server("measurement", "30.2")
    check_server("rehearsal", "0.24.1")
    with pytest.raises(ServerRefused, match=r"30\.2"):
        check_server("measurement", "0.24.1")
    with pytest.raises(ServerRefused):
        check_server("measurement", "30.3")


def test_stopwords() -> None:
    sw = german_stopwords()
    assert sw.list_words == 231
    assert sw.size == 271 == PLANNED_STOPWORD_COUNT + 1  # DEVIATIONS.md D-002
    assert list(sw.words) == sorted(set(sw.words))
    assert "alle" in sw.words and "all" in sw.words  # "all": stem of "alle"
    assert sw.sha256 == "f3f5ba029f76f22a639662e43a75705ae4e70e0d59186e297e0b0186b24de575"
    assert canonical_bytes(sw.words).count(b"\n") == 270
    assert sw.record()["size"] == 271
