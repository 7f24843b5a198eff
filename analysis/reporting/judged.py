"""The judged sample's numbers from the published labels (plan section "Judged sample of unjudged passages").

Input: ``results/judged/labels.json`` (``bench judged run``: per pair the query id, docid, groups, the MIRACL
label of a control pair and the judge's label 1, 0, "unclear", or null for a parse failure).

* Per group of unjudged passages: the estimated false-negative rate, the share judged relevant among the
  pairs labelled 1 or 0 ("unclear" and parse failures excluded and counted separately), with a Wilson
  interval at the plan's 95 % (Wilson 1927; ``statsmodels.stats.proportion.proportion_confint(method=
  "wilson")`` is the reference in the tests). No labelled pair: the rate is null with the reason.
* Controls: agreement with MIRACL as "n of 15" (a control pair labelled "unclear" or not parsed does not
  agree), and Cohen's kappa beside it over the control pairs labelled 1 or 0 (Cohen 1960; the reference is
  ``statsmodels.stats.inter_rater.cohens_kappa``). Fewer than 12 agreeing: ``WARNING`` goes with the rates.
* ``CAVEAT`` is printed with every result.
* ``human_agreement``: a later human judgment of the same pairs against the LLM's (counts, kappa); the
  LLM judgment stays the published one. Nothing here touches the qrels of the main metric.

Where the plan is silent (what the rate's denominator is, how "unclear" counts for agreement) the readings
are deviation D-030.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

from analysis.core.atomic import write_json_atomic
from analysis.core.floatsum import ltr_sum
from analysis.core.plan import CONFIDENCE, JUDGED_CONTROL_MIN_AGREEMENT, JUDGED_CONTROL_PAIRS

__all__ = [
    "CAVEAT",
    "WARNING",
    "cohens_kappa",
    "human_agreement",
    "markdown",
    "read_human",
    "read_labels",
    "summarise",
    "wilson",
]

WARNING = (
    f"Warning: fewer than {JUDGED_CONTROL_MIN_AGREEMENT} of the {JUDGED_CONTROL_PAIRS} control pairs agree "
    "with the MIRACL judgments; the false-negative rates are published only with this warning."
)
CAVEAT = (
    "Caveat: an LLM judge may favour the same passages as LLM-based rerankers; the control pairs measure "
    "agreement with the human MIRACL annotators, not this bias."
)
LABEL_VALUES = (1, 0, "unclear")


class JudgedInputError(ValueError):
    """A labels or human-judgment file that cannot be read; the message names the file, line and fix."""


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> list[float] | None:
    """Wilson score interval for ``successes`` of ``n``; None for n = 0."""
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def cohens_kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    """Cohen's kappa of two raters over the same items; None when undefined (no items, or chance agreement
    1: both raters used one and the same category throughout)."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return None
    cats = sorted({*a, *b}, key=str)
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pe = ltr_sum((sum(x == c for x in a) / n) * (sum(y == c for y in b) / n) for c in cats)
    if pe == 1.0:
        return None
    return (po - pe) / (1 - pe)


def read_labels(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise JudgedInputError(
            f"{path}: not a readable labels file ({exc}); use bench judged run's labels.json"
        ) from None
    needed = ("pairs", "groups", "judge_model", "prompt_sha256")
    if (
        not isinstance(data, dict)
        or data.get("format") != "judged-labels/1"
        or any(k not in data for k in needed)
    ):
        raise JudgedInputError(f"{path}: not a judged-labels/1 file; use bench judged run's labels.json")
    for i, p in enumerate(data["pairs"], start=1):
        if p.get("label") not in (*LABEL_VALUES, None) or p.get("miracl_label") not in (0, 1, None):
            raise JudgedInputError(
                f"{path}: pair entry {i} has label {p.get('label')!r}; expected 1, 0, 'unclear' or null"
            )
    return data


def _counts(pairs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {
        "pairs": len(pairs),
        "judged_relevant": sum(1 for p in pairs if p["label"] == 1),
        "judged_not_relevant": sum(1 for p in pairs if p["label"] == 0),
        "unclear": sum(1 for p in pairs if p["label"] == "unclear"),
        "parse_failures": sum(1 for p in pairs if p["label"] is None),
    }


def summarise(labels: Mapping[str, Any]) -> dict[str, Any]:
    """Rates per group, control agreement and kappa, the warning flag and the caveat (see the docstring)."""
    pairs = labels["pairs"]
    groups: dict[str, Any] = {}
    for name, info in sorted(labels["groups"].items()):
        if info["kind"] != "unjudged":
            continue
        c = _counts([p for p in pairs if name in p["groups"]])
        n = c["judged_relevant"] + c["judged_not_relevant"]
        groups[name] = {
            **c,
            "short": info["short"],
            "labelled": n,
            "false_negative_rate": c["judged_relevant"] / n if n else None,
            "wilson_95": wilson(c["judged_relevant"], n),
            "reason": None if n else "no pair of this group was labelled 1 or 0",
        }
    controls = [p for p in pairs if p["miracl_label"] is not None]
    labelled = [p for p in controls if p["label"] in (0, 1)]
    agree = sum(1 for p in controls if p["label"] == p["miracl_label"])
    kappa = cohens_kappa([p["miracl_label"] for p in labelled], [p["label"] for p in labelled])
    warn = agree < JUDGED_CONTROL_MIN_AGREEMENT
    return {
        "judge_model": labels["judge_model"],
        "prompt_sha256": labels["prompt_sha256"],
        "groups": groups,
        "controls": {
            **_counts(controls),
            "agree": agree,
            "labelled": len(labelled),
            "cohens_kappa": kappa,
            "kappa_over": "control pairs labelled 1 or 0",
            "agreement_rule": f"fewer than {JUDGED_CONTROL_MIN_AGREEMENT} of {JUDGED_CONTROL_PAIRS} "
            "agreeing (unclear and parse failures do not agree) -> warning",
        },
        "warning": WARNING if warn else None,
        "caveat": CAVEAT,
        "confidence": CONFIDENCE,
        "interval": "Wilson score interval",
    }


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.1f} %"


def markdown(summary: Mapping[str, Any], human: Mapping[str, Any] | None = None) -> list[str]:
    c = summary["controls"]
    kappa = "undefined" if c["cohens_kappa"] is None else f"{c['cohens_kappa']:.2f}"
    lines = [
        "## Judged sample of unjudged passages",
        "",
        f"Judge: `{summary['judge_model']}` (prompt SHA-256 `{summary['prompt_sha256'][:12]}…`). "
        f"Control pairs: {c['agree']} of {c['pairs']} agree with MIRACL (Cohen's kappa {kappa} over "
        f"{c['labelled']} labelled 1 or 0; {c['unclear']} unclear, {c['parse_failures']} not parsed).",
        "",
    ]
    if summary["warning"]:
        lines += [f"**{summary['warning']}**", ""]
    lines += [
        "| group | pairs | judged relevant | judged not relevant | unclear | not parsed "
        "| est. false-negative rate | Wilson 95 % |",
        "|---|" + "---:|" * 7,
    ]
    for name, g in summary["groups"].items():
        ci = "" if g["wilson_95"] is None else f"[{_pct(g['wilson_95'][0])}, {_pct(g['wilson_95'][1])}]"
        rate = _pct(g["false_negative_rate"]) or f"null ({g['reason']})"
        lines.append(
            f"| {name}{' (short)' if g['short'] else ''} | {g['pairs']} | {g['judged_relevant']} | "
            f"{g['judged_not_relevant']} | {g['unclear']} | {g['parse_failures']} | {rate} | {ci} |"
        )
    lines += [
        "",
        summary["caveat"],
        "The judged sample is context for the main metric; it never changes the judgments behind it.",
        "",
    ]
    if human is not None:
        k = "undefined" if human["cohens_kappa"] is None else f"{human['cohens_kappa']:.2f}"
        lines += [
            f"Later human judgment ({human['file']}): {human['both_labelled']} pairs labelled 1 or 0 by "
            f"both, {human['agree']} agree (Cohen's kappa {k}); {human['missing']} pairs without a human "
            "label. The LLM judgment stays the published one.",
            "",
        ]
    return lines


def read_human(path: Path) -> dict[tuple[str, str], int | str]:
    """``qid<TAB>docid<TAB>label`` per line (label 1, 0 or unclear; ``#`` comments and blank lines skipped;
    a UTF-8 byte-order mark and CRLF are accepted)."""
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise JudgedInputError(f"{path}: cannot read ({exc}); expected UTF-8 text") from None
    out: dict[tuple[str, str], int | str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 3 or cols[2].strip() not in ("1", "0", "unclear"):
            raise JudgedInputError(
                f"{path}, line {number}: expected 'qid<TAB>docid<TAB>label' with label 1, 0 or "
                f"unclear, found {line!r}"
            )
        key = (cols[0].strip(), cols[1].strip())
        if key in out:
            raise JudgedInputError(f"{path}, line {number}: {key} is judged twice; keep one line per pair")
        value = cols[2].strip()
        out[key] = value if value == "unclear" else int(value)
    return out


def human_agreement(
    labels: Mapping[str, Any], human: Mapping[tuple[str, str], int | str], file: str
) -> dict[str, Any]:
    """Agreement of a human judgment with the published LLM labels over the same pairs."""
    pairs = {(p["qid"], p["docid"]): p["label"] for p in labels["pairs"]}
    unknown = sorted(set(human) - set(pairs))
    if unknown:
        raise JudgedInputError(f"{file}: pair {unknown[0]} is not in the judged sample; judge only its pairs")
    both = [(pairs[k], h) for k, h in human.items() if pairs[k] in (0, 1) and h in (0, 1)]
    table = {
        f"llm {a} / human {b}": sum(
            1 for x, y in zip(pairs.values(), [human.get(k) for k in pairs], strict=True) if x == a and y == b
        )
        for a in (1, 0, "unclear", None)
        for b in (1, 0, "unclear")
    }
    return {
        "file": file,
        "pairs": len(pairs),
        "human_labelled": len(human),
        "missing": len(set(pairs) - set(human)),
        "both_labelled": len(both),
        "agree": sum(1 for a, b in both if a == b),
        "cohens_kappa": cohens_kappa([a for a, _ in both], [b for _, b in both]),
        "table": table,
        "published": "the LLM judgment",
    }


def report_section(out_dir: Path, build_dir: Path | None = None) -> list[str]:
    """``analysis report`` hook: when ``<out>/judged/labels.json`` is published, write ``judged.json`` (into
    ``build_dir``, the report's temporary folder swapped into ``<out>`` whole, else ``out_dir``) and return
    the Markdown section; otherwise nothing."""
    path = Path(out_dir) / "judged" / "labels.json"
    if not path.is_file():
        return []
    summary = summarise(read_labels(path))
    write_json_atomic(Path(build_dir or out_dir) / "judged.json", summary)
    return markdown(summary)
