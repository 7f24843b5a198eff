"""``analysis simulate``: evidence that the plan's procedure is sound (beyond the plan).

Studies are generated on the real qrels (:mod:`analysis.simulation.synthetic`) and analysed with the study's
own code (:func:`analysis.reporting.study.analyse_stages`: sign-flip tests, Holm, wording, best model):

* Null: the first stage and all models have the same signal (no true difference). The family-wise error rate
  (FWER) of a family is the share of studies in which it rejects at least one hypothesis; the plan needs
  <= 0.05 for the vs-first-stage family. The vs-best family is reported as well: under the complete null its
  reference is chosen *after* seeing the data (the highest mean), which the plan's procedure does not adjust
  for, so its FWER is expected to exceed alpha; the simulation measures by how much.
* Power: one model's signal is calibrated so that its expected nDCG@10 is 2.0 points above the others'
  (first stage and the other models share the null signal). Power is the share of studies in which its
  comparison against the first stage is significant after Holm, and in which it is significantly better than
  every other model (vs-best family, when it is the best); "clearly better" rates are reported too (with a
  true difference of exactly 2.0 points they are near one half by construction).

Binomial standard errors accompany every rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.core.plan import CLEARLY_BETTER_POINTS
from analysis.reporting.study import RunResult, StageResult, analyse_stages
from analysis.simulation.synthetic import (
    Candidates,
    calibrate_signal,
    first_stage_order,
    rerank_table,
    system_scores,
)
from analysis.stats.metrics import Judgments, evaluate_table

__all__ = ["SimulationResult", "simulate"]


@dataclass(frozen=True)
class SimulationResult:
    studies: int
    models: int
    base_ndcg10: float
    null_signal: float
    effect_signal: float
    rates: dict[str, float]
    correlation: float = 0.5
    sd_effect_differences: float = 0.0  # mean per-query SD of effect-model minus a null model (nDCG@10)

    def as_dict(self) -> dict[str, Any]:
        n = self.studies
        return {
            "studies": n,
            "models": self.models,
            "base_ndcg10": self.base_ndcg10,
            "null_signal": self.null_signal,
            "effect_signal": self.effect_signal,
            "correlation": self.correlation,
            "sd_effect_differences": self.sd_effect_differences,
            "rates": {
                k: {"rate": v, "standard_error": math.sqrt(v * (1 - v) / n) if n else None}
                for k, v in sorted(self.rates.items())
            },
        }


def _one_study(
    c: Candidates,
    j: Judgments,
    rng: np.random.Generator,
    signals: Mapping[str, float],
    first_signal: float,
    depth: int,
    correlation: float,
) -> StageResult:
    first_scores = system_scores(c, first_signal, rng)
    common = rng.standard_normal(c.relevant.size)  # shared by the models of this study

    def model_scores(signal: float) -> np.ndarray:
        own = rng.standard_normal(c.relevant.size)
        return signal * c.relevant + math.sqrt(correlation) * common + math.sqrt(1 - correlation) * own

    rows = first_stage_order(c, first_scores)
    first = RunResult("hybrid-71k", None, None, "first", "", {})
    first.per_query = evaluate_table(j, rerank_table(c, rows, first_scores, depth), ["ndcg@10"])
    runs = []
    for model, signal in signals.items():
        r = RunResult("hybrid-71k", model, depth, model, "", {})
        r.per_query = evaluate_table(j, rerank_table(c, rows, model_scores(signal), depth), ["ndcg@10"])
        runs.append(r)
    for r in (first, *runs):
        r.means = {"ndcg@10": float(r.per_query["ndcg@10"].mean())}
    stage = StageResult("hybrid-71k", first, runs)
    analyse_stages([stage], len(j.qids), intervals=False)
    return stage


def simulate(
    qrels: Mapping[str, Mapping[str, int]],
    *,
    studies: int = 200,
    models: int = 9,
    base_ndcg10: float = 0.5,
    seed: int = 7,
    depth: int = 100,
    correlation: float = 0.5,
) -> SimulationResult:
    """Simulate ``studies`` null and ``studies`` effect studies; ``correlation`` is the share of the models'
    score noise that they have in common (rerankers of one stage tend to agree)."""
    if not 0 <= correlation < 1:
        raise ValueError("correlation must lie in [0, 1)")
    c = Candidates.from_qrels(qrels)
    j = Judgments.from_qrels(qrels)
    null_signal = calibrate_signal(c, j, base_ndcg10, seed=seed)
    effect_signal = calibrate_signal(c, j, base_ndcg10 + CLEARLY_BETTER_POINTS / 100, seed=seed + 1)
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(models)]
    counts = dict.fromkeys(
        (
            "fwer_vs_first_stage",
            "fwer_vs_best",
            "any_wording_not_on_par_null",
            "power_vs_first_stage",
            "power_vs_all_others",
            "clearly_better_than_first_stage",
            "winner_declared_null",
            "winner_declared_effect",
            "effect_model_is_best",
        ),
        0,
    )
    sds: list[float] = []
    for _ in range(studies):
        null = _one_study(c, j, rng, dict.fromkeys(names, null_signal), null_signal, depth, correlation)
        fam = {f["id"].rsplit("/", 1)[1]: f["comparisons"] for f in null.families}
        counts["fwer_vs_first_stage"] += any(x["significant"] for x in fam["vs-first-stage"])
        counts["fwer_vs_best"] += any(x["significant"] for x in fam["vs-best"])
        counts["any_wording_not_on_par_null"] += any(
            x["wording"] != "on par" for f in fam.values() for x in f
        )
        counts["winner_declared_null"] += any(null.winner.values())

        signals = {**dict.fromkeys(names[1:], null_signal), names[0]: effect_signal}
        eff = _one_study(c, j, rng, signals, null_signal, depth, correlation)
        fam = {f["id"].rsplit("/", 1)[1]: f["comparisons"] for f in eff.families}
        vs_first = next(x for x in fam["vs-first-stage"] if x["model"] == names[0])
        counts["power_vs_first_stage"] += vs_first["significant"] and vs_first["mean_difference"] > 0
        counts["clearly_better_than_first_stage"] += vs_first["wording"] == "clearly better"
        is_best = eff.best[depth] == names[0]
        counts["effect_model_is_best"] += is_best
        counts["power_vs_all_others"] += is_best and all(x["significant"] for x in fam["vs-best"])
        counts["winner_declared_effect"] += any(eff.winner.values())
        by_model = {r.model: r.per_query["ndcg@10"] for r in eff.runs}
        sds.append(float(np.std(by_model[names[0]] - by_model[names[1]])))
    rates = {k: v / studies for k, v in counts.items()} if studies else {}
    return SimulationResult(
        studies,
        models,
        base_ndcg10,
        null_signal,
        effect_signal,
        rates,
        correlation,
        float(np.mean(sds)) if sds else 0.0,
    )
