"""One figure, one place: a measured figure that README.md or the runbook gives beside a link to
docs/performance.md must be the figure of the table it links to (the same number and unit in the linked
section). "Beside" is the parenthesis that holds the link when it holds a figure, else the clause (between
semicolons or sentence ends) that ends with the link. A figure copied from an older measurement fails here."""

from __future__ import annotations

import re

from tests.conftest import REPO_ROOT

PAGES = ("README.md", "docs/runbook.md")
UNITS = r"min|h|s|ms|µs|GB|GiB|MB|MiB|docs/s|documents/s|x|%"
FIGURE = re.compile(rf"(?<![\w.,-])(\d[\d,]*(?:\.\d+)?)\s?({UNITS})(?!\w)")
LINK = re.compile(r"\[[^\]]*\]\((?P<target>[^)#\s]*performance\.md)(?:#(?P<anchor>[\w-]+))?\)")
MARK = "\x00"


def slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def sections(markdown: str) -> dict[str, str]:
    """anchor -> the text of that section (up to the next heading of the same or a higher level)."""
    heads = [
        (m.start(), len(m.group(1)), slug(m.group(2))) for m in re.finditer(r"^(#+) (.+)$", markdown, re.M)
    ]
    out = {}
    for i, (start, level, anchor) in enumerate(heads):
        end = next((s for s, lv, _ in heads[i + 1 :] if lv <= level), len(markdown))
        out[anchor] = markdown[start:end]
    return out


def _group(text: str, pos: int) -> tuple[int, int] | None:
    """The innermost parenthesis around ``pos``: (start, end) of its inside, or None at depth 0."""
    depth = 0
    for i in range(pos - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            if depth == 0:
                break
            depth -= 1
    else:
        return None
    depth = 0
    for j in range(i + 1, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            if depth == 0:
                return i + 1, j
            depth -= 1
    return i + 1, len(text)


def beside(text: str, pos: int) -> str:
    """The text whose figures the link at ``pos`` vouches for."""
    group = _group(text, pos)
    if group is not None and FIGURE.search(text[group[0] : group[1]].replace(MARK, "")):
        return text[group[0] : pos]
    at = group[0] - 1 if group is not None else pos
    start = max(text.rfind(";", 0, at), text.rfind(". ", 0, at)) + 1
    return text[start:pos]


def claims(page: str) -> list[tuple[str, str, str]]:
    """(anchor, figure, context) for every figure beside a link to performance.md."""
    out = []
    for paragraph in re.split(r"\n\s*\n", (REPO_ROOT / page).read_text(encoding="utf-8")):
        flat = " ".join(paragraph.split())
        anchors = [m.group("anchor") or "" for m in LINK.finditer(flat)]
        marked = LINK.sub(MARK, flat)
        positions = [i for i, c in enumerate(marked) if c == MARK]
        for anchor, pos in zip(anchors, positions, strict=True):
            context = beside(marked, pos)
            out += [(anchor, f"{n} {u}", context) for n, u in FIGURE.findall(context.replace(MARK, " "))]
    return out


def _has(text: str, figure: str) -> bool:
    number, unit = figure.split(" ")
    flat = re.sub(r"\s+", " ", text.replace("**", ""))
    return re.search(rf"(?<![\d.,]){re.escape(number)}\s?{re.escape(unit)}(?!\w)", flat) is not None


def test_figures_beside_a_link_agree_with_the_linked_table() -> None:
    perf = (REPO_ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    parts = sections(perf)
    found = [(page, *c) for page in PAGES for c in claims(page)]
    assert len(found) >= 4, f"too few figures beside a link ({found}): the parser checks nothing"
    wrong = [
        f"{page}: {figure} is not in performance.md#{anchor}: ...{context[-160:]}"
        for page, anchor, figure, context in found
        if not _has(parts[anchor] if anchor else perf, figure)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_check_catches_a_stale_figure() -> None:
    table = sections("# P\n\n## The rehearsal\n\n| first run | 6.7 min |\n")["the-rehearsal"]
    text = "Budget 12 min; a first run takes 10.0 min ([t](docs/performance.md#the-rehearsal))."
    marked = LINK.sub(MARK, text)
    context = beside(marked, marked.index(MARK))
    assert FIGURE.findall(context) == [("10.0", "min")]
    assert not _has(table, "10.0 min") and _has(table, "6.7 min")
