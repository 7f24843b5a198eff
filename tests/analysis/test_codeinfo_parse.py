"""The code record's parse survives CPython 3.11's AST depth-counter race (python/cpython#106905): the code
record is parsed on a thread of its own (analysis.core.background), and a parse on another thread at the same
time (pytest's assertion rewriting, its traceback formatting) could make ours raise ``SystemError: AST
constructor recursion depth mismatch``; seen once in the suite on 2026-12-06."""

from __future__ import annotations

import ast

import pytest

from analysis.reporting import codeinfo

SOURCE = b"import numpy as np\nfrom pyarrow import csv\n\ndef f():\n    import scipy.stats\n"
RACE = "AST constructor recursion depth mismatch (before=102, after=37)"


def _flaky(failures: list[str]):
    calls: list[int] = []
    real = ast.parse

    def parse(data, filename="<unknown>"):
        calls.append(1)
        if len(calls) <= len(failures):
            raise SystemError(failures[len(calls) - 1])
        return real(data, filename=filename)

    return parse, calls


def test_a_mismatch_is_parsed_again_and_gives_the_same_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    parse, calls = _flaky([RACE, RACE])
    monkeypatch.setattr(codeinfo.ast, "parse", parse)
    codeinfo._imports_of.cache_clear()
    assert codeinfo._imports_of("analysis/x.py", SOURCE) == frozenset({"numpy", "pyarrow", "scipy"})
    assert len(calls) == 3


def test_a_third_mismatch_or_another_system_error_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    parse, calls = _flaky([RACE, RACE, RACE])
    monkeypatch.setattr(codeinfo.ast, "parse", parse)
    with pytest.raises(SystemError, match="recursion depth mismatch"):
        codeinfo._parse(SOURCE, "analysis/x.py")
    assert len(calls) == 3
    parse, calls = _flaky(["some other interpreter error"])
    monkeypatch.setattr(codeinfo.ast, "parse", parse)
    with pytest.raises(SystemError, match="some other"):
        codeinfo._parse(SOURCE, "analysis/x.py")
    assert len(calls) == 1
