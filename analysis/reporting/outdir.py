"""What ``analysis report --out`` may be (no lost files), checked before anything is read
or written.

The report swaps the entries it owns into ``--out`` whole (:func:`analysis.core.atomic.built_beside`): an
owned file is replaced, an owned folder (``quality/``, ``figures/``, ``latency-summary/``) is replaced with
all it holds, and an owned entry the new report does not write is removed (a stage no longer present). So:

* a file inside an owned folder that the report cannot have written (another suffix, a hidden file, a
  folder) is refused by name, never deleted: the report refuses rather than leaves it, because leaving it
  would mean merging folders file by file, giving up the atomic swap, and a file of someone else's would sit
  among the report's outputs as if the report had written it;
* an owned file that is a folder, or an owned folder that is a file, is refused likewise;
* ``--out`` may not be an input folder (``--runs``, ``--latency``) or lie inside one (the report's files
  would become part of its own input: a folder ``quality/`` in the runs folder is a stage without a first
  stage for every later report), and no input may lie inside (or be) an entry the report owns. An input
  folder inside ``--out`` at a name the report does not own is fine: the rehearsal keeps its ``runs/`` in the
  folder it writes the report into, and the runbook reads ``results/latency`` for ``--out results``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

__all__ = ["OutDirError", "check_out_dir"]


class OutDirError(ValueError):
    """An ``--out`` the report refuses; the message names the file or folder and the fix."""


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def check_out_dir(
    out_dir: Path,
    *,
    folder_files: Mapping[str, str],
    files: tuple[str, ...],
    inputs: Mapping[str, Path | None],
) -> None:
    """Refuse an ``out_dir`` where the report would lose a file it did not write or overwrite its input.

    ``folder_files``: owned folder -> the suffix of every file the report writes in it; ``files``: owned
    files; ``inputs``: option name (``--runs``) -> the path given (files and folders; None: not given)."""
    out = out_dir.resolve()
    owned = [*folder_files, *files]
    for option, given in inputs.items():
        if given is None:
            continue
        path = given.resolve()
        if path.is_dir() and _inside(out, path):
            where = "is" if out == path else "lies inside"
            raise OutDirError(
                f"{out_dir}: --out {where} the {option} folder {given}; the report's files "
                f"would become part of its input. Fix: write the report to a folder outside "
                f"{given}"
            )
        for name in owned:
            if _inside(path, out / name):
                raise OutDirError(
                    f"{given} ({option}) lies in {out_dir / name}, which the report replaces "
                    f"whole. Fix: move the input out of {out_dir / name}, or choose another "
                    "--out"
                )
    if not out_dir.is_dir():
        return
    for name in files:
        entry = out_dir / name
        if entry.is_dir() and not entry.is_symlink():
            raise OutDirError(
                f"{entry}: a folder where the report writes its file {name}; the report does "
                "not delete what it did not write. Fix: move the folder out of --out"
            )
    for name, suffix in folder_files.items():
        entry = out_dir / name
        if not entry.exists() and not entry.is_symlink():
            continue
        if not entry.is_dir():
            raise OutDirError(
                f"{entry}: a file where the report writes its folder {name}/; the report does "
                "not delete what it did not write. Fix: move the file out of --out"
            )
        for item in sorted(entry.iterdir()):
            if item.is_dir() or item.suffix != suffix or item.name.startswith("."):
                raise OutDirError(
                    f"{item}: not a file the report writes ({name}/ holds only its *{suffix} "
                    f"files, replaced whole by each report); the report does not delete what "
                    f"it did not write. Fix: move it out of {entry}"
                )
