"""The plan's cost section (PLAN.md, section "Costs"): pure functions of committed results and inputs.

* :mod:`analysis.costs.errors`: the one error type (file, line, fix).
* :mod:`analysis.costs.prices`: the committed prices file (``prices.toml``), every price with date, currency
  and source; the plan's own server prices stay in :mod:`analysis.core.plan`.
* :mod:`analysis.costs.ecb`: the ECB reference rate (``eurofxref-hist``) of the measurement day.
* :mod:`analysis.costs.formulas`: API cost, server month, capacity, latency budgets, break-even.
* :mod:`analysis.costs.context`: the context calculation (smallest k without reranker, saved LLM tokens).
* :mod:`analysis.costs.section`: the ``results/costs.json`` record; :mod:`analysis.costs.markdown` the
  report's costs section; :mod:`analysis.costs.report` the hook into ``analysis report``.
* the decision figure per stage: :mod:`analysis.figures.costs`.
"""
