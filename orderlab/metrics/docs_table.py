"""docs/metrics.md's two reference tables, made from the registry (a test checks the page holds them verbatim):
`python -m orderlab.metrics.docs_table` prints them."""

from __future__ import annotations

from typing import Final

from orderlab.metrics import METRIC_FAMILIES, Metric, Reduction, all_metrics, family_names

_REDUCTIONS: Final[dict[Reduction, str]] = {
    "max": "worst (max)", "mean": "mean", "rate": "rate (count)", "rank": "rank (of how many)",
    "corpus": "mean, median, share", "examples": "mean over examples (bootstrap)", "none": "none",
}  # fmt: skip


def markdown_tables() -> str:
    """The families, then every row metric."""
    lines = [
        "| `metrics:` entry | measured by default | rows it writes | what it asks |",
        "| --- | --- | --- | --- |",
    ]
    for family in (METRIC_FAMILIES.get(name) for name in family_names()):
        written = ", ".join(f"`{m.name}`" for m in all_metrics() if m.family == family.name)
        lines.append(f"| `{family.name}` | {'yes' if family.default else 'no'} | {written} | {family.doc} |")
    lines += [
        "",
        "| metric (CSV name) | definition | one row per | per head | models | summary | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in all_metrics():
        cells = [f"`{m.name}`", m.doc, m.rows, "yes" if m.per_head else "no", ", ".join(m.models)]
        lines.append("| " + " | ".join([*cells, _REDUCTIONS[m.reduction], _verdict_rule(m)]) + " |")
    return "\n".join(lines) + "\n"


def _verdict_rule(metric: Metric) -> str:
    if metric.flag is not None:
        return f"`{metric.flag[0]}` at 0, `{metric.flag[1]}` at 1"
    if metric.passing is None:
        return "not by round-off (see definition)" if metric.family else "no verdict column"
    noise = "" if metric.noise_from is None else f" of `{metric.noise_from}`"
    return f"`{metric.passing}` within the round-off{noise}"


if __name__ == "__main__":
    print(markdown_tables(), end="")
