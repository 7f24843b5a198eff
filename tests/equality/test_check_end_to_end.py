"""``bench check-adapters bge-v2-m3`` end to end on a tiny BERT: MIRACLReranking files in the hub layout, the
real adapter, the deciding card reference (main environment) and the further one under transformers 4.57
(references/tf457), both as subprocesses (forked from a server per environment, tests/equality/conftest.py);
only the measurement guards are stubbed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.cli import cli
from bench.core.plan import REFERENCE_TRANSFORMERS_VERSION
from bench.equality import outcome
from bench.equality.results import outcome_for

pytestmark = pytest.mark.model


def test_check_adapters_bge_end_to_end(
    tiny_models: dict[str, Path],
    reranking_hub: Path,
    forked_main: Path,
    forked_tf457: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import bench.records.guard
    import bench.records.provenance

    monkeypatch.setenv("BENCH_HUB_DIR", str(reranking_hub))
    monkeypatch.setenv("BENCH_MODELS_DIR", str(tiny_models["root"]))
    monkeypatch.setattr(bench.records.guard, "preflight", lambda kind, **kw: {"kind": kind, "stub": True})
    monkeypatch.setattr("bench.records.codeversion.require_clean_code", lambda root=None: {})
    results = tmp_path / "results"
    res = CliRunner().invoke(
        cli, ["check-adapters", "bge-v2-m3", "--checks", str(results), "--device", "cpu"]
    )  # CPU in place of the default CUDA: the file of that setting, not the quality default's
    assert res.exit_code == 0, res.output
    payload = json.loads((results / "bge-v2-m3@cpu-float32.json").read_text())
    assert (payload["device"], payload["dtype"], payload["dtype_loaded"]) == ("cpu", "float32", "float32")
    assert payload["verdict"] == "rated" and payload["min_spearman"] > 0.9999
    assert len(payload["queries"]) == 20 and payload["queries"][0]["qid"] == "7000"
    assert payload["queries"][0]["source_qid"] == "dev_query0"
    assert payload["deciding_reference"]["label"] == "card-seqcls@main"
    assert payload["deciding_reference"]["versions"]["transformers"].startswith("5.")
    further = payload["further_references"][0]
    assert further["label"] == "card-seqcls@tf457" and further["status"] == "ran", further.get("reason")
    assert further["versions"]["transformers"].startswith(REFERENCE_TRANSFORMERS_VERSION + ".")
    assert further["passed"] is True  # the tiny BERT scores the same under transformers 4.57 and 5.5.4
    assert payload["data"]["id_map_matching"]["docs_by_position_text_checked"] == 2000
    assert payload["data"]["id_map_method"] == "de.gz"
    assert len(payload["data"]["files_sha256"]) == 4
    text = json.dumps(payload)
    assert "Titel" not in text and "hauptstadt" not in text  # ids and numbers only, never texts
    assert outcome_for("bge-v2-m3", results, "cpu")["rated"] is True
    assert not (results / "bge-v2-m3.json").exists() and outcome("bge-v2-m3", results)["missing"] is True
