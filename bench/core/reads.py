"""What each measuring command reads from datasets.lock, declared by the command (plan section "Data":
"files checked against datasets.lock at the start of every measuring command").

``bench.records.guard.preflight`` verifies exactly the entries a command names (``lock_names`` is required;
there is no "everything" default), so a phase that reads the 71k corpus does not hash the 32 shards of the
full corpus. A locked file that a command opens without having named it is still hashed when it is opened
(``bench.integrity.enforce.require_locked``), so a declaration that is too short costs time, never a check.
"""

from __future__ import annotations

from collections.abc import Iterable

from bench.core.plan import STAGES

TOPICS = "miracl"  # the MIRACL de topics and qrels (dev queries; test-B for the int8 calibration set)


def corpus_reads(stages: Iterable[str]) -> list[str]:
    """The corpora whose passages the stages' candidates are: ``corpus-71k`` and/or ``corpus-full``."""
    corpora = {STAGES[s].corpus for s in stages}
    return (["corpus-71k"] if "71k" in corpora else []) + (["corpus-full"] if "full" in corpora else [])


def stage_reads(stages: Iterable[str]) -> list[str]:
    """A reranking phase on ``stages``: the topics (queries, qrels) and the stages' corpora (passages)."""
    return [TOPICS, *corpus_reads(list(stages))]
