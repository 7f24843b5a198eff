"""One defined float order: no interpreter-dependent float sum in bench/ or analysis/.

Python 3.12 made ``sum()`` of floats compensated; ``statistics`` averages and ``math.fsum`` round otherwise
again. A float sum on the path to a written number must be numpy's or ``analysis.core.floatsum.ltr_sum`` /
``ltr_mean`` (left to right, as 3.11's ``sum()``). This rule refuses, naming file:line and the fix:

- a bare ``sum(...)`` unless it is plainly a sum of integers: ``sum(1 for ...)``, ``sum(len(x) for ...)``,
  ``sum(int(x) for ...)``, ``sum(a == b for ...)`` (booleans), or listed in ``INTEGER_SUMS`` below (the call's
  source text per file; each entry says what it counts, and a stale entry fails too);
- ``math.fsum`` and anything of ``statistics`` except ``NormalDist`` (an inverse CDF, no sum: its value for
  the plan's 97.5 % point is the same on 3.11 and 3.14, measured in the 3.14 chroot of ``.ci/run``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import sources

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench", "analysis")
FIX = (
    "use analysis.core.floatsum.ltr_sum / ltr_mean (or numpy) for floats; "
    "see docs/report.md, 'One defined float order'"
)
STATISTICS_ALLOWED = frozenset({"NormalDist"})

# file -> source text (ast.unparse) of bare sum() calls over integers that the forms above do not recognise
INTEGER_SUMS: dict[str, frozenset[str]] = {
    # placement of figure labels: booleans (box overlaps), never written as a number
    "analysis/figures/costs.py": frozenset(
        {"sum((_boxes_overlap(box, t) for t in taken))", "sum((_boxes_overlap(box, m) for m in markers))"}
    ),
    # billed tokens (int) and per-query call times in ns (int)
    "analysis/latency/summary.py": frozenset({"sum(billed)", "sum((p[q] for p in parts))"}),
    # token counts of the candidate passages (int)
    "bench/costs/tokens.py": frozenset({"sum(counts)"}),
    "bench/equality/pointwise.py": frozenset({"sum((c.get('billed_tokens', 0) for c in calls))"}),
    # progress: texts to embed (int counts)
    "bench/firststage/embed.py": frozenset({"sum((wanted[t] for t in part))"}),
    # shard sizes in bytes and row counts (int)
    "bench/firststage/preflight.py": frozenset(
        {
            "sum((e.rows for e in entries.values() if e.dataset == 'corpus-full'))",
            "sum((e.size for e in shards))",
            "sum((e.rows for e in shards))",
        }
    ),
    "bench/integrity/cli.py": frozenset({"sum((e.size for e in verified.values()))"}),
    "bench/integrity/coverage.py": frozenset({"sum((e.size for e in chosen.values()))"}),
    "bench/integrity/hub.py": frozenset({"sum(rows)"}),
    "bench/integrity/lockops.py": frozenset({"sum((e.rows for e in shards.values()))"}),
    # queries passed (bool)
    "bench/int8/agreement.py": frozenset({"sum((r.passed for r in rows))"}),
    # billed tokens (int, 0 where the API gave none)
    "bench/judged/judge.py": frozenset(
        {
            "sum((a['input_tokens'] or 0 for a in answered))",
            "sum((a['output_tokens'] or 0 for a in answered))",
        }
    ),
    "bench/judged/run.py": frozenset(
        {
            "sum((r['billed_input_tokens'] for r in records))",
            "sum((r['billed_output_tokens'] for r in records))",
        }
    ),
    # scoring calls to skip (int)
    "bench/quality/phase.py": frozenset(
        {"sum((len(spec.qids(candidates, s)) * len(depths) for s in spec.stages))"}
    ),
    # truncated pairs (bool) and input tokens (int) of one call
    "bench/rerankers/base.py": frozenset({"sum(cut)", "sum(lengths)"}),
    "bench/rerankers/jina.py": frozenset({"sum(lengths)"}),
    "bench/rerankers/protocol.py": frozenset(
        {"sum((r['n'] for r in recs))", "sum((r['ties'] for r in recs))"}
    ),
    "bench/rerankers/standin.py": frozenset({"sum((min(n, self.max_seq) for n in lengths))"}),
}


def _integer_form(call: ast.Call) -> bool:
    arg = call.args[0] if call.args else None
    if not isinstance(arg, ast.GeneratorExp | ast.ListComp | ast.SetComp):
        return False
    elt = arg.elt
    if isinstance(elt, ast.Constant):
        return type(elt.value) is int
    if isinstance(elt, ast.Call) and isinstance(elt.func, ast.Name):
        return elt.func.id in ("len", "int")
    return isinstance(elt, ast.Compare)


def _statistics_names(node: ast.AST) -> list[str]:
    """Names used from ``statistics`` (module imports count as everything)."""
    if isinstance(node, ast.Import):
        return ["statistics.*" for a in node.names if a.name == "statistics"]
    if isinstance(node, ast.ImportFrom) and node.module == "statistics" and not node.level:
        return [a.name for a in node.names]
    return []


def violations(source: str, path: str) -> list[tuple[str, str]]:
    """(``path:line: what``, the call's source text) for every refused construct in one file."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(sources.parse(source, path)):
        where = f"{path}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sum":
            if not _integer_form(node):
                text = ast.unparse(node)
                found.append((f"{where}: bare {text} may add floats in the interpreter's order", text))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and ((node.value.id == "math" and node.attr == "fsum") or node.value.id == "statistics")
        ):
            found.append((f"{where}: {node.value.id}.{node.attr}", ast.unparse(node)))
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "math"
            and any(a.name == "fsum" for a in node.names)
        ):
            found.append((f"{where}: from math import fsum", "fsum"))
        for name in _statistics_names(node):
            if name not in STATISTICS_ALLOWED:
                found.append((f"{where}: statistics.{name.removeprefix('statistics.')}", name))
    return found


def _tree() -> dict[str, str]:
    return {
        p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
        for pkg in PACKAGES
        for p in sorted((ROOT / pkg).rglob("*.py"))
    }


def test_no_interpreter_dependent_float_sum() -> None:
    bad = [
        f"{msg}; {FIX}"
        for path, src in _tree().items()
        for msg, text in violations(src, path)
        if text not in INTEGER_SUMS.get(path, frozenset())
    ]
    assert bad == []


def test_every_integer_sum_entry_still_exists() -> None:
    tree = _tree()
    present = {
        path: {text for _, text in violations(tree[path], path)} for path in INTEGER_SUMS if path in tree
    }
    stale = [
        f"{path}: {text}"
        for path, texts in INTEGER_SUMS.items()
        for text in texts
        if text not in present.get(path, set())
    ]
    assert stale == []


# The float sums of main before this rule (verbatim lines): each must be refused.
OLD_SITES = {
    "analysis/inputs/qrels.py": "idcg[i] = sum((top * dcg_discount(np.arange(top.size))).tolist(), 0.0)",
    "analysis/reporting/pytrec_check.py": "x = dict(ours=sum(ours.values()) / n if n else 0.0)",
    "analysis/costs/formulas.py": "total = None if missing else sum(v for _, v, _ in parts if v is not None)",
    "analysis/int8/rehearsal.py": "s = f'{sum(rhos) / len(rhos):.4f}'",
    "analysis/reporting/judged.py": (
        "pe = sum((sum(x == c for x in a) / n) * (sum(y == c for y in b) / n) for c in c)"
    ),
    "bench/firststage/preflight.py": "b = sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / sxx",
    "bench/int8/agreement.py": "m = sum(vals) / len(vals) if vals else None",
    "bench/latency/host.py": "return float(sum(getattr(times, name, 0.0) for name in BUSY_FIELDS))",
}


@pytest.mark.parametrize("path", sorted(OLD_SITES))
def test_the_old_float_sums_are_refused(path: str) -> None:
    assert [
        msg
        for msg, text in violations(OLD_SITES[path], path)
        if text not in INTEGER_SUMS.get(path, frozenset())
    ] != []


@pytest.mark.parametrize(
    "source",
    [
        "import math\nx = math.fsum(v)",
        "from math import fsum",
        "import statistics\nm = statistics.mean(v)",
        "from statistics import fmean",
        "from statistics import median",
    ],
)
def test_fsum_and_statistics_are_refused(source: str) -> None:
    assert violations(source, "analysis/x.py") != []


@pytest.mark.parametrize(
    "source",
    [
        "n = sum(1 for p in pairs if p)",
        "n = sum(len(v) for v in todo.values())",
        "n = sum(x == y for x in a)",
        "from statistics import NormalDist",
        "x = ltr_sum(v)",
        "x = float(np.mean(v))",
    ],
)
def test_integer_sums_and_numpy_pass(source: str) -> None:
    assert violations(source, "analysis/x.py") == []
