"""The rehearsal's judged-sample step and its refusal of the pitfalls experiment (plan sections "Judged
sample of unjudged passages" and "Pitfalls experiment").

``bench judged prepare``'s own code on the rehearsal's runs: the stand-in's vector-71k run (depth 100) is
the only group, in place of the plan's three hybrid-71k models and the keyword-full model (which need the
plan's rerankers and Typesense >= 26.0), plus the plan's control pairs from the same run. The packet and
sealed key go to ``<rehearsal>/judged/``. Without ``ANTHROPIC_API_KEY`` the step stops at the judge with a
one-line message saying what a run with a key would do; with a key it runs ``bench judged run``'s code and
publishes into ``<rehearsal>/judged/labels.json`` (never ``results/``), which the rehearsal report shows.

The pitfalls experiment is refused by name: it needs the Qwen3-Reranker-0.6B weights (the hub is not
reachable here) and keyword-71k (German stemming and stop words need Typesense >= 26.0).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from analysis.inputs.trec import read_qrels
from bench.core.plan import JUDGE_MODEL, QUALITY_DEPTH
from bench.judged.packet import write_prepared
from bench.judged.prepare import group_id, ranked
from bench.judged.run import KEY_ENV, make_client, run_judge
from bench.judged.selection import GroupSpec, select

STAGE = "vector-71k"
PITFALLS_REFUSED = (
    "pitfalls experiment refused: it needs the Qwen3-Reranker-0.6B weights (the hub is not reachable here); "
    "keyword-71k runs here only as the rehearsal's substitute (no stemming, stop words removed on the client)"
)


def judged_step(
    directory: Path,
    ran: Sequence[str],
    models: Sequence[str],
    qrels_path: Path,
    queries: Mapping[str, str],
    texts: Mapping[str, str],
    *,
    log: Callable[[str], None],
) -> dict[str, Any]:
    """Prepare the packet on the stand-in's vector-71k run; judge only if a key is set. Returns a record
    with ``lines`` for the report and the console."""
    if STAGE not in ran or not models:
        reason = f"judged sample refused: the stand-in's {STAGE} run is missing (the stage did not run)"
        return {"status": "refused", "lines": [reason, PITFALLS_REFUSED]}
    model = models[0]
    run_path = directory / "runs" / STAGE / f"{model}@{QUALITY_DEPTH}.trec"
    qrels = read_qrels(qrels_path)
    group = GroupSpec(group_id(STAGE, model), ranked(run_path, qrels))
    selection = select([group], qrels)
    out = directory / "judged"
    prepared = write_prepared(
        out,
        selection,
        queries,
        texts,
        {
            "rehearsal": f"groups: the stand-in's {STAGE} run in place of the plan's hybrid-71k and "
            "keyword-full groups; controls from the same run"
        },
    )
    n = prepared["pairs"]
    head = (
        f"judged sample: packet of {n} pairs ({group.group} in place of the plan's groups, plus control "
        f"pairs) at {out / 'packet.json'}, sealed key {out / 'key.json'}"
    )
    notes = [f"judged sample note: {note}" for note in prepared["notes"]]
    if not os.environ.get(KEY_ENV):
        stop = (
            f"judge not run: {KEY_ENV} is not set; with a key the rehearsal sends the {n} pairs one by one "
            f"to {JUDGE_MODEL} (the code of `bench judged run`) and writes {out / 'labels.json'} (ids and "
            "labels only) and the report's false-negative rates with Wilson intervals"
        )
        log(stop)
        return {"status": "stopped at the judge", "pairs": n, "lines": [head, *notes, stop, PITFALLS_REFUSED]}
    counts = run_judge(out, client=make_client(), publish_dir=out)
    done = (
        f"judged by {JUDGE_MODEL}: {counts['judged']} now, {counts['already_done']} before; "
        f"{counts['unclear']} unclear, {counts['parse_failures']} parse failures; "
        f"labels at {out / 'labels.json'}"
    )
    return {"status": "judged", "pairs": n, "counts": counts, "lines": [head, *notes, done, PITFALLS_REFUSED]}
