"""The lowest layer of analysis: the plan's constants (``plan``), atomic file writes with one JSON format
(``atomic``), the left-to-right float sum (``floatsum``) and work started on a thread (``background``).
Imports nothing else of analysis."""
