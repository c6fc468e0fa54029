"""Properties that theory decides, measured by orderlab.measure.properties."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orderlab.encodings import ENCODINGS
from orderlab.measure.properties import PROPERTIES, measure_properties

MAX_LEN, D_MODEL, HEADS = 32, 16, 4
BASELINE = Path(__file__).resolve().parents[3] / "results" / "properties"


@pytest.fixture(scope="module")
def measured():
    table = measure_properties(ENCODINGS.names(), MAX_LEN, D_MODEL, HEADS)
    return {(row.encoding, row.property): row for row in table.itertuples()}


def passes(measured, encoding: str, prop: str) -> bool:
    return measured[(encoding, prop)].verdict == "pass"


def test_every_encoding_gets_all_six_properties(measured):
    assert {p for (_, p) in measured} == set(PROPERTIES)
    assert {e for (e, _) in measured} == set(ENCODINGS.names())


@pytest.mark.parametrize("name", ["rope", "alibi", "t5", "xpos"])
def test_relative_encodings_are_relative_aware(measured, name):
    assert passes(measured, name, "relative-aware")
    assert measured[(name, "relative-aware")].figure < 1e-12


@pytest.mark.parametrize("name", ["sinusoidal", "learned"])
def test_absolute_encodings_are_not_relative_aware(measured, name):
    assert not passes(measured, name, "relative-aware")
    assert measured[(name, "relative-aware")].figure > 1e-3


@pytest.mark.parametrize("name", [n for n in ENCODINGS.names() if n != "none"])
def test_the_relative_flag_in_the_listing_agrees_with_the_measurement(measured, name):
    assert passes(measured, name, "relative-aware") == ENCODINGS.get(name).relative


def test_sinusoidal_is_bounded_with_norm_sqrt_half_d(measured):
    # every slot: sum over d/2 pairs of sin^2 + cos^2 = d/2, so ||PE[pos]|| = sqrt(16 / 2)
    assert passes(measured, "sinusoidal", "bounded")
    assert measured[("sinusoidal", "bounded")].figure == pytest.approx(8**0.5)


def test_alibi_is_not_bounded(measured):
    assert not passes(measured, "alibi", "bounded")


def test_learned_does_not_generalise_past_max_len(measured):
    row = measured[("learned", "generalises")]
    assert row.verdict == "fail"
    assert "longer than max_len=32" in row.note


@pytest.mark.parametrize("name", ["sinusoidal", "rope", "alibi", "t5", "xpos"])
def test_formula_encodings_generalise(measured, name):
    assert passes(measured, name, "generalises")


@pytest.mark.parametrize("name", ENCODINGS.names())
def test_every_encoding_is_deterministic(measured, name):
    assert passes(measured, name, "deterministic")
    assert measured[(name, "deterministic")].figure == 0


def test_no_encoding_gives_no_unique_codes(measured):
    assert not passes(measured, "none", "unique")


@pytest.mark.parametrize("name", ["sinusoidal", "rope", "learned", "alibi"])
def test_slot_codes_are_unique(measured, name):
    assert passes(measured, name, "unique")


def test_codes_equal_in_exact_arithmetic_are_not_unique():
    # CoPE clamps its counts at npos_max - 1 = 63, so distant slots share one code; distances taken
    # as ||a||^2 + ||b||^2 - 2ab (cdist's matmul mode) put them 2.98e-8 apart here, and "unique" passed
    row = measure_properties(["cope"], 80, 32, HEADS, seed=1).set_index("property").loc["unique"]
    assert row.figure == 0
    assert row.verdict == "fail"


def test_the_committed_properties_baseline_is_reproduced():
    settings = json.loads((BASELINE / "manifest.json").read_text())
    committed = pd.read_csv(BASELINE / "properties.csv")
    table = measure_properties(
        settings["encodings"], settings["max_len"], settings["d_model"], settings["n_heads"], settings["seed"]
    )
    assert table[["encoding", "property", "verdict"]].equals(committed[["encoding", "property", "verdict"]])
    # the CSV keeps 7 digits; figures at round-off level (1e-16) may differ in their last bits between machines
    pd.testing.assert_series_equal(table.figure, committed.figure, rtol=1e-6, atol=1e-12)


def test_untrained_learned_table_is_not_smooth_but_sinusoidal_is(measured):
    assert not passes(measured, "learned", "smooth")
    assert passes(measured, "sinusoidal", "smooth")


def test_properties_without_out_write_a_folder_of_their_own_never_the_committed_table(tmp_path: Path, monkeypatch):
    from typer.testing import CliRunner

    from orderlab.cli import app

    (tmp_path / "results" / "properties").mkdir(parents=True)
    committed = tmp_path / "results" / "properties"
    for name in ("properties.csv", "manifest.json"):
        (committed / name).write_bytes((BASELINE / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    args = ["properties", "-e", "none,rope", "--max-len", "4", "--d-model", "8", "--n-heads", "2", "-q"]
    assert CliRunner().invoke(app, args).exit_code == 0
    for name in ("properties.csv", "manifest.json"):
        assert (committed / name).read_bytes() == (BASELINE / name).read_bytes()  # untouched
    (written,) = [f for f in (tmp_path / "results").iterdir() if f.name != "properties"]
    assert written.name.startswith("properties-")
    assert json.loads((written / "manifest.json").read_text())["encodings"] == ["none", "rope"]
    assert CliRunner().invoke(app, args).exit_code == 0  # the same settings replace their own folder
    assert sorted(f.name for f in (tmp_path / "results").iterdir()) == sorted(["properties", written.name])
