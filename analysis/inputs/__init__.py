"""Reading inputs: TREC runs (line-by-line reference reader and columnar fast path), qrels, column and text
checks, and the reordering invariant of reranked runs against their first stage."""
