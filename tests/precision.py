"""Run one spec in float32 and in float64 through the production path, recording every verdict's round-off line.

Shared by the tests that hold float32 and float64 verdicts to agreeing wherever float32 can resolve the effect.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

import orderlab.measure.noise
from orderlab.commands.run import write_experiment
from orderlab.metrics import METRICS
from orderlab.spec.load import load_spec
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE


@dataclass(frozen=True)
class Judged:
    """Every row the run judged, in the order it judged them: raw value, round-off line, verdict."""

    metrics: np.ndarray
    values: np.ndarray
    lines: np.ndarray
    verdicts: np.ndarray

    @property
    def sensitive(self) -> np.ndarray:
        return self.verdicts == ORDER_SENSITIVE


def judged_run(spec_text: str, dtype: str, folder: Path, monkeypatch) -> Judged:
    """Write the spec with model.dtype set, run it, and return what `measure.noise.judge` decided, row by row: by the
    run's own round-off, escalation off (re-measuring in the twin's precision judges some orders twice; the escalated
    path is held to float32's answers in tests/e2e/test_precision_truth.py)."""
    data = yaml.safe_load(spec_text)
    data["model"]["dtype"] = dtype
    data["escalate"] = False
    path = folder / f"{data['name']}_{dtype}.yaml"
    path.write_text(yaml.safe_dump(data))
    seen: list[tuple[np.ndarray, ...]] = []
    judge_rows = orderlab.measure.noise.verdicts

    def recording(metrics, values, lines, *resolution):
        decided = judge_rows(metrics, values, lines, *resolution)
        seen.append((np.asarray(metrics), np.asarray(values, dtype=float), np.asarray(lines, dtype=float), decided))
        return decided

    monkeypatch.setattr(orderlab.measure.noise, "verdicts", recording)
    write_experiment(load_spec(path), folder / f"out_{dtype}")
    monkeypatch.undo()
    judged = Judged(*(np.concatenate(part) for part in zip(*seen, strict=True)))
    # Only the rows round-off judges: a 0/1 flag (preferred or not) and an unjudged value (log P itself) are not.
    by_round_off = np.array(
        [METRICS.get(m).passing is not None and METRICS.get(m).flag is None for m in judged.metrics]
    )
    return Judged(*(part[by_round_off] for part in (judged.metrics, judged.values, judged.lines, judged.verdicts)))


def assert_precisions_agree(single: Judged, double: Judged) -> int:
    """float64 round-off is float32 round-off; an effect float32 resolves (over twice its line) it calls sensitive.

    Returns how many rows float32 resolved below the old flat line of 1000 eps (1.2e-4), to show the gain.
    """
    assert (single.metrics == double.metrics).all()  # the same rows, judged in the same order
    assert not (single.sensitive & ~double.sensitive).any(), "float32 calls round-off order-sensitive"
    resolvable = double.values > 2 * single.lines
    missed = resolvable & ~single.sensitive
    assert not missed.any(), f"float32 missed {missed.sum()} effects it resolves: {double.values[missed][:5]}"
    return int((resolvable & (double.values < 1000 * np.finfo(np.float32).eps)).sum())
