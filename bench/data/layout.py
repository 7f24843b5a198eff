"""The hub layouts of the plan's datasets (plan section "Data"): file paths and column names, nothing else.

A leaf module (it imports nothing of bench): the readers (:mod:`bench.data.hub`, :mod:`bench.data.miracl`,
:mod:`bench.equality.data`) and the lock's expected files (:mod:`bench.integrity.hub`) both read the layouts
here, so the lock does not import the readers, which check every file against the lock. Where
each layout was confirmed is said in those modules.
"""

from __future__ import annotations

# mteb/MIRACLRetrievalHardNegatives (71k corpus) and miracl/miracl-corpus (full corpus): bench.data.hub
CORPUS_71K_FILE = "de-corpus/dev-00000-of-00001.parquet"
CORPUS_71K_ID_COLUMNS = ("_id", "id")  # either one (older / later mteb uploads)
CORPUS_71K_COLUMNS = ("title", "text")
CORPUS_FULL_DIR = "miracl-corpus-v1.0-de"
CORPUS_FULL_SHARDS = 32
CORPUS_FULL_KEYS = ("docid", "title", "text")

# miracl/miracl (topics and qrels): bench.data.miracl
#: Query count of MIRACL de test-B as the public evidence (MIRACL's own statistics, ir_datasets) gives it.
TEST_B_SPLIT = "test-b"
TEST_B_QUERIES = 712


def topics_relpath(lang: str = "de", split: str = "dev") -> str:
    return f"miracl-v1.0-{lang}/topics/topics.miracl-v1.0-{lang}-{split}.tsv"


def qrels_relpath(lang: str = "de", split: str = "dev") -> str:
    return f"miracl-v1.0-{lang}/qrels/qrels.miracl-v1.0-{lang}-{split}.tsv"


# mteb/MIRACLReranking (adapter check 1's input): bench.equality.data
RERANKING_ID_COLUMNS = ("_id", "id")
RERANKING_TOP_QUERY_COLUMNS = ("query-id", "query_id", "qid")
RERANKING_TOP_DOCS_COLUMNS = ("corpus-ids", "corpus_ids")
