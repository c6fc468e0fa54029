"""plan/amounts.py: the words refusals and `validate --plan` put on bytes and seconds."""

from __future__ import annotations

import pytest

from orderlab.plan.amounts import duration, size


@pytest.mark.parametrize(("count", "words"), [
    (0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (99_949, "99.9 kB"), (100_000, "100 kB"), (8e12, "8.0 TB"),
    (2e18, "2,000 PB"),
])  # fmt: skip
def test_sizes_are_decimal_with_one_decimal_below_a_hundred_units(count, words):
    assert size(count) == words


@pytest.mark.parametrize(("seconds", "words"), [
    (0.04, "0.0 s"), (59.9, "59.9 s"), (90, "1.5 min"), (3600, "1.0 h"), (30 * 86400, "30.0 days"),
    (1.3e8, "4.1 years"),
])  # fmt: skip
def test_durations_take_the_largest_unit_that_fits(seconds, words):
    assert duration(seconds) == words
