"""summary.csv's accuracy of minimal pairs per phenomenon and UID (measure/summaries.probe_rates): each group's rate
over the pairs it decides, a tie left out and counted apart, and the unweighted mean over groups beside the mean
over pairs."""

from __future__ import annotations

import pandas as pd
import pytest

from orderlab.measure.summaries import probe_rates
from orderlab.vocabulary.verdict_words import TIE


def test_groups_rates_leave_ties_out_and_the_mean_over_groups_weighs_each_once():
    # phenomenon a: 1, 1, tie -> 2/2; phenomenon b: 0, 1, 0, 0 -> 1/4
    values = [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    verdicts = ["", "", TIE, "", "", "", ""]
    phenomena = ["a", "a", "a", "b", "b", "b", "b"]
    uids = ["a1", "a1", "a2", "b1", "b1", "b1", "b2"]
    rows = pd.DataFrame({"case": "probe", "encoding": "e", "metric": "minimal_pair_preferred", "value": values,
                         "verdict": verdicts, "phenomenon": phenomena, "uid": uids})  # fmt: skip
    table = probe_rates(rows, ["e"]).set_index(["case", "subject"])
    assert table.loc[("probes", "all 7 probes"), ["e", "permutations", "ties"]].tolist() == [3 / 6, 6, 1]
    assert table.loc[("phenomenon", "a"), ["e", "permutations", "ties"]].tolist() == [1.0, 2, 1]
    assert table.loc[("phenomenon", "b"), ["e", "permutations", "ties"]].tolist() == [0.25, 4, 0]
    mean = table.loc[("probes", "mean over 2 phenomena")]
    assert mean["e"] == pytest.approx((1.0 + 0.25) / 2) and pd.isna(mean["permutations"]) and mean["ties"] == 1
    # a2 is all ties: no rate, and the mean over UIDs is over those that have one (a1 1, b1 1/3, b2 0)
    assert pd.isna(table.loc[("uid", "a2"), "e"]) and table.loc[("uid", "a2"), "ties"] == 1
    assert table.loc[("probes", "mean over 4 UIDs"), "e"] == pytest.approx((1.0 + 1 / 3 + 0.0) / 3)


def test_pairs_without_groups_give_the_one_row_over_all_of_them():
    rows = pd.DataFrame({"case": "probe", "encoding": ["e", "e"], "metric": "minimal_pair_preferred",
                         "value": [1.0, 0.0], "verdict": ""})  # fmt: skip
    assert probe_rates(rows, ["e"])["subject"].tolist() == ["all 2 probes"]


def test_the_terminal_shows_the_groups_and_leaves_each_pair_to_summary_csv():
    from orderlab.report.terminal import by_group_only, plain_text, summary_tables

    rows = pd.DataFrame({"case": "probe", "encoding": "e", "metric": "minimal_pair_preferred", "value": [1.0, 0.0],
                         "verdict": "", "phenomenon": ["a", "b"], "uid": ["a1", "b1"]})  # fmt: skip
    pair = {"case": "probe", "subject": "dogs bark vs dogs barks", "metric": "minimal_pair_preferred", "e": 1.0,
            "e verdict": ""}  # fmt: skip
    summary = pd.concat([pd.DataFrame([pair]), probe_rates(rows, ["e"])], ignore_index=True)
    (table,) = summary_tables(by_group_only(summary), ["e"], "pairs", "float64", 80)
    text = " ".join(plain_text(table, 80).split())  # the caption wraps
    assert "phenomenon a" in text and "UID b1" in text and "mean over 2 phenomena" in text
    assert "dogs bark vs" not in text and "each minimal pair's row: summary.csv" in text
    assert by_group_only(summary[summary["case"] == "probe"]).equals(summary[summary["case"] == "probe"])
