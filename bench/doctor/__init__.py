"""``bench doctor [STEP]``: is this machine ready for a step of docs/runbook.md?

A registry of small checks (``checks.py``, ``packages.py``, ``gpu.py``), each returning ok, a problem with
its fix, or "cannot tell" with the reason; ``steps.py`` maps every runbook step to the checks it needs and
runs them; ``cli.py`` is the thin command. Everything the checks read about the machine goes through one
seam, ``machine.Machine``, so that the tests can show a machine this one is not (an older driver, a full
disk, another package set). torch and NVML are imported inside the GPU checks only.
"""
