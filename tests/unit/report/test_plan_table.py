"""report/plan_table.py: `validate --plan`'s text from the plan's data."""

from __future__ import annotations

from pathlib import Path

from orderlab.plan.device import Device, Rate
from orderlab.plan.estimate import PricedPlan, estimate
from orderlab.report.plan_table import plan_lines, validated_lines
from orderlab.spec.schema import Spec

SPEC = Spec.model_validate({"model": {"n_layers": [1, 2]}, "inputs": [{"sentence": "the dog bit the man"}]})
RATE = {"float64": Rate(flops=2e10, call_seconds=1e-6)}


def lines(device: Device) -> list[str]:
    return plan_lines(PricedPlan(device, "float64", Path("rates.json"), estimate(SPEC, "spec.yaml", device)))


def test_the_device_then_a_line_per_combination_then_the_whole_run():
    shown = lines(Device("cpu", "a cpu", 10**10, RATE))
    device = "a cpu: 20 GFLOP/s matmul in float64, 10.0 GB free"
    assert shown[:2] == [f"priced on {device}", "(measured once, cached in rates.json)"]
    assert [line.split()[0] for line in shown[4:]] == ["n_layers=1", "n_layers=2", "whole"]
    assert len({len(line) for line in shown[3:]}) == 1  # aligned: every column padded to its widest cell
    assert max(len(line) for line in shown) <= 80  # a terminal's width


def test_each_group_label_ends_over_its_last_column_widened_where_the_label_is_wider():
    groups, header = lines(Device("cpu", "a cpu", 10**10, RATE))[2:4]  # no attention.csv: its columns hold "-"
    for label, last in (("memory", "peak"), ("metrics.csv", "size"), ("attention.csv", "size")):
        end = groups.index(label) + len(label)
        assert header[:end].endswith(last), (groups, header)
    assert len(groups) == len(header)  # "attention.csv" wider than "rows  size": the last column widened to it


def test_a_card_too_small_for_the_run_is_said_last():
    assert lines(Device("cuda", "a card", 10**4, RATE))[-1].startswith("does not fit: needs ~")
    assert not lines(Device("cuda", "a card", 10**10, RATE))[-1].startswith("does not fit")
    assert not lines(Device("cpu", "a cpu", 10**4, RATE))[-1].startswith("does not fit")  # the host's check is limits'


def test_validate_says_ok_and_indents_the_plan_under_it():
    device = Device("cpu", "a cpu", 10**10, RATE)
    priced = PricedPlan(device, "float64", Path("rates.json"), estimate(SPEC, "spec.yaml", device))
    assert validated_lines(Path("s.yaml"), "s", None) == ["s.yaml: ok (s)"]
    assert validated_lines(Path("s.yaml"), "s", priced) == ["s.yaml: ok (s)", *(f"  {line}" for line in lines(device))]
