"""README.md is the short front door and docs/ holds the rest.

README stays under 10 KB and holds no dated measurement, every page of docs/ is reachable from it, and every
relative link in README.md and docs/*.md resolves to a file that exists and, with a ``#fragment``, to a
heading of that file (GitHub's anchor rule: lower case, punctuation dropped, spaces to hyphens, ``-1``,
``-2`` ... for repeats)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README_LIMIT_BYTES = 10_000
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`+[^`]*`+")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
ISO_DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, in_fence = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence:
            out.append((n, line))
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text (github-slugger): markdown marks and punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading: its text
    text = text.lower()
    return "".join(c for c in text if c.isalnum() or c in " -_").replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8-sig")):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        k = seen.get(base, 0)
        seen[base] = k + 1
        out.add(base if k == 0 else f"{base}-{k}")
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every markdown link and image outside code."""
    found = []
    for n, line in prose_lines(path.read_text(encoding="utf-8-sig")):
        for m in LINK.finditer(INLINE_CODE.sub("code", line)):
            found.append((n, m.group(1)))
    return found


def broken_links(doc: Path) -> list[str]:
    bad = []
    for n, target in links(doc):
        if SCHEME.match(target):
            continue  # http(s), mailto: not a file of the repository
        file_part, _, fragment = target.partition("#")
        dest = (doc.parent / file_part).resolve() if file_part else doc
        where = f"{doc.name}:{n}: ({target})"
        if not dest.exists():
            bad.append(f"{where}: no file {dest}")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            bad.append(f"{where}: {dest.name} has no heading with anchor #{fragment}")
    return bad


def documents(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def test_slug_follows_github() -> None:
    assert slug("`analysis report` at full study size") == "analysis-report-at-full-study-size"
    assert slug("Speed of the Typesense import and of the rehearsal's first run") == (
        "speed-of-the-typesense-import-and-of-the-rehearsals-first-run"
    )
    assert slug('OpenVINO int8 (plan section "OpenVINO int8 variant")') == (
        "openvino-int8-plan-section-openvino-int8-variant"
    )
    assert slug("OpenVINO int8 on the development EPYC (2026-11-30)") == (
        "openvino-int8-on-the-development-epyc-2026-11-30"
    )
    assert slug("Exit codes, and the code a measurement names") == (
        "exit-codes-and-the-code-a-measurement-names"
    )


def test_checker_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Title\n\n## Part one\n\n## Part one\n\n```sh\n# not a heading\n```\n")
    (tmp_path / "a.md").write_text(
        "[ok](b.md) [ok](b.md#part-one) [ok](b.md#part-one-1) [ok](#here) [web](https://example.org/x.md)\n"
        "## Here\n"
        "[gone](c.md) [no anchor](b.md#not-a-heading) [`code`](b.md#part-two)\n"
        "`[inside code](nowhere.md)`\n"
        "```\n[in a block](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    bad = broken_links(tmp_path / "a.md")
    assert len(bad) == 3, bad
    assert "no file" in bad[0] and "c.md" in bad[0]
    assert "#not-a-heading" in bad[1] and "#part-two" in bad[2]


def test_every_relative_link_resolves(repo_root: Path) -> None:
    docs = documents(repo_root)
    assert len(docs) >= 10, docs  # README and the pages it sends readers to
    assert sum(len(links(d)) for d in docs) >= 50  # a parser that finds no link checks nothing
    bad = [b for d in docs for b in broken_links(d)]
    assert not bad, "\n".join(bad)


def test_readme_is_short_and_undated(repo_root: Path) -> None:
    readme = (repo_root / "README.md").read_bytes()
    assert len(readme) < README_LIMIT_BYTES, f"README.md is {len(readme):,} bytes; move text to docs/"
    dated = [f"line {n}: {ln}" for n, ln in prose_lines(readme.decode("utf-8")) if ISO_DATE.search(ln)]
    assert not dated, "dated measurements belong in docs/performance.md:\n" + "\n".join(dated)


def test_every_page_of_docs_is_linked_from_readme(repo_root: Path) -> None:
    targets = {(repo_root / t.partition("#")[0]).resolve() for _, t in links(repo_root / "README.md")}
    pages = sorted((repo_root / "docs").glob("*.md"))
    assert pages
    missing = [p.name for p in pages if p.resolve() not in targets]
    assert not missing, f"docs pages README.md does not link: {missing}"


@pytest.mark.parametrize(
    "section",
    ["## Status of the study", "## Set-up", "## Who reads what", "## Map of the repository", "## Licences"],
)
def test_readme_has_the_front_door_sections(repo_root: Path, section: str) -> None:
    assert (repo_root / "README.md").read_text(encoding="utf-8").count(f"\n{section}\n") == 1


# A ceiling that only comes down: at most half of the 242 KB the docs held when a reader first measured them.
# Lower it whenever the docs shrink.
DOCS_LIMIT_BYTES = 121_000


def test_docs_markdown_stays_under_its_ceiling(repo_root: Path) -> None:
    sizes = sorted(((p.stat().st_size, p.name) for p in (repo_root / "docs").glob("*.md")), reverse=True)
    total = sum(size for size, _ in sizes)
    largest = ", ".join(f"{name} {size:,}" for size, name in sizes[:5])
    assert DOCS_LIMIT_BYTES <= 121_000  # never above half of the 242 KB the docs once held
    assert total <= DOCS_LIMIT_BYTES, (
        f"docs/*.md hold {total:,} bytes, more than {DOCS_LIMIT_BYTES:,}; condense (one fact, one place); "
        f"the largest: {largest}"
    )
