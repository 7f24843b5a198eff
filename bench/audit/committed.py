"""Audit rows about committed data: 4 datasets.lock, 5 results recomputed from ``runs/``, 6 manifests,
7 ids and numbers only (and no stray file).

The checks walk whatever is committed under ``runs/`` and ``results/`` (``git ls-files``), so result
kinds added later (latency samples, costs, the judged sample) are covered without a change here. Row 5
recomputes what ``analysis report`` produces (the quality JSON, ``report.md``, figures) in the spirit of
pyserini's two-click reproductions; other result kinds are covered by rows 6 and 7.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import analysis.reporting.report as report_mod
from analysis.inputs.columns import run_line_problem
from analysis.reporting.codeinfo import without_record
from analysis.reporting.report import REPORT_ENTRIES, write_report
from bench.audit.rows import Row, Verdict
from bench.core.errors import BenchError
from bench.core.hints import analysis_command, hint
from bench.core.paths import RUN_FOLDERS
from bench.data.bundled import load_sample
from bench.integrity import git
from bench.integrity.datalock import LOCK_NAME, check_entry, read_lock
from bench.records.codeversion import code_digest

RUNS, RESULTS = "runs", "results"
STUDY_JSON = "quality/study.json"
# Allowed kinds of committed files; anything else under runs/ or results/ is a stray file.
RUN_SUFFIXES = frozenset({".trec"})
RESULT_SUFFIXES = frozenset({".json", ".jsonl", ".md", ".png", ".csv", ".tsv"})
ALWAYS_ALLOWED = frozenset({"README.md", "LICENSE"})
# Keys that would carry passage, query or prompt text: never in a committed result.
TEXT_KEYS = frozenset(
    {
        "text",
        "title",
        "passage",
        "passage_text",
        "query_text",
        "document",
        "documents",
        "prompt",
        "completion",
        "response_text",
        "content",
    }
)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def tracked(root: Path, folder: str) -> list[str]:
    """Files under ``folder`` that git tracks (repository-relative, sorted); the working tree outside git
    (a checkout without history) falls back to every file there."""
    if git.is_repo(root):
        out = git.run_git(root, "ls-files", "-z", "--", folder).decode("utf-8", errors="replace")
        return sorted(p for p in out.split("\0") if p)
    base = root / folder
    if not base.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in base.rglob("*") if p.is_file())


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def study_files(files: list[str]) -> list[str]:
    """The files that are study output (not README.md / LICENSE)."""
    return [f for f in files if Path(f).name not in ALWAYS_ALLOWED]


# ---- row 4 -------------------------------------------------------------------------------------------


def datasets_row(root: Path) -> Row:
    check = "datasets.lock: present files match"

    try:
        entries = read_lock(root / LOCK_NAME)
    except BenchError as exc:
        return Row(4, check, "FAIL", exc.message.splitlines()[0])
    problems, not_fetched, ok = [], [], 0
    for key in sorted(entries):
        entry = entries[key]
        if entry.base == "hub" and not entry.file(root).exists():
            not_fetched.append(f"{key}: not fetched (`{hint('data fetch')}`)")
            continue
        problem = check_entry(key, entry, root)
        if problem is None:
            ok += 1
        else:
            problems.append(str(problem))
    if problems:
        return Row(
            4,
            check,
            "FAIL",
            f"{len(problems)} of {len(entries)} files do not match: {problems[0]}",
            tuple(problems),
        )
    if not entries:
        return Row(4, check, "FAIL", f"{LOCK_NAME} lists no file")
    if not any(e.base == "hub" for e in entries.values()):
        return Row(
            4,
            check,
            "OK",
            f"{ok} files match; the hub snapshots are not yet in {LOCK_NAME} at all "
            "(runbook step 2, `data fetch` then `data lock`, adds them)",
        )
    return Row(
        4,
        check,
        "OK",
        f"{ok} files match; {len(not_fetched)} hub files not fetched (not checked)",
        tuple(not_fetched),
    )


# ---- row 5 -------------------------------------------------------------------------------------------


def find_qrels(root: Path, name: str, sha256: str) -> Path | None:
    """The qrels file that ``results/quality/study.json`` names, found by SHA-256 among the datasets.lock
    files and the committed files under ``runs/``."""
    candidates: list[Path] = []
    try:
        candidates += [e.file(root) for e in read_lock(root / LOCK_NAME).values() if e.sha256 == sha256]
    except BenchError:
        pass
    candidates += [root / f for f in tracked(root, RUNS) if Path(f).name == name]
    for path in candidates:
        if path.is_file() and _sha(path) == sha256:
            return path
    return None


def _referenced_runs(root: Path, result_files: list[str]) -> Iterator[tuple[str, str, str]]:
    """(result file, run path, recorded sha256) for every run a committed quality result names."""
    for rel in result_files:
        in_quality = rel.startswith(f"{RESULTS}/quality/") and rel.endswith(".json")
        if not in_quality or rel.endswith("/study.json"):
            continue
        try:
            doc = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # row 7 names unreadable JSON
        runs = [doc.get("first_stage"), *doc.get("runs", [])] if isinstance(doc, dict) else []
        for run in runs:
            if isinstance(run, dict) and isinstance(run.get("run"), str):
                yield rel, f"{RUNS}/{run['run']}", str(run.get("sha256"))


def results_row(root: Path, qrels: Path | None = None) -> Row:
    check = "results recomputed from runs/ (analysis report)"
    runs = study_files(tracked(root, RUNS))
    results = study_files(tracked(root, RESULTS))
    quality = [f for f in results if f.startswith(f"{RESULTS}/quality/")]
    if not runs and not quality:
        others = f"; {len(results)} other result files are checked by rows 6 and 7" if results else ""
        return Row(5, check, "NOT YET", f"no study run committed yet (no runs/, no results/quality/){others}")
    links = non_regular_files(root)
    if links:  # a linked run or result is not what the repository commits: row 7 names each
        first = next(iter(links.values()))
        return Row(
            5,
            check,
            "FAIL",
            f"{len(links)} committed file(s) are not regular files; first: {first}",
            tuple(links.values()),
        )
    if not (root / RESULTS / STUDY_JSON).is_file():
        report = analysis_command("report", "--runs", "runs", "--qrels", "QRELS", "--out", "results")
        return Row(
            5, check, "FAIL", f"{RESULTS}/{STUDY_JSON} is not committed: run `{report}` and commit its output"
        )
    problems = []
    for result, run, sha in _referenced_runs(root, results):
        path = root / run
        if not path.is_file():
            problems.append(
                f"{result} names {run}, which is not committed: restore it from the study or "
                "rerun analysis report"
            )
        elif _sha(path) != sha:
            problems.append(
                f"{run}: SHA-256 {_sha(path)[:12]}... differs from {sha[:12]}... recorded in "
                f"{result} (the run file was changed)"
            )
    if qrels is None:
        try:
            inputs = json.loads((root / RESULTS / STUDY_JSON).read_text(encoding="utf-8"))["inputs"]["qrels"]
            name, sha = str(inputs["file"]), str(inputs["sha256"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return Row(5, check, "FAIL", f"{RESULTS}/{STUDY_JSON}: cannot read inputs.qrels ({exc})")
        qrels = find_qrels(root, name, sha)
        if qrels is None:
            verdict: Verdict = "FAIL" if problems else "NOT YET"
            return Row(
                5,
                check,
                verdict,
                f"the qrels {name} (sha256 {sha[:12]}...) are not here: run "
                f"`{hint('data fetch')}`, or pass --qrels FILE",
                tuple(problems),
            )
    details, failed = recompute(root, qrels, results)
    details = problems + details
    failed += len(problems)
    compared = sum(1 for d in details if d.startswith(("OK", "FAIL results")))
    skipped = sum(1 for d in details if d.startswith("NOT RECOMPUTED"))
    if failed:
        first = next(d for d in details if not d.startswith(("OK", "NOT RECOMPUTED")))
        return Row(5, check, "FAIL", f"{failed} problem(s); first: {first}", tuple(details))
    note = f"; {skipped} not recomputed (inputs the audit cannot know, see details)" if skipped else ""
    return Row(5, check, "OK", f"{compared} committed files recomputed byte for byte{note}", tuple(details))


def recompute(root: Path, qrels: Path, results: list[str]) -> tuple[list[str], int]:
    """Rerun ``analysis report`` on ``runs/`` and compare what it owns under ``results/`` byte for byte.

    The committed ``results/`` is copied into the temporary output first, because some report sections read
    their inputs from ``--out`` (the judged labels, the pitfall runs) and the latency section from
    ``results/latency``. The costs section needs the prices file and options of its run, which the audit
    cannot know: when ``costs.json`` is committed, it, ``report.md`` (which holds the costs section) and the
    cost figures are listed as not recomputed (rows 6 and 7 still check them)."""
    owned = {*REPORT_ENTRIES, *(e for sec in report_mod.SECTIONS for e in sec.entries)}
    with_costs = (root / RESULTS / "costs.json").is_file()
    not_recomputed = {"costs.json", "report.md"} if with_costs else set()
    details: list[str] = []
    failed = 0
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as tmp:
        out = Path(tmp) / "results"
        out.mkdir()
        for rel in results:  # committed files only, not whatever else lies in the working tree
            inner = rel.removeprefix(f"{RESULTS}/")
            (out / inner).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, out / inner)
        latency = out / "latency" if (out / "latency").is_dir() else None
        try:
            write_report(root / RUNS, qrels, out, latency_dir=latency)
        except Exception as exc:  # any failure of the report is this row's FAIL, named
            return [f"analysis report failed on runs/: {type(exc).__name__}: {exc}"], 1
        produced = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
        committed_owned = {r.removeprefix(f"{RESULTS}/") for r in results}
        committed_owned = {r for r in committed_owned if r.split("/")[0] in owned}
        produced_owned = {r for r in produced if r.split("/")[0] in owned}
        for rel in sorted(committed_owned | produced_owned):
            top = rel.split("/")[0]
            if top in not_recomputed or (with_costs and rel.startswith("figures/costs-")):
                details.append(f"NOT RECOMPUTED results/{rel}: needs the costs inputs (--prices ...)")
                continue
            committed = root / RESULTS / rel
            if rel not in produced_owned:
                failed += 1
                details.append(
                    f"FAIL results/{rel}: committed, but analysis report no longer produces it (stale)"
                )
            elif rel not in committed_owned:
                if rel.endswith(".json"):
                    failed += 1
                    details.append(f"FAIL results/{rel}: produced by analysis report but not committed")
            else:
                # which code wrote them is row 10's question (analysis.reporting.codeinfo): compared without
                # it here
                ours, theirs = committed.read_bytes(), (out / rel).read_bytes()
                same = without_record(rel, ours) == without_record(rel, theirs)
                failed += not same
                details.append(
                    f"{'OK  ' if same else 'FAIL'} results/{rel}"
                    + ("" if same else ": differs from the recomputed file")
                )
    return details, failed


# ---- row 6 -------------------------------------------------------------------------------------------


def manifests_in(obj: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every manifest (an object with ``plan_sha256`` and ``git``) inside a JSON value, with its path."""
    if isinstance(obj, dict):
        if "plan_sha256" in obj and isinstance(obj.get("git"), dict):
            yield where or "/", obj
        for key, value in obj.items():
            yield from manifests_in(value, f"{where}/{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from manifests_in(value, f"{where}/{i}")


def _history_hashes(root: Path, path: str) -> set[str]:
    return {hashlib.sha256(v.data).hexdigest() for v in git.file_versions(root, path)}


def _commit_exists(root: Path, commit: str) -> bool:
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        return False
    return bool(git.run_git(root, "cat-file", "-t", commit, check=False).strip() == b"commit")


def _digest_problem(root: Path, commit: str, recorded: str, cache: dict[str, str | None]) -> str | None:
    """A manifest's code digest must be the digest of its commit's code (``bench.records.codeversion``).
    Sessions of one study may name different commits; only their code must agree, which the recorded digests
    show."""
    if commit not in cache:
        cache[commit] = code_digest(root, commit)
    if cache[commit] == recorded:
        return None
    return (
        f"code digest {recorded[:12]}... is not the digest of commit {commit[:12]}'s code "
        f"({str(cache[commit])[:12]}...; see bench/records/codeversion.py for the recomputation)"
    )


def manifests_row(root: Path, blocked: str | None) -> Row:
    check = "manifests name hashes and a commit of this history (and its code digest)"
    if blocked:
        return Row(6, check, "FAIL", blocked)

    files = [
        f
        for f in study_files(tracked(root, RESULTS)) + study_files(tracked(root, RUNS))
        if f.endswith(".json")
    ]
    known = {
        "plan_sha256": _history_hashes(root, "PLAN.md"),
        "deviations_sha256": _history_hashes(root, "DEVIATIONS.md"),
        "datasets_lock_sha256": _history_hashes(root, LOCK_NAME),
    }
    problems, found = [], 0
    digests: dict[str, str | None] = {}
    for rel in files:
        try:
            doc = json.loads((root / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # row 7 names unreadable JSON
        for where, manifest in manifests_in(doc):
            found += 1
            label = f"{rel}{'' if where == '/' else ' ' + where}"
            for key, hashes in known.items():
                value = manifest.get(key)
                if value not in hashes:
                    problems.append(
                        f"{label}: {key} {str(value)[:16]}... is not the hash of any committed "
                        f"version of {_FILE_OF[key]}"
                    )
            record = manifest.get("git") or {}
            commit = str(record.get("commit"))
            if not _commit_exists(root, commit):
                problems.append(f"{label}: git commit {commit[:12]} does not exist in this history")
            elif isinstance(record.get("code_digest"), str):
                problem = _digest_problem(root, commit, record["code_digest"], digests)
                problems += [f"{label}: {problem}"] if problem else []
    if not files or not found:
        if problems:
            return Row(6, check, "FAIL", problems[0], tuple(problems))
        return Row(6, check, "NOT YET", "no manifest committed yet (no measurement has been run)")
    if problems:
        return Row(6, check, "FAIL", f"{len(problems)} problem(s); first: {problems[0]}", tuple(problems))
    return Row(6, check, "OK", f"{found} manifests in {len(files)} JSON files; every hash and commit found")


_FILE_OF = {
    "plan_sha256": "PLAN.md",
    "deviations_sha256": "DEVIATIONS.md",
    "datasets_lock_sha256": "datasets.lock",
}


# ---- row 7 -------------------------------------------------------------------------------------------


def text_keys_in(obj: Any, where: str = "") -> Iterator[str]:
    """JSON paths whose key names text (``TEXT_KEYS``) and whose value is a non-empty string."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            path = f"{where}/{key}"
            if str(key).lower() in TEXT_KEYS and isinstance(value, str) and value.strip():
                yield path
            yield from text_keys_in(value, path)
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from text_keys_in(value, f"{where}/{i}")


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _strings(value)


def known_texts(root: Path) -> tuple[list[str], set[str]]:
    """(query texts, 40-character passage prefixes) of the bundled MIRACL-de sample, when it is present:
    every dev query of the study and the judged passages, the texts most likely to leak."""
    try:
        sample = load_sample()
    except (BenchError, OSError, ImportError):
        return [], set()
    queries = [q for q in sample.queries.values() if len(q) >= 12]
    prefixes = {p.passage_text[:40] for p in [*sample.judged, *sample.nomiracl] if len(p.passage_text) >= 40}
    prefixes |= {p.text[:40] for p in [*sample.judged, *sample.nomiracl] if len(p.text) >= 40}
    return queries, prefixes


# A run file each of whose lines is plainly ``qid Q0 docid rank score tag``: ASCII digits for the rank, a
# plain decimal score, and in no column a character that any reader splits on (``str.isspace``: trec_eval's
# six and Unicode's spaces) or refuses (``analysis.inputs.columns.stray_character``). Such a file passes
# ``run_line_problem`` and ``str.split`` reads the same six columns in each line, so one regular expression
# over the file answers what the line-by-line checks would (a committed study holds millions of run lines);
# a file it does not match gets those checks, which name the line.
_COL = r"[^\s\x00-\x08\x0e-\x1f\x7f\ufeff]+"
_SEP = r"[ \t\x0b\x0c\r]+"
_OPT = r"[ \t\x0b\x0c\r]*"
_NUM = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def plain_run(tag: str | None = None) -> re.Pattern[str]:
    """The whole-file pattern of plain run lines (above), with run tag ``tag`` in every line if given."""
    column = _COL if tag is None else re.escape(tag)
    line = f"{_OPT}{_COL}{_SEP}{_COL}{_SEP}{_COL}{_SEP}[0-9]+{_SEP}{_NUM}{_SEP}{column}{_OPT}"
    return re.compile(f"(?:{line}\n)*(?:{line})?")


_PLAIN_RUN = plain_run()


def file_problems(
    rel: str, data: bytes, queries: list[str], prefixes: set[str], *, plain: bool = False
) -> list[str]:
    """Why a committed file under runs/ or results/ is not ids and numbers only (empty: fine). ``plain``: the
    caller has matched the file to ``plain_run`` with a tag of plain columns (``tagged_plain``), which
    implies the whole-file pattern, so that is not run a second time."""
    name = Path(rel).name
    if name in ALWAYS_ALLOWED:
        return []
    suffix = Path(rel).suffix
    allowed = RUN_SUFFIXES if rel.startswith(f"{RUNS}/") or in_run_folder(rel) else RESULT_SUFFIXES
    if suffix not in allowed or name.startswith(".") or name.endswith(("~", ".tmp", ".bak")):
        kinds = ", ".join(sorted(allowed))
        where = (
            ""
            if suffix not in RUN_SUFFIXES
            else (
                "; run files under results/ belong in a phase's run folder: "
                + ", ".join(_result_run_folders())
            )
        )
        return [
            f"{rel}: stray file (allowed here: {kinds}, README.md, LICENSE){where}; remove it or move it out"
        ]
    if suffix == ".png":
        return []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [f"{rel}: not UTF-8 text"]
    problems: list[str] = []
    if suffix == ".trec":  # the column rule of the report's reader and trec_eval (analysis.inputs.columns)
        bad = None if plain or _PLAIN_RUN.fullmatch(text) else run_line_problem(text)
        if bad is not None:
            problems.append(f"{rel} line {bad[0]}: not a TREC run line (query Q0 passage rank score tag)")
        return problems
    strings: list[str] = []
    if suffix in (".json", ".jsonl"):
        docs = []
        try:
            if suffix == ".json":
                docs = [json.loads(text)]
            else:
                docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            return [f"{rel}: not valid JSON ({exc})"]
        for doc in docs:
            keys = text_keys_in(doc)
            problems += [f"{rel}: key {p} holds text; only ids and numbers belong here" for p in keys]
            strings += list(_strings(doc))
    else:
        strings = text.splitlines()
    for s in strings:
        if len(s) < 12 or " " not in s:  # ids, hashes and numbers: no query or passage fits
            continue
        leaked = next((q for q in queries if q in s), None)
        if leaked is not None:
            problems.append(f"{rel}: contains the text of a query ({leaked[:40]!r}...)")
            break
        if len(s) >= 40 and any(s[i : i + 40] in prefixes for i in range(0, len(s) - 39)):
            problems.append(f"{rel}: contains passage text")
            break
    return problems


def _result_run_folders() -> list[str]:
    return sorted({f for f in RUN_FOLDERS.values() if f.startswith(f"{RESULTS}/")})


def in_run_folder(rel: str) -> bool:
    """Whether ``rel`` lies in a folder where a phase writes run files under ``results/``
    (``bench.core.paths.RUN_FOLDERS``: determinism, dtype-check sessions, pitfalls)."""
    return any(rel.startswith(f"{folder}/") for folder in _result_run_folders())


def non_regular_files(root: Path, folders: tuple[str, ...] = (RUNS, RESULTS)) -> dict[str, str]:
    """Committed entries under ``folders`` that are not regular files (git mode 100644/100755): a symbolic
    link (mode 120000, possibly to a file outside the repository) or a submodule (160000), with the
    problem."""
    if not git.is_repo(root):
        return {}
    out = git.run_git(root, "ls-files", "-s", "-z", "--", *folders).decode("utf-8", errors="replace")
    found: dict[str, str] = {}
    for entry in (e for e in out.split("\0") if e):
        meta, rel = entry.split("\t", 1)
        mode = meta.split(" ")[0]
        if mode == "120000":
            target = os.readlink(root / rel) if (root / rel).is_symlink() else "?"
            found[rel] = (
                f"{rel}: committed as a symbolic link (to {target}), not as the file itself: a "
                "reviewer without the target cannot check it; `git rm --cached` it and commit the "
                "file's own bytes"
            )
        elif mode not in ("100644", "100755"):
            found[rel] = f"{rel}: committed as git mode {mode} (not a regular file); commit a regular file"
    return found


def _run_place(rel: str) -> str | None:
    """The run tag a run file's place asks for: ``<stage>/<model>@<k>`` (``first-stage/<stage>`` for a
    first stage) for ``<run folder>/<stage>/<name>.trec``, None for a file in no such place."""
    folder = next(
        (f for f in sorted(set(RUN_FOLDERS.values()), key=len, reverse=True) if rel.startswith(f"{f}/")), None
    )
    if folder is None or not rel.endswith(".trec"):
        return None
    inner = rel.removeprefix(f"{folder}/").removesuffix(".trec")
    return inner if inner.count("/") == 1 else None


_PLAIN_COLUMN = re.compile(_COL)


def tagged_plain(rel: str, text: str) -> bool:
    """Whether every line of the run file ``rel`` is a plain run line with the run tag its place says
    (``plain_run(tag)``), the tag itself a plain column: such a file also matches the whole-file pattern of
    ``file_problems`` (its tag column is text that ``_COL`` matches) and has no tag problem, so one pattern
    over the file answers both checks (row 7: half the scanning of a study's run lines)."""
    expected = _run_place(rel)
    return (
        expected is not None
        and _PLAIN_COLUMN.fullmatch(expected) is not None
        and plain_run(expected).fullmatch(text) is not None
    )


def run_tag_problems(rel: str, text: str, *, plain: bool = False) -> list[str]:
    """Every line's run tag (the sixth column) must be what the file's place says, ``<stage>/<model>@<k>``:
    a run file moved or swapped to another model's or depth's name is named (first offending line).
    ``plain``: ``tagged_plain`` holds for the file (checked by the caller): no problem."""
    expected = _run_place(rel)
    if plain or expected is None or plain_run(expected).fullmatch(text):
        return []
    for lineno, line in enumerate(text.splitlines(), 1):
        cols = line.split()
        if len(cols) == 6 and cols[5] != expected:
            return [
                f"{rel} line {lineno}: run tag {cols[5]!r} is not {expected!r}, which its place "
                "(<stage>/<model>@<k>) says: the file belongs to another run; put it back where its "
                "tag says"
            ]
    return []


def ids_only_row(root: Path) -> Row:
    check = "committed runs and results hold ids and numbers only"
    files = tracked(root, RUNS) + tracked(root, RESULTS)
    queries, prefixes = known_texts(root)
    problems: list[str] = []
    links = non_regular_files(root)
    for rel in files:
        path = root / rel
        if rel in links:
            problems.append(links[rel])
            continue
        if not path.is_file():
            problems.append(f"{rel}: tracked by git but missing here (`git checkout -- {rel}`)")
            continue
        data = path.read_bytes()
        plain = rel.endswith(".trec") and tagged_plain(rel, data.decode("utf-8", errors="replace"))
        problems += file_problems(rel, data, queries, prefixes, plain=plain)
        if rel.endswith(".trec"):
            problems += run_tag_problems(rel, data.decode("utf-8", errors="replace"), plain=plain)
    study = study_files(files)
    if problems:
        return Row(7, check, "FAIL", f"{len(problems)} problem(s); first: {problems[0]}", tuple(problems))
    basis = f"checked against {len(queries)} query texts, {len(prefixes)} passage openings (bundled sample)"
    return Row(7, check, "OK", f"{len(study)} study files, no stray file, no text key; {basis}")
