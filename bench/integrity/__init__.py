"""Integrity of the study's inputs and promises: OpenTimestamps proofs and ``datasets.lock``.

Plan sections: the preamble (PLAN.md is timestamped, every DEVIATIONS.md version too) and Data (files are
checked against ``datasets.lock`` at the start of every measuring command).
"""
