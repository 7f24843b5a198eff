"""gte-base: Alibaba-NLP/gte-multilingual-reranker-base, remote code Alibaba-NLP/new-impl pinned.

Plan section "Rerankers": "sentence-transformers CrossEncoder, non-persistent buffers restored after
loading". The snapshot's config.json maps its classes to ``Alibaba-NLP/new-impl--modeling...`` (a
separate hub repository); transformers resolves that reference with ``code_revision``, so the code
comes from the local cache at the plan's ``code_revision`` and never from the hub's moving head.

Why the restore: transformers 5 builds models on the meta device and then materialises only the
tensors found in the checkpoint. Buffers registered with ``persistent=False`` are not in the
checkpoint, so for remote code written before that change they can stay uninitialised (arbitrary
memory) instead of holding what ``__init__`` computed (docs/field-notes.md "Remote-code models break across
transformers major versions"). new-impl's ``NewEmbeddings.__init__`` registers ``position_ids``
(``arange(max_position_embeddings)``) as a non-persistent buffer and calls ``self._init_rope(config)``,
whose rotary embedding registers ``inv_freq`` and the ``cos_cached``/``sin_cached`` tables the same
way. We re-create them by calling the remote code's own constructor paths again, so the values are
exactly what its ``__init__`` computes, then check they are finite. The deciding reference (model-card
code under transformers 4.57) is what shows that this restore is right.
"""

from __future__ import annotations

from typing import Any

from bench.core.errors import BenchError


def restore_non_persistent_buffers(model: Any) -> list[str]:
    """Re-run new-impl's buffer constructors on a loaded ``NewForSequenceClassification``.

    ``model`` is the transformers model (``CrossEncoder.model``). Returns the restored buffer names.
    Raises BenchError if the model does not have new-impl's layout (a different code revision).
    """
    # lazy: torch is heavy and is needed only here
    import torch

    backbone = getattr(model, "new", None)
    embeddings = getattr(backbone, "embeddings", None)
    if embeddings is None or not hasattr(embeddings, "_init_rope"):
        raise BenchError(
            "gte-base: the loaded model lacks new-impl's `new.embeddings._init_rope`; the remote code is not "
            "the pinned Alibaba-NLP/new-impl revision, so its buffers cannot be restored safely"
        )
    config = model.config
    device = next(model.parameters()).device
    restored: list[str] = []
    if "position_ids" in dict(embeddings.named_buffers(recurse=False)):
        # NewEmbeddings.__init__: torch.arange(config.max_position_embeddings), persistent=False
        embeddings.register_buffer(
            "position_ids", torch.arange(config.max_position_embeddings, device=device), persistent=False
        )
        restored.append("embeddings.position_ids")
    # from_pretrained constructs the model with the load dtype as torch's default dtype, so tables that
    # __init__ builds with the default dtype get that dtype; re-run the constructor the same way.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(next(model.parameters()).dtype)
    try:
        embeddings._init_rope(config)  # rebuilds rotary_emb: inv_freq, cos_cached, sin_cached
    finally:
        torch.set_default_dtype(previous)
    rotary = embeddings.rotary_emb
    rotary.to(device)
    for name, buf in rotary.named_buffers():
        if not torch.isfinite(buf).all():
            raise BenchError(f"gte-base: restored rotary buffer {name} is not finite")
        restored.append(f"embeddings.rotary_emb.{name}")
    return restored
