"""The speed guard's judgement: figures measured now against the recorded ones.

Pure functions, no clock: ``guard.py`` measures and calls these; the tests call them with planted figures.
Every figure is a time (seconds, lower is faster). Where the figure has an anchor measured in the same run
(a fixed workload that does not use the project's code), its *ratio* figure / anchor is what is judged: the
machine's load and the CPU kind slow both alike, so the ratio moves when the project's code does. Rules:

- A ratio more than ``MARGIN`` (25 %) above the recorded ratio is a slowdown: exit 1. When the run or the
  record was loaded, the margin is ``LOADED_MARGIN`` (50 %): two runs at a load of about 24 on 2 cores
  differed by up to 26 % in the lock, harness and status ratios (docs/performance.md, "The speed guard").
- The absolute time is judged too (same margin) only when the record was taken on the same CPU model and
  both runs were idle (1-minute load average at the start at most ``IDLE_LOAD_PER_CPU`` per CPU). A figure
  without an anchor is judged only then; otherwise it "cannot tell".
- No record for this CPU (model, instruction-set flags, all flags' digest and CPU count), a figure not
  measured or not recorded: "cannot tell", exit 3 (unless something is slower: exit 1).
- Otherwise exit 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MARGIN = 0.25
LOADED_MARGIN = 0.5
IDLE_LOAD_PER_CPU = 0.5
SLOWER, OK, FASTER, UNKNOWN = "SLOWER", "ok", "faster", "cannot tell"
EXIT_OK, EXIT_SLOWER, EXIT_UNKNOWN = 0, 1, 3
SCHEMA = 1


@dataclass(frozen=True)
class Figure:
    """One measured figure: seconds, the anchor's seconds in the same run (None: no anchor), CPU seconds
    where measured, and why ``value`` is None when it could not be measured."""

    name: str
    value: float | None
    anchor: float | None = None
    cpu: float | None = None
    reason: str | None = None
    what: str = ""

    @property
    def ratio(self) -> float | None:
        if self.value is None or self.anchor is None or self.anchor <= 0:
            return None
        return self.value / self.anchor

    def as_record(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "anchor": self.anchor,
            "ratio": self.ratio,
            "cpu": self.cpu,
            "what": self.what,
        }


@dataclass(frozen=True)
class Row:
    name: str
    now: float | None
    recorded: float | None
    change: float | None  # now / recorded, of the ratio where there is one, else of the absolute time
    absolute_change: float | None
    verdict: str
    note: str


def is_idle(machine: Mapping[str, Any]) -> bool:
    load, cpus = machine.get("load_start"), machine.get("cpus")
    return bool(load and cpus) and float(load[0]) <= IDLE_LOAD_PER_CPU * int(cpus)


def same_cpu(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("cpu_model", "flags", "flags_sha256", "cpus"))


def find_record(records: Sequence[Mapping[str, Any]], machine: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The recorded figures of this CPU, or None."""
    return next((r for r in records if same_cpu(r["machine"], machine)), None)


def _verdict(change: float, margin: float) -> str:
    if change > 1 + margin:
        return SLOWER
    return FASTER if change < 1 / (1 + margin) else OK


def judge(now: Figure, recorded: Mapping[str, Any] | None, *, absolute: bool, margin: float = MARGIN) -> Row:
    """One row of the table. ``absolute``: same CPU model and both runs idle, so absolute times count."""
    if now.value is None:
        return Row(now.name, None, None, None, None, UNKNOWN, f"not measured: {now.reason}")
    if recorded is None or recorded.get("value") is None:
        return Row(now.name, now.ratio or now.value, None, None, None, UNKNOWN, "no recorded figure")
    abs_change = now.value / recorded["value"] if absolute else None
    abs_verdict = _verdict(abs_change, margin) if abs_change is not None else None
    if now.ratio is not None and recorded.get("ratio") is not None:
        change = now.ratio / recorded["ratio"]
        verdict = _verdict(change, margin)
        note = "ratio to the anchor"
        if abs_verdict == SLOWER:
            verdict, note = SLOWER, "ratio to the anchor; absolute time (same CPU, both idle) is slower"
        elif abs_change is None:
            note += "; absolute time not judged (loaded or other CPU)"
        return Row(now.name, now.ratio, recorded["ratio"], change, abs_change, verdict, note)
    if abs_change is None:
        return Row(
            now.name,
            now.value,
            recorded["value"],
            None,
            None,
            UNKNOWN,
            "no anchor, and absolute times are judged only on the same CPU with both runs idle",
        )
    assert abs_verdict is not None
    return Row(now.name, now.value, recorded["value"], abs_change, abs_change, abs_verdict, "absolute time")


def margin_for(record: Mapping[str, Any], machine: Mapping[str, Any]) -> float:
    return MARGIN if is_idle(record["machine"]) and is_idle(machine) else LOADED_MARGIN


def compare(
    figures: Sequence[Figure],
    record: Mapping[str, Any] | None,
    machine: Mapping[str, Any],
    margin: float | None = None,
) -> tuple[list[Row], int]:
    """The table and the exit code (1 slower, 3 cannot tell, 0 otherwise). ``margin``: by default 25 %,
    50 % when the run or the record was loaded."""
    if record is None:
        rows = [
            Row(f.name, f.ratio or f.value, None, None, None, UNKNOWN, "no record for this CPU")
            for f in figures
        ]
        return rows, EXIT_UNKNOWN
    absolute = same_cpu(record["machine"], machine) and is_idle(record["machine"]) and is_idle(machine)
    margin = margin_for(record, machine) if margin is None else margin
    rows = [judge(f, record["figures"].get(f.name), absolute=absolute, margin=margin) for f in figures]
    if any(r.verdict == SLOWER for r in rows):
        return rows, EXIT_SLOWER
    return rows, EXIT_UNKNOWN if any(r.verdict == UNKNOWN for r in rows) else EXIT_OK


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def table(rows: Sequence[Row]) -> str:
    lines = [f"{'figure':<14} {'now':>10} {'recorded':>10} {'now/rec':>8}  verdict      note"]
    for r in rows:
        change = "-" if r.change is None else f"{r.change:.2f}x"
        lines.append(
            f"{r.name:<14} {_num(r.now):>10} {_num(r.recorded):>10} {change:>8}  {r.verdict:<12} {r.note}"
        )
    return "\n".join(lines)


def new_record(
    figures: Sequence[Figure], machine: Mapping[str, Any], provenance: Mapping[str, Any]
) -> dict[str, Any]:
    missing = [f"{f.name} ({f.reason})" for f in figures if f.value is None]
    if missing:
        raise ValueError(f"not recorded: figures not measured: {', '.join(missing)}")
    return {
        "machine": dict(machine),
        "loaded": not is_idle(machine),
        **provenance,
        "figures": {f.name: f.as_record() for f in figures},
    }


def merge(
    data: Mapping[str, Any], record: Mapping[str, Any], *, force: bool
) -> tuple[dict[str, Any], list[str]]:
    """``data`` with ``record`` replacing this CPU's record; the lines saying what changed. Refuses
    (ValueError) to replace an idle record with a loaded one unless ``force``."""
    records = list(data.get("records", []))
    old = find_record(records, record["machine"])
    if old is not None and not old.get("loaded", True) and record["loaded"] and not force:
        raise ValueError(
            "the recorded figures of this CPU are idle ones and this run was loaded (load "
            f"{record['machine']['load_start'][0]:.2f}); rerun idle, or pass --force"
        )
    changes = [
        f"record for {record['machine']['cpu_model']} ({'loaded' if record['loaded'] else 'idle'}, "
        f"load {record['machine']['load_start'][0]:.2f}): "
        + ("new" if old is None else f"replaces the one of {old.get('date')} ({old.get('commit')})")
    ]
    for name, fig in record["figures"].items():
        before = (old or {}).get("figures", {}).get(name, {})
        key = "ratio" if fig["ratio"] is not None else "value"
        changes.append(f"  {name}: {key} {_num(before.get(key))} -> {_num(fig[key])}")
    for name in sorted(set((old or {}).get("figures", {})) - set(record["figures"])):
        changes.append(f"  {name}: kept out of the new record (not measured in this run)")
    records = [r for r in records if r is not old] + [dict(record)]
    return {"schema": SCHEMA, "margin": MARGIN, "records": records}, changes


def markdown(records: Sequence[Mapping[str, Any]]) -> str:
    """The recorded figures as docs/performance.md's current table: one row per figure and CPU."""
    lines = [
        "| figure | what | time | anchor, same run | ratio | CPU | load (1 min), start | date, commit |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    for r in records:
        m = r["machine"]
        flags = m.get("flags") or {}
        top = [f for f in ("amx_int8", "avx512_vnni", "avx_vnni", "avx512f", "avx2") if flags.get(f)]
        # the two highest of these flags: two CPUs of the same model name kept apart
        cpu = f"{m['cpu_model']} x {m['cpus']} ({', '.join(top[:2]) or 'no AVX2'})"
        state = f"{m['load_start'][0]:.2f} ({'loaded' if r.get('loaded') else 'idle'})"
        when = f"{str(r.get('date'))[:16].replace('T', ' ')} UTC, {str(r.get('commit'))[:7]}"
        if r.get("dirty"):
            when += " (+ uncommitted changes)"
        for name, f in r["figures"].items():
            ratio = "-" if f["ratio"] is None else f"{f['ratio']:.3g}"
            anchor = "-" if f["anchor"] is None else _seconds(f["anchor"])
            lines.append(
                f"| `{name}` | {f.get('what', '')} | {_seconds(f['value'])} | {anchor} | {ratio} | "
                f"{cpu} | {state} | {when} |"
            )
    return "\n".join(lines)


def _seconds(x: float) -> str:
    if x < 1e-3:
        return f"{x * 1e6:.2f} µs"
    return f"{x * 1e3:.1f} ms" if x < 1 else f"{x:.2f} s"
