"""A test process's long-lived objects (the modules of torch, transformers and the code under test, the
session's fixtures) moved out of the garbage collector's sight, so that the full collections the code under
test runs on purpose (``bench.core.memory.free_device_memory`` before every model a phase loads, the
equality runner's release) look at what the test made, not at the whole process: with torch and
transformers imported one ``gc.collect()`` took 0.2 to 0.6 s, and a quality phase runs one per model and
session.

``freeze_long_lived()`` runs before a test: when more than ``LIMIT`` objects have appeared since the last
freeze (the first test, a test that imported torch), it collects once (nothing unreachable is frozen, so
nothing leaks) and freezes what is left (``gc.freeze``). Frozen objects are still freed when their last
reference goes; only a reference cycle among them waits until the process exits (``gc.unfreeze`` at exit:
the interpreter's last collection sees every object, and extension modules report no leaks). What a test
makes and drops is collected as before, so a test that checks that an object is gone after a collection
means the same.
"""

from __future__ import annotations

import atexit
import gc

LIMIT = 50_000  # objects tracked outside the frozen generation; a test's own garbage stays far below
_AT_EXIT: list[bool] = []


def freeze_long_lived(limit: int = LIMIT) -> bool:
    """Collect and freeze when more than ``limit`` objects are tracked outside the frozen generation; True
    when it froze."""
    if len(gc.get_objects()) <= limit:
        return False
    gc.collect()
    gc.freeze()
    if not _AT_EXIT:
        atexit.register(gc.unfreeze)
        _AT_EXIT.append(True)
    return True
