"""`orderlab validate --plan`'s text: the plan's data (plan/estimate.PricedPlan) as aligned lines, one per sweep
combination and one for the whole run, under the line that names the device it was priced on."""

from __future__ import annotations

from pathlib import Path

from orderlab.plan.amounts import duration, size
from orderlab.plan.cost import Estimate, run_seconds
from orderlab.plan.estimate import PricedPlan

# Two header lines, so that a plan fits 80 columns: a group's label over its columns, then each column's own.
PLAN_HEADER = ["", "chunk", "peak", "sequences", "time", "rows", "size", "rows", "size"]
PLAN_GROUPS = {"memory": (1, 3), "metrics.csv": (5, 7), "attention.csv": (7, 9)}  # label -> its columns [start, end)


def validated_lines(path: Path, name: str, priced: PricedPlan | None) -> list[str]:
    """`validate`'s lines for a spec it accepted: `path: ok (name)`, then with --plan its plan, indented."""
    return [f"{path}: ok ({name})", *(f"  {line}" for line in (plan_lines(priced) if priced else []))]


def plan_lines(priced: PricedPlan) -> list[str]:
    """`validate --plan`'s lines for one spec: the device priced, the plan's table on it, and on a GPU whether the
    weights and the largest working set fit the memory free on the card."""
    device, dtype, free = priced.device, priced.dtype, size(priced.device.memory)
    where = f"{device.name}: {device.rates[dtype].flops / 1e9:,.0f} GFLOP/s matmul in {dtype}, {free} free"
    lines = [f"priced on {where}", f"(measured once, cached in {priced.rates_file})", *plan_table(priced.estimates)]
    if not priced.fits:
        lines.append(f"does not fit: needs ~{size(priced.on_card)} on {device.name}, which has {free} free")
    if priced.patching is not None:
        cost = priced.patching
        lines.append(f"patching (api.patch): {cost.sequences:,} sequences in {cost.passes:,} passes, "
                     f"~{duration(cost.seconds)}, {cost.rows:,} rows")  # fmt: skip
    return lines


def plan_table(estimates: list[Estimate]) -> list[str]:
    """One aligned line per sweep combination (none without a sweep), then the whole run."""
    lines = [_plan_row(e.name, e.chunk_bytes, e.peak_bytes, e.sequences, _time(e.total_seconds, e.escalation_seconds),
                       e.metrics_rows, e.metrics_bytes.amount, e.attention_rows, e.attention_bytes.amount)
             for e in estimates if e.columns]  # fmt: skip
    most = run_seconds(estimates)
    lines.append(_plan_row(
        "whole run", max(e.chunk_bytes for e in estimates), max(e.peak_bytes for e in estimates),
        sum(e.sequences for e in estimates), _time(most, most - run_seconds(estimates, remeasured=0.0)),
        sum(e.metrics_rows for e in estimates), sum(e.metrics_bytes.amount for e in estimates),
        sum(e.attention_rows for e in estimates), sum(e.attention_bytes.amount for e in estimates),
    ))  # fmt: skip
    table = _aligned([PLAN_HEADER, *lines], PLAN_GROUPS)
    if any(" to " in row[4] for row in lines):
        table.append("time: 'to' if every order is measured again in a finer precision (escalate)")
    return table


def _time(most: float, escalation: float) -> str:
    """'~2.7 s', or '~2.7 s to 5.1 s' where escalation may add up to `escalation` seconds."""
    least, at_most = duration(most - escalation), duration(most)
    return f"~{least}" + (f" to {at_most}" if at_most != least else "")


def _plan_row(name: str, chunk: float, peak: float, sequences: int, time: str, rows: float, row_bytes: float,
              maps: float, map_bytes: float) -> list[str]:  # fmt: skip
    attention = [f"{maps:,.0f}", size(map_bytes)] if maps else ["-", "-"]  # no attention.csv
    return [name, size(chunk), size(peak), f"{sequences:,}", time, f"{rows:,.0f}", size(row_bytes),
            *attention]  # fmt: skip


def _aligned(rows: list[list[str]], groups: dict[str, tuple[int, int]]) -> list[str]:
    """Columns padded to their widest cell (the first to the left, numbers to the right), under a line that puts each
    group's label over its columns, right-aligned (the group's last column widened where the label is wider)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for label, (start, end) in groups.items():
        widths[end - 1] += max(0, len(label) - _span(widths, start, end))
    labels, column = [], 0
    for label, (start, end) in sorted(groups.items(), key=lambda group: group[1]):
        labels += [" " * width for width in widths[column:start]] + [label.rjust(_span(widths, start, end))]
        column = end
    return ["  ".join(labels).rstrip()] + [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths,
                  strict=True))).rstrip() for row in rows]  # fmt: skip


def _span(widths: list[int], start: int, end: int) -> int:
    """The width of columns [start, end) and the gaps between them."""
    return sum(widths[start:end]) + 2 * (end - start - 1)
