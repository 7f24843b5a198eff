"""Library diagnostics go to a log file, not to the user's terminal.

transformers prints a load report for every model whose checkpoint has keys the architecture does not use
(``BertModel LOAD REPORT ... UNEXPECTED`` for all-MiniLM-L6-v2's ``position_ids``) and a weight-loading
progress bar. Both are harmless and expected, and on a new user's terminal they read like a fault.
``library_log(path)`` sends the records of the model libraries' loggers to ``path`` (ANSI colours
removed) and, unless ``verbose``, takes their terminal handlers and transformers' progress bars away for
the duration of the block; everything is restored afterwards. The command's own progress and
diagnostics (``bench.core.progress``, ``print(..., file=sys.stderr)``) are not touched.

Terminal handlers are taken from the named loggers and from every logger below them that has its own
(torch gives some modules one); torch's ``_StderrHandler`` counts as one. A library that installs its
handler on import or first use (torch, optimum's ``get_logger``) must have done so before the block starts:
the int8 quantising child (``bench.rehearse.quantize_child``) imports and configures them first, and
every block configures transformers' and optimum's (their handlers would otherwise come with the first
model loaded inside it, as optimum's did with the rehearsal's int8 step).
``capture_warnings`` also sends Python warnings (torch's ``TracerWarning`` when a model is exported)
to the file, for a process whose every warning comes from a library (the child).
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LOGGERS = ("transformers", "sentence_transformers", "huggingface_hub", "optimum", "nncf", "torch")
WARNINGS_LOGGER = "py.warnings"  # where logging.captureWarnings sends warnings.warn
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_ACTIVE: list[tuple[Path, bool]] = []  # the blocks now open, innermost last


def active() -> tuple[Path, bool] | None:
    """(path, verbose) of the innermost open ``library_log`` block, for a child process to log alike."""
    return _ACTIVE[-1] if _ACTIVE else None


class _PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return _ANSI.sub("", super().format(record))


def _transformers_logging() -> Any:
    try:
        # lazy: transformers is heavy; only when a model is built
        import transformers.utils.logging as tlog
    except ModuleNotFoundError:  # the analysis-only install has no transformers
        return None
    tlog.get_logger("transformers")  # transformers installs its terminal handler now, so it can be removed
    return tlog


def _optimum_logging() -> None:
    """optimum adds its terminal handler to the "optimum" logger on first use of its ``get_logger``, which
    ``import optimum.intel`` makes: inside the block that handler would print ("Could not infer whether the
    model was already converted ...", "[Errno 2] ... refs/main" when an int8 folder is loaded offline).
    Installed now (a light import), it is taken with the others."""
    try:
        # lazy: optimum is optional (the analysis-only install has none)
        import optimum.utils.logging as olog
    except ModuleNotFoundError:
        return
    olog.get_logger("optimum")


def _terminal(handler: logging.Handler) -> bool:
    """A handler that writes to the terminal: a stream handler, or torch's ``_StderrHandler`` (a plain
    ``logging.Handler`` that writes to whatever ``sys.stderr`` is, like logging's last resort)."""
    if isinstance(handler, logging.FileHandler):
        return False
    return isinstance(handler, logging.StreamHandler) or type(handler).__name__ == "_StderrHandler"


def _loggers(names: tuple[str, ...]) -> list[logging.Logger]:
    """The named loggers, and every logger below them that has a terminal handler of its own (torch gives
    some of its modules their own handler and stops them propagating)."""
    out = [logging.getLogger(name) for name in names]
    below = tuple(f"{name}." for name in names)
    for name, logger in sorted(logging.root.manager.loggerDict.items()):
        if (
            isinstance(logger, logging.Logger)
            and name.startswith(below)
            and any(_terminal(h) for h in logger.handlers)
        ):
            out.append(logger)
    return out


@contextlib.contextmanager
def library_log(path: Path, *, verbose: bool = False, capture_warnings: bool = False) -> Iterator[Path]:
    """Within the block, the model libraries' log records are appended to ``path`` (created with the first
    record, so its folder may be created inside the block); on the terminal only if ``verbose``. With
    ``capture_warnings``, Python warnings go the same way."""
    handler = logging.FileHandler(path, encoding="utf-8", delay=True)  # created with the first record
    handler.setFormatter(_PlainFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    tlog = _transformers_logging()
    _optimum_logging()
    saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]] = []
    bars = tlog.is_progress_bar_enabled() if tlog is not None else None
    names = (*LOGGERS, WARNINGS_LOGGER) if capture_warnings else LOGGERS
    try:
        if capture_warnings:
            logging.captureWarnings(True)
        for logger in _loggers(names):
            saved.append((logger, list(logger.handlers), logger.propagate, logger.level))
            for h in list(logger.handlers):
                if _terminal(h):
                    logger.removeHandler(h)
            logger.propagate = False
            if verbose:  # a fresh handler on today's stderr (a library's own may hold a stale stream)
                logger.addHandler(logging.StreamHandler(sys.stderr))
            logger.addHandler(handler)
            if logger.name in names and logger.level == logging.NOTSET:
                logger.setLevel(logging.WARNING)
        if tlog is not None and not verbose:
            tlog.disable_progress_bar()
        _ACTIVE.append((path, verbose))
        yield path
    finally:
        if capture_warnings:
            logging.captureWarnings(False)
        if _ACTIVE and _ACTIVE[-1] == (path, verbose):
            _ACTIVE.pop()
        for logger, handlers, propagate, level in saved:
            for h in list(logger.handlers):
                logger.removeHandler(h)
            for h in handlers:
                logger.addHandler(h)
            logger.propagate = propagate
            logger.setLevel(level)
        if tlog is not None and bars:
            tlog.enable_progress_bar()
        handler.close()
