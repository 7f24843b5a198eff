"""Every figure of ``analysis report``, drawn with matplotlib (Agg) in this package and nowhere else.

- :mod:`analysis.figures.stage`: one figure per stage, each run's nDCG@10 with its interval beside each
  reranked run's paired difference to the first stage (plan section "Quality");
- :mod:`analysis.figures.costs`: the decision figure per stage, quality against latency and money (section
  "Costs");
- :mod:`analysis.figures.latency`: p50 and p95 against k per machine (section "Latency");
- :mod:`analysis.figures.render`: what they share: fixed matplotlib settings, fixed size and dpi, the PNG
  written without a timestamp or software name, so the same numbers give the same bytes.

The drawing code takes numbers the report has already computed (no statistics here, no file read). matplotlib
is imported inside the drawing functions only: a report without figures (``--no-figures``) never loads it.
"""
