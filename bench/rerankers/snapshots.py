"""Pinned model snapshots on disk (plan section "Rerankers": every local model at a fixed revision).

Weights load only from a local directory in the Hugging Face cache layout,
``<models_dir>/models--ORG--NAME/snapshots/<revision>/``, which ``huggingface_hub.snapshot_download``
writes on a machine with internet (``bench models fetch MODEL``). Nothing here touches the network: a
missing snapshot, or one at another revision, is a ``BenchError`` naming the model and the command that
fetches it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.paths import model_snapshot_dir, models_dir
from bench.core.plan import EMBEDDING_MODEL


@dataclass(frozen=True)
class SnapshotSpec:
    """What must be on disk for one model id: the weights repo and, for gte, its remote-code repo."""

    model_id: str
    repo: str
    revision: str
    code_repo: str | None = None
    code_revision: str | None = None


#: The first stages' embedder (vector-71k, hybrid-71k) at the plan's pinned revision (`bench models fetch`).
EMBEDDER_SPEC = SnapshotSpec("arctic-embed-l-v2.0", EMBEDDING_MODEL.repo, EMBEDDING_MODEL.revision)

#: The Voyage tokenizer of the context calculation (``bench costs passage-tokens``). The plan pins no
#: revision: ``bench models fetch voyage-tokenizer`` takes the hub's current one, and the snapshot folder
#: (the hub cache layout) and every passage-token record name the revision it got.
VOYAGE_TOKENIZER_ID = "voyage-tokenizer"
VOYAGE_TOKENIZER_REPO = "voyageai/rerank-3"


def fetch_hint(model_id: str) -> str:
    """The command that fetches ``model_id``, as the author types it in the container."""
    return hint(f"models fetch {model_id}")


def snapshot_path(repo: str, revision: str, root: Path | None = None) -> Path:
    return model_snapshot_dir(repo, revision, root)


def present_revisions(repo: str, root: Path | None = None) -> list[str]:
    folder = model_snapshot_dir(repo, "any", root).parent  # .../models--ORG--NAME/snapshots
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def _fix(model_id: str) -> str:
    return f"Fetch it on a machine with internet: `{fetch_hint(model_id)}` (writes to {models_dir()})."


def _check_dir(spec_id: str, repo: str, revision: str, path: Path, root: Path | None) -> Path:
    if not path.is_dir():
        others = present_revisions(repo, root)
        found = f" Present revisions: {', '.join(others)}." if others else ""
        raise BenchError(
            f"Model {spec_id}: snapshot of {repo} at pinned revision {revision} is missing "
            f"(looked for {path}).{found} {_fix(spec_id)}"
        )
    if not (path / "config.json").is_file() and not (path / "modeling.py").is_file():
        raise BenchError(
            f"Model {spec_id}: {path} has neither config.json nor modeling.py; the snapshot is incomplete. "
            + _fix(spec_id)
        )
    return path


def resolve_snapshot(spec: SnapshotSpec, snapshot_dir: Path | None = None, root: Path | None = None) -> Path:
    """The snapshot directory for ``spec``; raises BenchError if it is missing or at another revision.

    An explicit ``snapshot_dir`` must itself be a snapshot folder named by the pinned revision (the
    cache layout is the only record of which commit the files came from). For remote code kept in a
    separate repository (gte), the code snapshot must be present in the cache at ``code_revision`` too.
    """
    if snapshot_dir is not None:
        path = Path(snapshot_dir)
        if path.name != spec.revision:
            raise BenchError(
                f"Model {spec.model_id}: {path} is not a snapshot at the pinned revision {spec.revision} "
                f"(the folder name is the revision in the hub cache layout "
                f"models--ORG--NAME/snapshots/<revision>). {_fix(spec.model_id)}"
            )
        _check_dir(spec.model_id, spec.repo, spec.revision, path, root)
        code_root = path.parent.parent.parent
    else:
        path = _check_dir(
            spec.model_id, spec.repo, spec.revision, snapshot_path(spec.repo, spec.revision, root), root
        )
        code_root = root or models_dir()
    if spec.code_repo is not None and spec.code_revision is not None:
        code = snapshot_path(spec.code_repo, spec.code_revision, code_root)
        if not (code / "modeling.py").is_file():
            raise BenchError(
                f"Model {spec.model_id}: remote code {spec.code_repo} at pinned revision {spec.code_revision}"
                " "
                f"is missing (looked for {code / 'modeling.py'}). {_fix(spec.model_id)}"
            )
    return path


def fetch(spec: SnapshotSpec, root: Path | None = None) -> list[Path]:
    """Download the pinned snapshot(s) with huggingface_hub (needs internet). Returns the folders."""
    # lazy: huggingface_hub is heavy and needed only to download
    from huggingface_hub import snapshot_download

    cache = root or models_dir()
    cache.mkdir(parents=True, exist_ok=True)
    out = [Path(snapshot_download(spec.repo, revision=spec.revision, cache_dir=cache))]
    if spec.code_repo is not None and spec.code_revision is not None:
        out.append(Path(snapshot_download(spec.code_repo, revision=spec.code_revision, cache_dir=cache)))
    for got, rev in zip(out, (spec.revision, spec.code_revision), strict=False):
        if got.name != rev:
            raise BenchError(f"Model {spec.model_id}: the hub returned revision {got.name}, expected {rev}")
    return out


def fetch_voyage_tokenizer(root: Path | None = None) -> Path:
    """Download ``tokenizer.json`` of the Voyage tokenizer at the hub's current revision (needs internet);
    returns its path, ``.../snapshots/<revision>/tokenizer.json`` (the folder records the revision)."""
    # lazy: huggingface_hub is heavy and needed only to download
    from huggingface_hub import hf_hub_download

    cache = root or models_dir()
    cache.mkdir(parents=True, exist_ok=True)
    return Path(hf_hub_download(VOYAGE_TOKENIZER_REPO, "tokenizer.json", cache_dir=cache))
