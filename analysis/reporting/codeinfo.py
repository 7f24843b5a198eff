"""The analysis code on record: what produced the numbers (plan section "Reproducibility and
licences").

Every file ``analysis report`` writes records the same four fields, ``analysis_code``:

- ``commit``: the repository's HEAD when the report was written (None outside a git checkout);
- ``dirty``: whether ``analysis/`` or ``uv.lock`` differed from that commit (None outside git);
- ``analysis_digest``: SHA-256 over every ``analysis/**/*.py`` file (:func:`tree_digest`: each path and the
  SHA-256 of its bytes, in path order), so a reviewer recomputes it from any commit's tree;
- ``packages_digest``: SHA-256 over ``name==version`` lines of the locked packages (``uv.lock``) that the
  analysis code imports (:func:`packages_digest`).

JSON files carry it as the top-level key ``analysis_code``; ``report.md`` as its last line
(:data:`MD_PREFIX`); PNG figures as a ``tEXt`` chunk (keyword ``analysis_code``). ``bench audit`` reads it
back (the row "analysis code on record"); ``analysis code-digest`` writes the record to a file that the
runbook stamps before the first measurement. This module never imports bench (git runs as a subprocess).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import re
import struct
import subprocess
import sys
import tomllib
import unicodedata
import zlib
from collections.abc import Collection, Iterator, Mapping
from concurrent.futures import Future
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from analysis.core.atomic import json_bytes
from analysis.core.background import soon

KEY = "analysis_code"
FIELDS = ("analysis_digest", "commit", "dirty", "packages_digest")
MD_PREFIX = "Analysis code: "
PACKAGE = "analysis"
REPO = Path(__file__).resolve().parents[2]
_PNG_END = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def tree_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 over ``path NUL sha256(bytes) LF`` for each ``analysis/…/*.py`` path (repository-relative,
    sorted); the same for a working tree and for a commit's tree."""
    h = hashlib.sha256()
    for path in sorted(p for p in files if p.startswith(f"{PACKAGE}/") and p.endswith(".py")):
        h.update(f"{path}\0{hashlib.sha256(files[path]).hexdigest()}\n".encode())
    return h.hexdigest()


def working_files(root: Path = REPO) -> dict[str, bytes]:
    """Every ``analysis/**/*.py`` file on disk (the code that runs), repository-relative."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / PACKAGE).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def _import_statements(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every ``import`` and ``from ... import`` statement of ``tree``, at any depth. Statements only stand in
    the statement lists of a module, a function, a class, a compound statement, an ``except`` handler or a
    ``case``, so those lists are walked and no expression is visited (:func:`ast.walk` visits every node:
    three times as long, the same statements)."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
            continue
        for name in _STATEMENT_LISTS:
            children = getattr(node, name, None)
            if isinstance(children, list):
                stack.extend(children)
    return found


_AST_RACE = "AST constructor recursion depth mismatch"


def _parse(data: bytes, path: str, tries: int = 3) -> ast.AST:
    """``ast.parse``, again when CPython 3.11 reports its AST constructor's depth counter out of step
    (python/cpython#106905: the counter is shared by threads, and the code record is parsed on a thread of its
    own while another thread may parse too, e.g. pytest's assertion rewriting). The counter is reset by every
    call, so a second parse of the same bytes is exact; any other error, or a third mismatch, is raised."""
    for attempt in range(tries):
        try:
            return ast.parse(data, filename=path)
        except SystemError as err:
            if _AST_RACE not in str(err) or attempt == tries - 1:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


@lru_cache(maxsize=4096)
def _imports_of(path: str, data: bytes) -> frozenset[str]:
    """Top-level names of the modules one file imports (absolute imports); kept per path and content, since
    ``bench audit`` digests the same files in several commits."""
    names: set[str] = set()
    for node in _import_statements(_parse(data, path)):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return frozenset(names)


def _third_party(names: Collection[str]) -> set[str]:
    return {n for n in names if n not in sys.stdlib_module_names and n not in (PACKAGE, "__future__")}


_KEYWORD = re.compile(r"\b(?:import|from)\b")
_GAP = r"(?:[ \t\f]|\\(?:\r\n|\r|\n))*"  # blanks and line continuations
_IMPORT_REST = re.compile(r"(?:\\(?:\r\n|\r|\n)|[^\r\n;#])*")  # to the statement's end
_FROM_REST = re.compile(rf"{_GAP}(\.?)([^ \t\f\r\n.\\;#(]*)")
_FIRST_NAME = re.compile(rf"{_GAP}([^ \t\f\r\n.\\;#()]*)")
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)


def _matched(pattern: re.Pattern[str], text: str, at: int = 0) -> re.Match[str]:
    """``pattern`` matched at ``at``: each pattern it is given matches the empty string, so it always does."""
    found = pattern.match(text, at)
    if found is None:  # pragma: no cover - the patterns above all match the empty string
        raise AssertionError(f"{pattern.pattern!r} did not match")
    return found


def _statement_start(text: str, at: int) -> bool:
    """Whether a statement may start at ``at``: only blanks stand between it and the start of its physical
    line (after "\\n", or a lone "\\r", which Python's tokenizer also ends a line with), a ";" or a compound
    statement's ":" before it on that line."""
    line = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    before = text[line:at]
    return not before[max(before.rfind(";"), before.rfind(":")) + 1 :].strip(" \t\f")


def _named_modules(data: bytes) -> set[str] | None:
    """A superset of the top-level names :func:`_imports_of` finds in ``data``, from the text alone: the first
    name after every ``import`` and every comma of its statement, and after every ``from`` (but a relative
    one), where a statement may start (:func:`_statement_start`), NFKC-normalised as the parser normalises
    names, those that are identifiers. Every import statement stands where a statement may start and names
    its modules so, so none is missed; strings and comments may add names that are none. None where the text
    cannot be read without the parser: not UTF-8, or an encoding declared in its first two lines."""
    if _COOKIE.search(b"\n".join(data.splitlines()[:2])):
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    names: set[str] = set()
    for keyword in _KEYWORD.finditer(text):
        if not _statement_start(text, keyword.start()):
            continue
        if keyword.group() == "import":
            statement = _matched(_IMPORT_REST, text, keyword.end()).group()
            names |= {_matched(_FIRST_NAME, item).group(1) for item in statement.split(",")}
        else:
            dot, name = _matched(_FROM_REST, text, keyword.end()).groups()
            if not dot:  # a relative import names no module of its own
                names.add(name)
    normalised = {unicodedata.normalize("NFKC", n) for n in names}
    return {n for n in normalised if n.isidentifier()}  # a module's name is one; prose need not be


def imported_modules(files: Mapping[str, bytes]) -> set[str]:
    """Top-level names of the third-party modules the analysis code imports (not the standard library).

    A file is parsed (:func:`_imports_of`) only where the names its text may import
    (:func:`_named_modules`, a superset) hold a third-party one not found yet: what it imports is then found
    already, so the result is the union over every file's parse (tested on the analysis code and the standard
    library's files), at a tenth of the parsing. A file not parsed is not checked for syntax."""
    found: set[str] = set()
    for path, data in files.items():
        if not path.endswith(".py"):
            continue
        named = _named_modules(data)
        if named is None or not _third_party(named) <= found:
            found |= _third_party(_imports_of(path, data))
    return found


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _record_line(record: str, module: str) -> Iterator[str]:
    """The lines of a RECORD text that can give ``module`` as their inferred top-level name (the first path
    part, or a top-level file's name without ".py"): where the name stands with no letter, digit, "_", "."
    or "-" before it and "/" or ".py" after it (a superset: each line is then read as the standard library
    reads it)."""
    at = record.find(module)
    while at >= 0:
        end = at + len(module)
        if (at == 0 or record[at - 1] not in _NAME_CHARS) and record.startswith(("/", ".py"), end):
            start = max(record.rfind("\n", 0, at), record.rfind("\r", 0, at)) + 1
            yield record[start:].splitlines()[0]
        at = record.find(module, end)


def _inferred_names(dist: importlib.metadata.Distribution, modules: Collection[str]) -> Collection[str]:
    """Which of ``modules`` :func:`importlib.metadata.packages_distributions` infers from ``dist``'s RECORD
    (it has no ``top_level.txt``): a module is one as soon as one line gives its name, taken as the standard
    library takes it, so only the lines that can (:func:`_record_line`) are looked at, until one does. Where
    such a line is quoted (CSV quoting may join lines), or there is no RECORD: the standard library's own
    inference."""
    record = dist.read_text("RECORD")
    if not record:
        return _stdlib_inferred(dist)
    found = set()
    for module in modules:
        for line in _record_line(record, module):
            if '"' in line:
                return _stdlib_inferred(dist)
            path = importlib.metadata.PackagePath(line.split(",", 1)[0])
            if path.suffix == ".py" and module == (
                path.parts[0] if len(path.parts) > 1 else path.with_suffix("").name
            ):
                found.add(module)
                break
    return found


def _stdlib_inferred(dist: importlib.metadata.Distribution) -> Collection[str]:
    inferred = getattr(importlib.metadata, "_top_level_inferred", None)
    if inferred is None:  # pragma: no cover - another Python's importlib.metadata
        return {m for m, names in importlib.metadata.packages_distributions().items() if dist.name in names}
    return inferred(dist)  # type: ignore[no-any-return]


def providers(modules: Collection[str]) -> dict[str, set[str]]:
    """module -> the names of the installed distributions that provide it, for each of ``modules`` that one
    provides: :func:`importlib.metadata.packages_distributions` restricted to ``modules``.

    That function reads every distribution's metadata (an e-mail parser each) and, where a distribution has
    no ``top_level.txt``, its whole RECORD as paths (numpy's and pyarrow's: thousands): a third of a second
    of a cold report. Here a distribution's top-level names are its ``top_level.txt`` as there, else the
    names inferred from those RECORD lines that can give one of ``modules`` (:func:`_inferred_names`), and
    its metadata is read only when it provides one."""

    wanted = set(modules)
    out: dict[str, set[str]] = {}
    for dist in importlib.metadata.distributions():
        declared = (dist.read_text("top_level.txt") or "").split()
        hits = wanted.intersection(declared or _inferred_names(dist, wanted))
        if hits:
            name = dist.metadata["Name"]
            for module in hits:
                out.setdefault(module, set()).add(name)
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=16)
def _providers(modules: frozenset[str]) -> Mapping[str, set[str]]:
    """:func:`providers`, kept for the process (the installed distributions do not change under it)."""
    return MappingProxyType(providers(modules))


# uv's own layout of a package: its header, then its name and version, each a plain one-line string; the
# header stands at a line's start (_lock_packages)
_LOCK_PACKAGE = re.compile(r'\[\[package\]\]\nname = "([^"\\\n]*)"\nversion = "([^"\\\n]*)"$', re.MULTILINE)
_TABLE_ARRAY = re.compile(r"^[ \t]*\[\[", re.MULTILINE)  # any line that may open an array of tables


def _lock_packages(text: str) -> list[tuple[str, str]]:
    """(name, version) of every :data:`_LOCK_PACKAGE` whose header starts a line. The pattern is searched by
    its literal start (anchored at every line, a search takes 20 times as long) and a match elsewhere is
    dropped: a match spans its header's line and the two after it, none of which can start a header, so a
    dropped match hides no header."""
    return [
        (m[1], m[2]) for m in _LOCK_PACKAGE.finditer(text) if m.start() == 0 or text[m.start() - 1] == "\n"
    ]


@lru_cache(maxsize=4)
def _locked(uv_lock: bytes) -> Mapping[str, str]:
    """Normalised name -> version of each package of ``uv_lock`` (parsed once per lock content).

    A lock in uv's own layout is read by :data:`_LOCK_PACKAGE` (tomllib takes 0.2 s of a cold report's CPU
    for the 1.4 MB lock, on the thread beside the run reading): when no multi-line string can hide a line
    and every line that may open an array of tables is a ``[[package]]`` header followed by its name and
    version, those are exactly the tables and values tomllib reads. Anything else is parsed by tomllib."""
    text = uv_lock.decode("utf-8")
    found = _lock_packages(text)
    # each header holds one "[[": as many of them as headers, and no other line can open a table array
    tables = text.count("[[") == len(found) or len(_TABLE_ARRAY.findall(text)) == len(found)
    if found and '"""' not in text and "'''" not in text and tables:
        return MappingProxyType({_norm(name): version for name, version in found})
    packages = tomllib.loads(text).get("package", [])
    return MappingProxyType({_norm(str(pkg.get("name"))): str(pkg.get("version")) for pkg in packages})


def packages_digest(files: Mapping[str, bytes], uv_lock: bytes | None) -> str:
    """SHA-256 over sorted ``name==version`` lines: each distribution that provides a module the analysis
    code imports, at its version in ``uv_lock`` (the installed version, marked, where uv.lock has none)."""
    modules = imported_modules(files)
    dists = _providers(frozenset(modules))
    wanted = {_norm(d) for m in modules for d in dists.get(m, [m])}
    locked = _locked(uv_lock) if uv_lock is not None else {}
    lines = []
    for name in sorted(wanted):
        if name in locked:
            lines.append(f"{name}=={locked[name]}")
        else:
            try:
                lines.append(f"{name}=={importlib.metadata.version(name)} (installed, not in uv.lock)")
            except importlib.metadata.PackageNotFoundError:
                lines.append(f"{name}==unknown")
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False, text=True)
    except (FileNotFoundError, OSError):
        return None
    return proc.stdout if proc.returncode == 0 else None


@cache
def code_record(root: Path = REPO) -> dict[str, Any]:
    """The four fields for the code running now (computed once per process)."""
    files = working_files(root)
    lock = root / "uv.lock"
    commit = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    status = _git(root, "status", "--porcelain", "--", PACKAGE, "uv.lock") if commit else None
    return {
        "analysis_digest": tree_digest(files),
        "commit": commit.strip() if commit else None,
        "dirty": None if status is None else bool(status.strip()),
        "packages_digest": packages_digest(files, lock.read_bytes() if lock.is_file() else None),
    }


def code_record_soon(root: Path = REPO) -> Future[dict[str, Any]]:
    """:func:`code_record` computed on a thread of its own, for the report to start before it reads the runs:
    the record's Python work (parsing the analysis code and uv.lock) then overlaps the reading, whose heavy
    parts (pyarrow, hashing) run without the interpreter lock. ``.result()`` waits for it (and raises what
    it raised)."""
    return soon("code-record", code_record, root)


def md_line(record: Mapping[str, Any]) -> str:
    return MD_PREFIX + json.dumps({k: record[k] for k in FIELDS}, sort_keys=True)


def _png_chunk(record: Mapping[str, Any]) -> bytes:
    body = KEY.encode() + b"\0" + json.dumps({k: record[k] for k in FIELDS}, sort_keys=True).encode()
    return struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))


_TOP_KEY = re.compile(rb'^ "((?:[^"\\]|\\.)*)": ', re.MULTILINE)
_WORD_KEY = re.compile(rb'^( +)"(-?[0-9][-+.0-9Ee]*|true|false|null)": ', re.MULTILINE)
"""Key lines of a JSON text in the project's format (:func:`json_bytes`): a top-level key (indented one
space; a list's string element has no ``": ``), and a key that ``json.dumps`` may have written from a
number, a bool or None."""


def _json_stamped(data: bytes, record: Mapping[str, Any]) -> bytes | None:
    """What :func:`with_record` makes of a JSON object's text written by :func:`json_bytes` (parsed, the
    record added, encoded again), made on the text itself: the record's entry inserted among the top-level
    keys at its sorted place. None where the round trip might give other bytes: not an object of several
    lines in that format, the record's key already there, or sibling keys written from numbers (20 before
    100) that the round trip sorts again as text."""
    if not data.startswith(b'{\n "') or not data.endswith(b"\n}\n"):
        return None
    last: dict[int, tuple[bytes, int]] = {}  # indentation -> key and end of the last such key line
    for match in _WORD_KEY.finditer(data):
        depth, key = len(match.group(1)), match.group(2)
        before = last.get(depth)
        if (
            before is not None
            and not re.search(rb"\n {0,%d}[^ ]" % (depth - 1), data[before[1] : match.start()])
            and not before[0] < key
        ):
            return None  # siblings out of text order
        last[depth] = (key, match.end())
    insert_at = len(data) - 3  # before the final "\n}\n": after every key
    for match in _TOP_KEY.finditer(data):
        key = json.loads(b'"' + match.group(1) + b'"')
        if key == KEY:
            return None
        if key > KEY:
            insert_at = match.start()
            break
    entry = json_bytes({KEY: dict(record)})[2:-3]  # ' "analysis_code": {...}' at depth 1
    if insert_at == len(data) - 3:
        return data[:insert_at] + b",\n" + entry + data[insert_at:]
    return data[:insert_at] + entry + b",\n" + data[insert_at:]


def with_record(rel: str, data: bytes, record: Mapping[str, Any]) -> bytes:
    """``data`` of an output file ``rel`` with the record added (JSON object, Markdown, PNG); other kinds
    and JSON that is not an object come back unchanged."""
    if rel.endswith(".json"):
        stamped = _json_stamped(data, record)
        if stamped is not None:
            return stamped
        doc = json.loads(data)
        return json_bytes({**doc, KEY: dict(record)}, path=rel) if isinstance(doc, dict) else data
    if rel.endswith(".md"):
        return data.rstrip(b"\n") + b"\n\n" + md_line(record).encode() + b"\n"
    if rel.endswith(".png") and data.endswith(_PNG_END):
        return data[: -len(_PNG_END)] + _png_chunk(record) + _PNG_END
    return data


def read_record(rel: str, data: bytes) -> dict[str, Any] | None:
    """The record a written file carries, or None."""
    try:
        if rel.endswith(".json"):
            doc = json.loads(data)
            value = doc.get(KEY) if isinstance(doc, dict) else None
            return value if isinstance(value, dict) else None
        if rel.endswith(".md"):
            last = data.decode("utf-8").rstrip("\n").splitlines()[-1]
            return json.loads(last.removeprefix(MD_PREFIX)) if last.startswith(MD_PREFIX) else None
        if rel.endswith(".png"):
            at = data.rfind(b"tEXt" + KEY.encode() + b"\0")
            if at < 4:
                return None
            size = struct.unpack(">I", data[at - 4 : at])[0]
            return json.loads(data[at + 4 + len(KEY) + 1 : at + 4 + size])  # type: ignore[no-any-return]
    except (ValueError, IndexError, UnicodeDecodeError, struct.error):
        return None
    return None


def without_record(rel: str, data: bytes) -> bytes:
    """``data`` with the record removed (what :func:`with_record` added), for comparing two writings of a
    report that differ only in which code wrote them."""
    if rel.endswith(".json"):
        doc = json.loads(data)
        if isinstance(doc, dict) and KEY in doc:
            return json_bytes({k: v for k, v in doc.items() if k != KEY}, path=rel)
    elif rel.endswith(".md"):
        lines = data.decode("utf-8").rstrip("\n").split("\n")
        if lines and lines[-1].startswith(MD_PREFIX):
            return ("\n".join(lines[:-1]).rstrip("\n") + "\n").encode("utf-8")
    elif rel.endswith(".png"):
        at = data.rfind(b"tEXt" + KEY.encode() + b"\0")
        if at >= 4:
            size = struct.unpack(">I", data[at - 4 : at])[0]
            return data[: at - 4] + data[at + 4 + size + 4 :]
    return data


def well_formed(record: object) -> bool:
    """Exactly the four fields, each of its kind (hex digests, a 40-digit commit or None, a bool or None)."""
    if not isinstance(record, dict) or sorted(record) != sorted(FIELDS):
        return False
    hex64 = re.compile(r"[0-9a-f]{64}")
    commit, dirty = record["commit"], record["dirty"]
    return bool(
        all(
            isinstance(record[k], str) and hex64.fullmatch(record[k])
            for k in ("analysis_digest", "packages_digest")
        )
        and (commit is None or (isinstance(commit, str) and re.fullmatch(r"[0-9a-f]{40}", commit)))
        and (dirty is None or isinstance(dirty, bool))
    )


def stamp_tree(out_dir: Path, record: Mapping[str, Any]) -> None:
    """Add the record to every file under ``out_dir`` (the report's build folder: only files it wrote)."""
    for path in sorted(p for p in out_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        new = with_record(path.relative_to(out_dir).as_posix(), data, record)
        if new != data:
            path.write_bytes(new)
