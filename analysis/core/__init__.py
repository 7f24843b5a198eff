"""The lowest layer of analysis: the plan's constants (``plan``), atomic file writes with one JSON format
(``atomic``) and the left-to-right float sum (``floatsum``). Imports nothing else of analysis."""
