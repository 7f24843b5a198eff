"""``analysis``: every quality number, interval, test and sentence of PLAN.md from TREC run files and qrels.

Needs only numpy, click and matplotlib (never bench, torch, scipy or a server client). Conventions, each in
the module that owns it and recorded in every result file: the tie rule (:mod:`analysis.stats.ranking`), the
missing-query policy and metric definitions (:mod:`analysis.stats.metrics`), the RNG, bootstrap draw and
p-value convention (:mod:`analysis.stats.resampling`), Holm (:mod:`analysis.stats.multiple`), wording and
winner rules (:mod:`analysis.reporting.wording`), comparison families and the best model
(:mod:`analysis.reporting.study`).
"""
