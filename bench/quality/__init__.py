"""The quality phase (plan section "Quality"): every rated reranker on the frozen top 100 of every stage.

Modules, one concept each:

- ``candidates``: the frozen first-stage candidates (read once, copied into the study, SHA-256 checked);
- ``depths``: which depths a model is called at and how a run at depth k is derived;
- ``timing``: one timed adapter call (monotonic clock, ``torch.cuda.synchronize`` on GPU);
- ``phase``: the resumable loop over (model, stage, query, depth) that fills the journal;
- ``runs``: run files ``<runs>/<stage>/<model>@<k>.trec`` written from the journal alone;
- ``study``: the study directory, its manifest and the refusal to resume a mismatched one;
- ``interrupt``: Ctrl-C and SIGTERM end with a clear message and a resumable journal;
- ``cli``: ``bench quality``, ``bench determinism`` and ``bench dtype-check``.

The rehearsal (``bench.rehearse``) drives the same modules with stand-in models and the bundled sample.
"""
