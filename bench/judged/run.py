"""``bench judged run``: every pair of a prepared packet through the judge, journalled, then published.

Journal (``<dir>/journal.jsonl``, ``bench.core.journal``: flushed and fsynced per record, torn last line
dropped on resume) keyed by the judge's model id, the prompt's SHA-256 and the pair number; in the journal's
four key fields that is ``stage="judged"``, ``model=<model id>``, ``depth=<pair>``, ``qid=<prompt SHA-256>``
(spelled out again as ``pair`` and ``prompt_sha256``). A rerun skips every pair already recorded for the same
model and prompt and never replays a stored answer as a new one; a changed prompt or model starts its own
records. Every HTTP attempt, including those of a pair whose retries ran out, is also appended to
``<dir>/attempts.jsonl``; ``<dir>/run.json`` records each session (settings, provenance, counts).

When every pair has a record, ``results/judged/labels.json`` is written: ids, labels and the judge's model
id (and the prompt's SHA-256 and settings), no texts.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from analysis.core.atomic import json_bytes, write_bytes_atomic, write_json_atomic
from bench.core import clock
from bench.core.errors import BenchError
from bench.core.hints import hint
from bench.core.journal import Journal, encode
from bench.core.plan import JUDGE_MODEL
from bench.core.progress import Progress
from bench.integrity.hashing import sha256_file
from bench.judged.judge import TIMEOUT_S, Judge, check_template
from bench.judged.packet import Prepared, load_prepared

JOURNAL = "journal.jsonl"
ATTEMPTS = "attempts.jsonl"
RUN = "run.json"
LABELS = "labels.json"
STAGE = "judged"
PROMPT_PATH = Path(__file__).with_name("prompt.txt")
KEY_ENV = "ANTHROPIC_API_KEY"


def make_client(*, base_url: str | None = None, timeout: float = TIMEOUT_S) -> Any:
    """The official client with our own retries (``max_retries=0``); the key only from the environment."""
    key = os.environ.get(KEY_ENV)
    if not key:
        raise BenchError(f"{KEY_ENV} is not set: the judge needs an Anthropic API key in the environment")
    # lazy: the anthropic client is heavy and needed only for judged calls
    import anthropic

    return anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=0, timeout=timeout)


def check_model(model: str) -> None:
    if model != JUDGE_MODEL:
        raise BenchError(f"unknown judge model {model!r}: the plan's judge is {JUDGE_MODEL!r}")


class _AttemptLog:
    """Appends one fsynced JSON line per HTTP attempt."""

    def __init__(self, path: Path, model: str, prompt_sha: str) -> None:
        self.path, self.model, self.prompt_sha = path, model, prompt_sha

    def __call__(self, attempt: Mapping[str, Any]) -> None:
        line = encode({"model": self.model, "prompt_sha256": self.prompt_sha, **attempt})
        with open(self.path, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _save_run(path: Path, data: Mapping[str, Any]) -> None:
    write_json_atomic(path, data)


def run_judge(
    directory: Path,
    *,
    client: Any,
    model: str = JUDGE_MODEL,
    prompt_path: Path = PROMPT_PATH,
    publish_dir: Path | None = None,
    session: Mapping[str, Any] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Judge every pair not yet in the journal; publish when complete. Returns the session's counts."""
    stream = stream if stream is not None else sys.stderr
    check_model(model)
    prepared = load_prepared(directory)
    template = prompt_path.read_text(encoding="utf-8")
    check_template(template, str(prompt_path))
    prompt_sha = sha256_file(prompt_path)
    judge = Judge(
        client, model, template, sleep=sleep, on_attempt=_AttemptLog(directory / ATTEMPTS, model, prompt_sha)
    )
    run_path = directory / RUN
    run = json.loads(run_path.read_text(encoding="utf-8")) if run_path.is_file() else {"sessions": []}
    entry: dict[str, Any] = {
        "started_utc": clock.utc_iso(),
        "ended_utc": None,
        "status": "running",
        "settings": {**judge.settings(), "prompt_sha256": prompt_sha, "prompt_file": prompt_path.name},
        **(dict(session) if session else {}),
    }
    run["sessions"].append(entry)
    _save_run(run_path, run)
    counts: dict[str, Any] = {"judged": 0, "already_done": 0}

    def end(status: str, **fields: Any) -> None:
        entry.update(ended_utc=clock.utc_iso(), status=status, **fields, **counts)
        _save_run(run_path, run)

    try:
        records = _judge_pairs(directory / JOURNAL, prepared, judge, prompt_sha, counts, stream)
    except KeyboardInterrupt:
        end("interrupted")
        raise
    except BaseException as exc:
        end("failed", error=f"{type(exc).__name__}: {exc}")
        raise
    labels = published_labels(
        prepared, records, model=model, prompt_sha=prompt_sha, settings=judge.settings()
    )
    counts.update(
        pairs=len(prepared.packet),
        parse_failures=sum(1 for r in records if r["status"] == "parse-failure"),
        unclear=sum(1 for r in records if r["label"] == "unclear"),
        billed_input_tokens=sum(r["billed_input_tokens"] for r in records),
        billed_output_tokens=sum(r["billed_output_tokens"] for r in records),
    )
    if publish_dir is not None:
        target, data = publish_dir / LABELS, _dump(labels)
        if target.is_file() and target.read_bytes() != data:
            end("complete, not published")
            raise BenchError(
                f"{target} holds other labels (another packet, prompt or model); results are never "
                "overwritten: move it away, or publish elsewhere with --publish"
            )
        write_bytes_atomic(target, data)
        counts["published"] = str(target)
    end("complete")
    return counts


def _judge_pairs(
    journal_path: Path,
    prepared: Prepared,
    judge: Judge,
    prompt_sha: str,
    counts: dict[str, Any],
    stream: TextIO,
) -> list[dict[str, Any]]:
    """Judge every pair of the packet the journal does not hold yet (``counts`` says how many, as it goes);
    returns the journal's records of this model and prompt."""
    model = judge.model
    with Journal(journal_path, stream=stream) as journal:
        todo = [p for p in prepared.packet if (STAGE, model, p["pair"], prompt_sha) not in journal]
        counts["already_done"] = len(prepared.packet) - len(todo)
        with Progress(
            "judged pairs", len(prepared.packet), "pairs", initial=counts["already_done"], stream=stream
        ) as progress:
            for item in todo:
                result = judge.judge(item["pair"], item["query"], item["passage"])
                journal.append(
                    {
                        "stage": STAGE,
                        "model": model,
                        "depth": item["pair"],
                        "qid": prompt_sha,
                        "pair": item["pair"],
                        "prompt_sha256": prompt_sha,
                        "utc": clock.utc_iso(),
                        **result,
                    }
                )
                counts["judged"] += 1
                progress.advance()
        return [r for r in journal if r["model"] == model and r["qid"] == prompt_sha]


def _dump(obj: Any) -> bytes:
    return json_bytes(obj)


def published_labels(
    prepared: Prepared,
    records: list[dict[str, Any]],
    *,
    model: str,
    prompt_sha: str,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    """``results/judged/labels.json``: ids, labels and the judge's model id only (no texts, no timing)."""
    by_pair = {int(r["pair"]): r for r in records}
    missing = sorted(set(prepared.key) - set(by_pair))
    if missing:
        raise BenchError(
            f"{prepared.directory}: pairs {missing[:5]} have no judgment yet; run `{hint('judged run')}`"
        )
    pairs = []
    for number in sorted(prepared.key):
        k, r = prepared.key[number], by_pair[number]
        pairs.append(
            {
                "pair": number,
                "qid": k["qid"],
                "docid": k["docid"],
                "groups": k["groups"],
                "miracl_label": k["control"],
                "label": r["label"],
                "parse_failure": r["status"] == "parse-failure",
            }
        )
    return {
        "format": "judged-labels/1",
        "judge_model": model,
        "prompt_sha256": prompt_sha,
        "temperature": settings["temperature"],
        "temperature_note": settings["temperature_note"],
        "thinking": settings["thinking"],
        "max_tokens": settings["max_tokens"],
        "packet_sha256": prepared.prepare["packet_sha256"],
        "key_sha256": prepared.prepare["key_sha256"],
        "seed": prepared.key_record["seed"],
        "groups": prepared.key_record["groups"],
        "pairs": pairs,
    }
