"""Two GPU checks of ``bench doctor`` beyond the matrix product: the attention kernel the
models run (scaled dot-product attention with a padding mask, fp16 and bf16) against a float64 CPU
reference, and the GPU's free memory against the largest local model's weights (a card that also drives a
display has less than its size). Both go through the machine seam (``Machine.attention``,
``Machine.gpu_memory``, ``Machine.model_weights``), so the tests show both sides without a GPU."""

from __future__ import annotations

from bench.core import paths, plan
from bench.doctor.machine import Machine, Unreadable
from bench.doctor.outcome import Outcome, cannot_tell, ok, problem
from bench.rerankers import snapshots

# ``gpu_sdpa``: batch x heads x length x head size as in the models' layers; keys after each row's length
# are padding (masked out, as an attention mask of a left- or right-padded batch does). The reference is the
# float64 product of the same dtype-rounded inputs on the CPU; tolerance on max|gpu - ref| / max|ref|: fp16
# 2e-3, bf16 1.6e-2 (torch.testing's rtol for bf16; fp16's 1e-3 doubled for the softmax's extra rounding).
SDPA_SHAPE = (4, 8, 128, 64)
SDPA_RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2}
# Free memory the largest model needs besides its weights: the CUDA context, the allocator's blocks and the
# activations of a chunk of k = 100 pairs. A margin chosen for the check, not a measurement: the latency run
# settles its chunk size on the card itself and records the peak (bench.latency.run).
HEADROOM_BYTES = 2 * 2**30


def gpu_sdpa(device: str = "cuda") -> list[tuple[str, float, float]]:
    """(dtype, max|SDPA on ``device`` - ref| / max|ref|, rtol) per dtype: see ``SDPA_RTOL``; NaN counts as
    failure (a masked row gone wrong)."""
    # lazy: torch only on a GPU check
    import torch
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    b, h, n, d = SDPA_SHAPE
    lengths = torch.tensor([n, n - 17, n // 2, 9])  # one full row, three padded
    mask = (torch.arange(n).view(1, 1, 1, n) < lengths.view(b, 1, 1, 1)).expand(b, 1, n, n)
    out = []
    for name, rtol in SDPA_RTOL.items():
        dtype = getattr(torch, name)
        q, k, v = ((torch.rand(b, h, n, d, generator=gen) * 2 - 1).to(dtype) for _ in range(3))
        ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
        got = F.scaled_dot_product_attention(
            q.to(device), k.to(device), v.to(device), attn_mask=mask.to(device)
        )
        diff = (got.double().cpu() - ref).abs().max()
        err = float(diff / ref.abs().max()) if torch.isfinite(diff) else float("inf")
        out.append((name, err, rtol))
    return out


def attention(m: Machine, step: str) -> list[Outcome]:
    try:
        t = m.torch()
    except Unreadable as exc:
        return [cannot_tell("attention", str(exc))]
    if not t.available:
        return [cannot_tell("attention", "no CUDA GPU to run attention on (see the gpu check)")]
    try:
        results = (m.attention or gpu_sdpa)()
    except Exception as exc:  # a CUDA error here is the finding: the models' attention kernel does not run
        return [
            problem(
                "attention",
                "scaled dot-product attention with a padding mask failed on the GPU "
                f"({type(exc).__name__}: {exc})",
                "use a torch build with kernels for this GPU (a uv.lock change: record it in DEVIATIONS.md)",
            )
        ]
    shape = "x".join(map(str, SDPA_SHAPE))
    out = []
    for name, err, rtol in results:
        text = (
            f"{name} SDPA {shape} with padding mask: GPU vs CPU max error {err:.2e} of max|ref| "
            f"(limit {rtol:g})"
        )
        out.append(
            ok("attention", text)
            if err <= rtol
            else problem("attention", text, "check the torch build and the GPU before measuring")
        )
    return out


def read_gpu_memory() -> tuple[int, int]:
    """(free, total) bytes of GPU 0 as the CUDA driver reports them (other processes and a display count)."""
    try:
        # lazy: torch only on a GPU check
        import torch
    except ImportError as exc:
        raise Unreadable(f"torch cannot be imported ({exc})") from exc
    if not torch.cuda.is_available():
        raise Unreadable("no CUDA GPU (torch.cuda.is_available() is False)")
    free, total = torch.cuda.mem_get_info(0)
    return int(free), int(total)


def read_model_weights() -> dict[str, int]:
    """Model id -> bytes of its weight files (``*.safetensors``, ``*.bin``) in the pinned snapshot, for the
    local models whose snapshot is on this machine."""
    out: dict[str, int] = {}
    for mid in plan.LOCAL_RERANKERS:
        spec = plan.RERANKERS[mid]
        if not spec.revision:
            continue
        folder = snapshots.snapshot_path(spec.model, spec.revision, paths.models_dir())
        if folder.is_dir():
            files = [f for pattern in ("*.safetensors", "*.bin") for f in folder.rglob(pattern)]
            out[mid] = sum(int(f.stat().st_size) for f in files)
    return out


def _gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"


def gpu_memory(m: Machine, step: str) -> list[Outcome]:
    weights = (m.model_weights or read_model_weights)()
    if not weights:
        return [
            cannot_tell(
                "gpu-memory", "no model snapshot on this machine to size (runbook step 3 fetches them)"
            )
        ]
    largest = max(weights, key=lambda k: weights[k])
    need = weights[largest] + HEADROOM_BYTES
    try:
        free, total = (m.gpu_memory or read_gpu_memory)()
    except Unreadable as exc:
        return [cannot_tell("gpu-memory", str(exc))]
    text = (
        f"{largest}'s weights {_gib(weights[largest])} + {_gib(HEADROOM_BYTES)} headroom need {_gib(need)}; "
        f"the GPU has {_gib(free)} free of {_gib(total)}"
    )
    if need > free:
        return [
            problem(
                "gpu-memory",
                text,
                "stop what else holds GPU memory (a desktop session on this card, another process: "
                "nvidia-smi lists them), or drive the display from another GPU",
            )
        ]
    return [ok("gpu-memory", text)]
