"""``bench audit`` and ``bench reproduce``: the reviewer's checks (plan section "Reproducibility and
licences").

- ``rows``: the table (one row per check, OK / NOT YET / FAIL with a one-line reason) and its exit code.
- ``history``: rows 1-3 and 8 (the plan commit, timestamps, DEVIATIONS.md, licences).
- ``committed``: rows 4-7 (datasets.lock, results recomputed from ``runs/``, manifests, ids and numbers only).
- ``reproduce``: the plan's rule "a fresh clone must reproduce nDCG@10 of two rerankers from the committed
  first-stage runs on the same GPU within 0.1 points".
"""
