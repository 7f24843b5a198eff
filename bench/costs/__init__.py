"""Measuring steps of the plan's cost section (PLAN.md, section "Costs"); the costs themselves are computed by
``analysis.costs`` from committed results. Here: the mean passage tokens of the context calculation."""
