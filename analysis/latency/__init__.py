"""Latency results (plan section "Latency"): the on-disk format, its reader and summaries.

The format is documented in ``analysis.latency.records``; ``bench latency`` writes it, ``analysis report``
and the costs section read it through the names below.
"""

from __future__ import annotations

from analysis.latency.records import (
    FORMAT,
    KINDS,
    Accuracy,
    Attempt,
    Block,
    BlockPath,
    LatencyFormatError,
    Sample,
    block_files,
    block_relpath,
    parse_block,
    read_block,
    read_blocks,
)
from analysis.latency.summary import (
    PERCENTILE_METHOD,
    BlockSummary,
    Distribution,
    LatencySummary,
    billed_tokens_per_query,
    block_summary,
    per_query_ns,
    per_query_server_ms,
    summarise,
    summed_per_query,
)

__all__ = [
    "FORMAT",
    "KINDS",
    "PERCENTILE_METHOD",
    "Accuracy",
    "Attempt",
    "Block",
    "BlockPath",
    "BlockSummary",
    "Distribution",
    "LatencyFormatError",
    "LatencySummary",
    "Sample",
    "billed_tokens_per_query",
    "block_files",
    "block_relpath",
    "block_summary",
    "parse_block",
    "per_query_ns",
    "per_query_server_ms",
    "read_block",
    "read_blocks",
    "summarise",
    "summed_per_query",
]
