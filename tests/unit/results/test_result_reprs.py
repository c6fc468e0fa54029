"""API results that can hold thousands of parts repr in one line that counts them."""

from __future__ import annotations

import html
from pathlib import Path

from orderlab.commands.check import CheckResult
from orderlab.results.baseline_diff import SpecCheck
from orderlab.results.outcome import ShardOutcome


def test_a_shard_counts_its_units_instead_of_listing_them():
    outcome = ShardOutcome(Path("out/spec.shard-2-of-4"), 1_234, [object()] * 5_000, 0, (2, 4))  # type: ignore[list-item]
    shown = repr(outcome)
    assert shown == "ShardOutcome(shard=2/4, folder='out/spec.shard-2-of-4', rows=1,234, units=5,000, non_finite=0)"
    assert outcome._repr_html_() == "<div>" + html.escape(shown) + "</div>"


def test_a_check_counts_its_statuses_and_lists_specs_in_a_notebook():
    specs = [SpecCheck(Path(f"experiments/s{i}.yaml"), f"s{i}", "clean", "clean: 3 CSVs") for i in range(3)]
    result = CheckResult([*specs, SpecCheck(Path("experiments/x.yaml"), "<x>", "drift", "1 drifted row")])
    assert repr(result) == "CheckResult(exit_code=1, specs=4 (clean: 3, drift: 1))"
    assert "<td>&lt;x&gt;</td><td>drift</td>" in result._repr_html_()  # a spec's name escaped
