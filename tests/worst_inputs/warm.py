"""Imported by the fork servers of the worst-inputs tests (``tests/support/pyforks.py`` preloads): what each
``analysis`` command would import and compute again in every forked process, done once in the server.

The analysis command line and its imports (numpy, click), the modules the report imports on first use (the
fast run reader's pyarrow, the pytrec_eval check), and the code record of this code
(``analysis.reporting.codeinfo.code_record``, cached per process: 0.6 s each time, 2026-12-06; the same code
gives the same record, so a forked process holds the one it would compute). ``bench`` is never imported here:
a command of ``bench`` imports it in its own process.
"""

from __future__ import annotations

import pytrec_eval

import analysis.cli
import analysis.inputs.trec_fast
from analysis.reporting.codeinfo import code_record

code_record()
MODULES = (analysis.cli, analysis.inputs.trec_fast, pytrec_eval)  # held by the server: the point
