"""The code record stamped into a JSON file on its text (analysis.reporting.codeinfo._json_stamped) gives
exactly the bytes of the round trip it replaces (parse, add the record, encode again), or steps aside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from analysis.core.atomic import json_bytes
from analysis.reporting.codeinfo import KEY, _json_stamped, read_record, with_record, without_record

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "report"
RECORD = {"analysis_digest": "a" * 64, "commit": None, "dirty": True, "packages_digest": "c" * 64}


def round_trip(data: bytes) -> bytes:
    doc = json.loads(data)
    return json_bytes({**doc, KEY: dict(RECORD)}) if isinstance(doc, dict) else data


ON_TEXT: list[Any] = [
    {"a": 1},
    {"z": 1},
    {"a": {"b": [1, {"c": 2, "d": 'x": y'}], "e": []}, "zz": {}},
    {"analysis_codf": [{"q": 1}], "a": "\u00e9"},
    {"a": [{"b": {}}, {"a": 1}]},
    {"b": "s", 'a"x': [["a", "b"]]},
    {"ab": 1, "analysis": 2, "analysis_code_": 3},
    {'"': 1, "a\\": {'x\\"': 2}},
    {"a": {"x": {5: 1}, "y": {9: 2}}},
    {"a": [{"10": 1}, {"9": 2}]},
    {"winners": {"s": {"100": None, "20": None, "50": None}, "t": {"100": None}}},
]
STEPS_ASIDE: list[Any] = [
    {9: 1, 10: 2},  # written 9, 10; the round trip sorts "10" before "9"
    {"a": {9: 1, 10: 2}},
    {"a": {10: {5: 1}, 9: 2}},
    {"a": {"10": 1, "x": {2: 1, 10: 2}}},
    {2.5: 1, 10: 2},
    {"winners": {"s": {20: None, 50: None, 100: None}, "t": {100: None}}},
    {KEY: 1, "b": 2},  # the record's key already there
    {},
    [1],
]


@pytest.mark.parametrize("obj", ON_TEXT + STEPS_ASIDE)
def test_the_stamp_on_the_text_is_the_round_trip_or_steps_aside(obj: Any) -> None:
    data = json_bytes(obj)
    stamped = _json_stamped(data, RECORD)
    assert (stamped is not None) == any(obj is o for o in ON_TEXT)
    assert with_record("x.json", data, RECORD) == round_trip(data)
    if stamped is not None:
        assert stamped == round_trip(data)


def test_every_golden_json_is_stamped_on_its_text_as_by_the_round_trip() -> None:
    files = sorted(GOLDEN.rglob("*.json"))
    assert len(files) >= 10
    for path in files:
        rel = path.relative_to(GOLDEN).as_posix()
        data = without_record(rel, path.read_bytes())
        assert _json_stamped(data, RECORD) == round_trip(data), rel
        record = read_record(rel, path.read_bytes())
        assert record is not None and with_record(rel, data, record) == path.read_bytes(), rel
