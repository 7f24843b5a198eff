"""The one fake reranker of the tests: no torch, no model, behaviour chosen by keywords.

``FakeReranker(model_id, score=RULE, ...)`` follows the ``Reranker`` protocol (``meta``, ``score``), is a
context manager and keeps every result in ``log`` (a ``RecordLog``), as the real adapters do. Every call is
recorded in ``calls``: a list of ``{"query", "n"}`` records (plus ``"billed_tokens"`` when asked for, which
``bench.equality.pointwise`` sums as it does for the Voyage adapter's records).

Score rules (``score=``):
- ``"hash"`` (default): a hash of (model id, query, passage) mapped to [0, 1) in coarse steps, so some
  passages tie on purpose;
- ``"minus_index"``: minus the passage's position (the first-stage order is kept);
- ``"crc32"``: ``text_score(passage)``, a CRC-32 of the passage alone;
- ``"passage_number"``: the number after the "-" of a passage ``"q00-17"`` plus ``noise`` times a sine of the
  number and the query length (two fakes with different ``noise`` disagree a little, deterministically);
- a callable ``(query, passages) -> scores``.
A listwise term is added to every score: ``list_shift`` times the number of passages, or, when the fake is
``listwise`` and no ``list_shift`` is given, the number of passages / 1000 (scores depend on the list, as a
listwise model's may).

Per call, in this order: the call is recorded; ``on_call(fake, query, passages)`` runs (a test's own hook:
record the passages, wait for an event, change ``chunk``, raise); ``fail_on`` (a query substring) raises
RuntimeError; ``fail_at`` (a call number, 1-based) raises KeyboardInterrupt; ``delay_s`` is slept.
The record's ``chunk_size`` is ``chunk`` (all passages when None, at most the number of passages);
``max_input_tokens`` is the given number or the longest passage in words; ``input_tokens``, when given, is
the tokens per passage (the record then carries ``input_tokens`` = that times the number of passages).
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Literal, NotRequired, TypedDict

import numpy as np

from bench.rerankers.protocol import RecordLog, RerankerMeta, ScoreResult, make_result

ScoreFunction = Callable[[str, Sequence[str]], Sequence[float]]
ScoreRule = Literal["hash", "minus_index", "crc32", "passage_number"] | ScoreFunction


class FakeCall(TypedDict):
    """One ``score`` call of a ``FakeReranker``."""

    query: str
    n: int  # number of passages
    billed_tokens: NotRequired[int]


def text_score(text: str) -> float:
    """The ``"crc32"`` rule: a score in [0, 1) from the passage text alone (pointwise by construction)."""
    return (zlib.crc32(text.encode()) % 10_000) / 10_000


class FakeReranker:
    """A deterministic reranker whose behaviour the keywords choose (see the module's docstring)."""

    def __init__(
        self,
        model_id: str = "fake",
        *,
        score: ScoreRule = "hash",
        listwise: bool = False,
        list_shift: float | None = None,
        noise: float = 0.0,
        fail_on: str | None = None,
        fail_at: int | None = None,
        on_call: Callable[[FakeReranker, str, Sequence[str]], None] | None = None,
        delay_s: float = 0.0,
        chunk: int | None = None,
        max_input_tokens: int | None = None,
        input_tokens: int | None = None,
        billed_tokens: int | None = None,
    ) -> None:
        self._meta = RerankerMeta(
            id=model_id,
            model=f"test/{model_id}",
            revision="0" * 40,
            dtype="float32",
            device="cpu",
            chunk_size=chunk,
            listwise=listwise,
        )
        self.rule = score
        self.list_shift = list_shift
        self.noise = noise
        self.fail_on = fail_on
        self.fail_at = fail_at
        self.on_call = on_call
        self.delay_s = delay_s
        self.chunk = chunk
        self.max_input_tokens = max_input_tokens
        self.input_tokens = input_tokens
        self.billed_tokens = billed_tokens
        self.calls: list[FakeCall] = []
        self.log = RecordLog()

    @property
    def meta(self) -> RerankerMeta:
        return self._meta

    def __enter__(self) -> FakeReranker:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def _scores(self, query: str, passages: Sequence[str]) -> list[float] | np.ndarray:
        n = len(passages)
        if self.list_shift is not None:
            term = self.list_shift * n
        else:
            term = n / 1000 if self._meta.listwise else 0.0
        rule = self.rule
        if callable(rule):
            return [float(v) + term for v in rule(query, passages)]
        if rule == "hash":
            out = []
            for p in passages:
                h = hashlib.sha256(f"{self._meta.id}|{query}|{p}".encode()).digest()
                out.append(int.from_bytes(h[:2], "big") / 2**16 * 0.999 + term)  # coarse: ties happen
            return out
        if rule == "minus_index":
            return [float(-i) + term for i in range(n)]
        if rule == "crc32":
            return [text_score(p) + term for p in passages]
        if rule == "passage_number":
            base = np.array([float(p.split("-")[1]) for p in passages])  # deterministic per passage
            return base + self.noise * np.sin(base * 7.0 + len(query)) + term
        raise ValueError(f"FakeReranker: unknown score rule {rule!r}")

    def score(self, query: str, passages: Sequence[str]) -> ScoreResult:
        call: FakeCall = {"query": query, "n": len(passages)}
        if self.billed_tokens is not None:
            call["billed_tokens"] = self.billed_tokens * len(passages)
        self.calls.append(call)
        if self.on_call is not None:
            self.on_call(self, query, passages)
        if self.fail_on is not None and self.fail_on in query:
            raise RuntimeError(f"simulated failure on {query!r}")
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise KeyboardInterrupt
        if self.delay_s:
            time.sleep(self.delay_s)
        n = len(passages)
        longest = max((len(p.split()) for p in passages), default=0)
        result = make_result(
            self._scores(query, passages),
            max_input_tokens=longest if self.max_input_tokens is None else self.max_input_tokens,
            truncated_pairs=0,
            chunk_size=min(self.chunk or n, n),
            input_tokens=None if self.input_tokens is None else self.input_tokens * n,
        )
        return self.log.add(result)
