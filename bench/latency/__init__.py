"""The latency phase (plan section "Latency"): GPU, CPU server, Voyage API and first stages.

Modules: ``timer`` (the clock around one call; CUDA-synchronised on GPU), ``host`` (host state and the
busy-host rule), ``gpu`` (NVML telemetry, the idle-GPU rule), ``telemetry`` (the background sampler),
``order`` (warm-up ids, fixed samples, seeded order), ``accuracy`` (scores while timing against the quality
run), ``harness`` (one atomic block), ``callers`` (local adapters), ``api`` (Voyage), ``firststage``
(Typesense query times), ``presets`` and ``cli`` (the ``bench latency`` commands). The file format and its
reader live in ``analysis.latency``.
"""
