"""The shared core of bench: errors, clock, paths, the plan's bench constants, journals, progress, interrupt
handling, memory, library logs, back-off, folder options, runbook parsing and hints. Imports nothing else of
bench (the lowest layer of pyproject.toml's bench-layers contract)."""
