"""Mean passage tokens with the Voyage tokenizer, for the context calculation (PLAN.md, section "Costs").

The plan counts saved passages x mean passage tokens, with the Voyage tokenizer as the approximation. The
tokenizer is the hub repository ``voyageai/<model>`` (``voyageai`` 0.5.0 counts tokens with
``tokenizers.Tokenizer.from_pretrained("voyageai/<model>")``), read here from a local snapshot in the hub
cache layout (``bench.core.paths.model_snapshot_dir``): the hub is not reachable from the measuring machines.
If the snapshot is absent the command refuses with that message; it never substitutes another tokenizer.

Counted: ``len(encoding.ids)`` of ``Tokenizer.encode_batch`` with its defaults (special tokens included,
as the Voyage client counts), over the distinct passages of each stage's first-stage top 100
(``title + "\\n" + text``): the passages an LLM would be given without a reranker (D-028).
Output: one JSON record (format ``passage-tokens/1``) that ``analysis report --passage-tokens`` reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.core.errors import BenchError
from bench.core.paths import models_dir
from bench.quality.inputs import StageTexts
from bench.rerankers.snapshots import VOYAGE_TOKENIZER_ID, VOYAGE_TOKENIZER_REPO, fetch_hint

__all__ = ["FORMAT", "VoyageTokenizer", "count_tokens", "load_voyage_tokenizer", "passage_tokens_record"]

FORMAT: Final = "passage-tokens/1"  # == analysis.costs.section.TOKENS_FORMAT (tested)
DEFAULT_MODEL: Final = "rerank-3"
COUNTING: Final = (
    "len(ids) of tokenizers.Tokenizer.encode_batch with its defaults (special tokens included), per passage "
    "title + '\\n' + text; distinct passages of the stage's first-stage top 100"
)


@dataclass(frozen=True)
class VoyageTokenizer:
    repo: str
    revision: str
    path: Path
    sha256: str
    tokenizer: Any  # tokenizers.Tokenizer

    def record(self) -> dict[str, Any]:
        return {"repo": self.repo, "revision": self.revision, "file": "tokenizer.json", "sha256": self.sha256}


def load_voyage_tokenizer(
    model: str = DEFAULT_MODEL, *, revision: str | None = None, root: Path | None = None
) -> VoyageTokenizer:
    """The Voyage tokenizer from a local snapshot; refuses clearly when it is not there."""
    repo = f"voyageai/{model}"
    snapshots = (root or models_dir()) / ("models--" + repo.replace("/", "--")) / "snapshots"
    found = sorted(p.parent.name for p in snapshots.glob("*/tokenizer.json")) if snapshots.is_dir() else []
    if revision is not None:
        found = [r for r in found if r == revision]
    if not found:
        hf = f"`hf download {repo} tokenizer.json --cache-dir {root or models_dir()}`"
        fetch = f"`{fetch_hint(VOYAGE_TOKENIZER_ID)}` (or {hf})" if repo == VOYAGE_TOKENIZER_REPO else hf
        raise BenchError(
            f"the Voyage tokenizer {repo} is not on this machine (no {snapshots}/<revision>/tokenizer.json"
            f"{' for revision ' + revision if revision else ''}). It comes from the Hugging Face hub: on a "
            f"machine with internet run {fetch} and copy the folder here. The context calculation needs "
            "exactly this tokenizer and will not use another one in its place."
        )
    if len(found) > 1:
        raise BenchError(f"{snapshots}: several snapshots of {repo} ({', '.join(found)}); pass --revision")
    path = snapshots / found[0] / "tokenizer.json"
    try:
        # lazy: tokenizers is imported only when a tokenizer is built
        from tokenizers import Tokenizer
    except ModuleNotFoundError as exc:
        raise BenchError("counting Voyage tokens needs the package `tokenizers`: `uv sync`") from exc
    data = path.read_bytes()
    try:
        tokenizer = Tokenizer.from_str(data.decode("utf-8"))
    except Exception as exc:  # tokenizers raises its own Exception type for a malformed file
        raise BenchError(f"{path}: not a tokenizers tokenizer.json ({exc}); download it again") from exc
    return VoyageTokenizer(repo, found[0], path, hashlib.sha256(data).hexdigest(), tokenizer)


def count_tokens(
    tokenizer: Any, texts: Sequence[str], *, batch: int = 256, progress: Any = None
) -> list[int]:
    out: list[int] = []
    for i in range(0, len(texts), batch):
        encodings = tokenizer.encode_batch(list(texts[i : i + batch]))
        out += [len(e.ids) for e in encodings]
        if progress is not None:
            progress.advance(len(encodings))
    return out


def passage_tokens_record(
    tok: VoyageTokenizer,
    candidates: Mapping[str, Mapping[str, Sequence[str]]],
    texts: Mapping[str, str] | StageTexts,
    run_sha256: Mapping[str, str],
    *,
    progress_factory: Any = None,
) -> dict[str, Any]:
    """Mean tokens per stage over the distinct candidate passages (stage -> qid -> docids in rank order)."""
    stages: dict[str, Any] = {}
    for stage, lists in sorted(candidates.items()):
        docids = sorted({d for ids in lists.values() for d in ids[:100]})
        # texts of the stage's own corpus (keyed by (corpus, docid))
        own = texts.for_stage(stage) if isinstance(texts, StageTexts) else texts
        missing = [d for d in docids if d not in own]
        if missing:
            raise BenchError(
                f"stage {stage}: {len(missing)} candidate passage(s) without text (first: "
                f"{missing[0]!r}); the run and the corpus do not belong together"
            )
        passages = [own[d] for d in docids]
        if progress_factory is not None:
            with progress_factory(f"tokens {stage}", len(passages)) as progress:
                counts = count_tokens(tok.tokenizer, passages, progress=progress)
        else:
            counts = count_tokens(tok.tokenizer, passages)
        if not counts:
            raise BenchError(f"stage {stage}: no candidate passages")
        stages[stage] = {
            "passages": len(counts),
            "mean_tokens": sum(counts) / len(counts),
            "total_tokens": sum(counts),
            "max_tokens": max(counts),
            "min_tokens": min(counts),
            "first_stage_run_sha256": run_sha256.get(stage),
        }
    return {"format": FORMAT, "tokenizer": tok.record(), "counting": COUNTING, "stages": stages}


def docids_of(lists: Mapping[str, Iterable[str]]) -> set[str]:
    return {d for ids in lists.values() for d in ids}
