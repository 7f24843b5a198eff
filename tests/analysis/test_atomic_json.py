"""analysis.core.atomic's one JSON format: indent 1, keys sorted, ASCII, trailing newline; NaN and infinity
refused with the file and the key named, and nothing written; the old file kept when the write fails."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from analysis.core.atomic import NonFiniteJSONError, json_bytes, write_json_atomic


def test_format_matches_json_dumps_reference() -> None:
    obj = {"b": [1, 2.5, None], "a": {"ü": "Straße", "z": True}}
    expected = json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=True, allow_nan=False) + "\n"
    assert json_bytes(obj) == expected.encode("ascii")
    assert json_bytes(obj).startswith(b'{\n "a": {\n  "z": true,\n  "\\u00fc": "Stra\\u00dfe"')
    assert json.loads(json_bytes(obj)) == obj  # full precision, content unchanged


def test_default_converts_unknown_objects() -> None:
    assert json.loads(json_bytes({"p": Path("/x/y")}, default=str)) == {"p": "/x/y"}
    with pytest.raises(TypeError):
        json_bytes({"p": Path("/x/y")})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_is_refused_naming_file_and_key(tmp_path: Path, bad: float) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old\n")
    with pytest.raises(NonFiniteJSONError) as info:
        write_json_atomic(target, {"stages": {"bm25": {"scores": [0.5, bad]}}})
    message = str(info.value)
    assert str(target) in message and "$.stages.bm25.scores[1]" in message and "null" in message
    assert target.read_bytes() == b"old\n"  # nothing written, the old file kept
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left


def test_write_creates_folder_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "new" / "out.json"
    write_json_atomic(target, {"n": 1})
    write_json_atomic(target, {"n": 2})
    assert target.read_bytes() == b'{\n "n": 2\n}\n'
    assert oct(target.stat().st_mode & 0o777) == "0o644"
