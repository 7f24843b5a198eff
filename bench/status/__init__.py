"""``bench status``: where the study stands, step by step of ``docs/runbook.md``
(:mod:`bench.status.command`)."""
