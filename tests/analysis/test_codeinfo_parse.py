"""The code record's parse survives CPython 3.11's AST depth-counter race (python/cpython#106905): the code
record is parsed on a thread of its own (analysis.core.background), and a parse on another thread at the same
time (pytest's assertion rewriting, its traceback formatting) could make ours raise ``SystemError: AST
constructor recursion depth mismatch``; seen once in the suite on 2026-12-06."""

from __future__ import annotations

import ast
from pathlib import Path

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


TRICKY = {
    # where a statement may start, and how its names may be written
    "analysis/a.py": b"if x: import alpha\nx = 1; import beta.sub as b, gamma\n"
    + b"try:import delta\nexcept E: pass\n",
    "analysis/b.py": b"import os, \\\n    epsilon\nfrom \\\n  zeta import y\n\x0cimport eta . inner\n",
    "analysis/c.py": b"import theta\r\nfrom iota import (a,\r\n  b)\r\n",  # CRLF
    "analysis/d.py": b"import kappa\rimport lam\r",  # lone CR ends a line for Python's tokenizer too
    "analysis/e.py": "\ufeffimport \uff4e\uff55\uff4d\uff50\uff59\n".encode(),  # BOM; fullwidth: numpy (NFKC)
    "analysis/f.py": b"from . import mu\nfrom .nu import xi\nfrom __future__ import annotations\n"
    + b"import analysis.x\n",
    "analysis/g.py": b'"""\nimport omicron\nfrom pi import rho\n"""\nx = "; import sigma"\n',  # not code
    "analysis/h.py": "# -*- coding: latin-1 -*-\nimport tau\ns = '\xe9'\n".encode("latin-1"),
    "analysis/i.py": b"def f():\n    yield from upsilon\n    raise E from phi\n",  # no import
}


def test_imported_modules_parses_only_where_a_new_name_may_stand(monkeypatch: pytest.MonkeyPatch) -> None:
    """The text's names (_named_modules) are a superset of each file's imports, so a file whose names are all
    found already need not be parsed: the result equals the union of every file's parse, on statements
    written in every way the grammar allows, on the analysis code, and on files that need the parser (an
    encoding declared)."""
    every = {p: codeinfo._imports_of.__wrapped__(p, d) for p, d in TRICKY.items()}
    for path, data in TRICKY.items():
        named = codeinfo._named_modules(data)
        assert named is None or every[path] <= named, path
    assert codeinfo._named_modules(TRICKY["analysis/h.py"]) is None  # latin-1: the parser decides
    union = codeinfo._third_party(set().union(*every.values()))
    assert union == {
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "eta",
        "theta",
        "iota",
        "kappa",
    } | {
        "lam",
        "numpy",
        "tau",
    }
    parsed: list[str] = []
    real = codeinfo._imports_of.__wrapped__
    monkeypatch.setattr(codeinfo, "_imports_of", lambda p, d: parsed.append(p) or real(p, d))
    assert codeinfo.imported_modules(TRICKY) == union
    assert "analysis/g.py" in parsed and "analysis/i.py" not in parsed  # omicron may be an import; none here
    parsed.clear()
    files = codeinfo.working_files()
    assert codeinfo.imported_modules(files) == codeinfo._third_party(
        set().union(*(real(p, d) for p, d in files.items()))
    )
    assert len(parsed) < len(files) / 4  # few files were parsed


def test_the_names_of_the_text_hold_every_import_of_the_standard_library() -> None:
    """The superset on real code: about 70 files of the standard library, evenly spread (every 25th here; the
    Python 3.14 run's Debian library, without its test suite, holds fewer files). All 22,207 files of the
    standard library and site-packages here were checked so once, 2026-12-06."""
    root = Path(ast.__file__).parent
    every = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    files = every[:: max(1, len(every) // 70)]
    checked = 0
    for path in files:
        data = path.read_bytes()
        named = codeinfo._named_modules(data)
        try:
            imports = codeinfo._imports_of.__wrapped__(str(path), data)
        except (SyntaxError, ValueError):  # the test suite's deliberately broken files
            continue
        if named is not None:
            assert imports <= named, path
            checked += 1
    assert len(files) >= 60 and checked >= 0.9 * len(files)
