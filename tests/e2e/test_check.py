"""`orderlab check` against committed baselines: drift is found and named, clean passes, --update heals."""

from __future__ import annotations

import json
import math
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from htmlcheck import parse
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.report.terminal import STACK_KEY, drift_key
from orderlab.results.baseline_diff import (
    BaselineError,
    Tolerances,
    compare_csv,
    default_tolerances,
    layout_of,
    read_csv,
    tolerances_for,
)
from orderlab.results.junit import Case, junit_xml
from orderlab.spec.load import load_spec

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("dog_bites_man", "cat_chased_dog")  # the core's experiments; others may be added beside them
# A row of dog_bites_man that is far from zero, so an edit in its third digit is drift under any tolerance.
EDITED_ROW = "permutation,dog bites man,rope,2 1 0,man bites dog,2,,invariance_mean,"
SUMMARY_ROW = "permutation,dog bites man,invariance_first,"  # its sinusoidal cell is 1.216679e+00
ATTENTION_ROW = "rope,0,1,0,0,1,"  # one attention weight of the input as written

runner = CliRunner()


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The core's shipped specs with baselines made by `check --update`, once per module.

    Made fresh rather than copied from results/, so these tests prove the tool whatever state the
    committed baselines are in; the committed ones are checked by `orderlab check` in `make test`.
    """
    root = tmp_path_factory.mktemp("baselines")
    (root / "experiments").mkdir()
    for name in SHIPPED:
        shutil.copy(ROOT / "experiments" / f"{name}.yaml", root / "experiments")
    result = runner.invoke(app, ["check", "--update", str(root / "experiments"), "--results", str(root / "results")])
    assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def project(baselines: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary copy of the specs and their baselines, as the working directory."""
    for folder in ("experiments", "results"):
        shutil.copytree(baselines / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def check(*args: str):
    return runner.invoke(app, ["check", *args])


def edit_cell(path: Path, row_prefix: str, column: str, new_value: str) -> str:
    """Replace one cell of the one row starting with row_prefix; return the old cell text."""
    lines = path.read_text().splitlines(keepends=True)
    at = lines[0].rstrip("\n").split(",").index(column)
    (index,) = [i for i, line in enumerate(lines) if line.startswith(row_prefix)]
    cells = lines[index].rstrip("\n").split(",")
    old, cells[at] = cells[at], new_value
    lines[index] = ",".join(cells) + "\n"
    path.write_text("".join(lines))
    return old


def csv_text(*rows: str, header: str = "key,value,verdict") -> str:
    return "\n".join([header, *rows]) + "\n"


# --- the comparison --------------------------------------------------------------------------------


def test_default_tolerances_come_from_the_dtype_and_the_csv_precision():
    # float64: atol = 1000 * 2.2e-16; rtol cannot be finer than 2 units of the 7th digit
    assert default_tolerances("float64") == Tolerances(rtol=2e-6, atol=pytest.approx(2.22e-13, rel=1e-2))
    # float32: both are 1000 * 1.19e-7
    assert default_tolerances("float32").atol == pytest.approx(1.19e-4, rel=1e-2)
    assert default_tolerances("float32").rtol == default_tolerances("float32").atol


def test_round_off_near_zero_is_not_drift_but_a_real_change_is():
    tol = default_tolerances("float64")
    assert tol.allows(3.5e-16, 1.1e-16)  # both round-off: relative change 70%, still within atol
    assert tol.allows(1.209642, 1.209643)  # one unit in the last printed digit
    assert not tol.allows(1.209642, 1.209652)
    assert not tol.allows(0.0, 1e-3)


def test_nan_matches_only_nan_and_infinity_only_itself():
    tol = Tolerances(rtol=1.0, atol=1.0)
    assert tol.allows(math.nan, math.nan)
    assert not tol.allows(math.nan, 0.0)
    assert tol.allows(math.inf, math.inf)
    assert not tol.allows(math.inf, 1e300)


def test_identical_values_match_under_any_tolerance():
    assert Tolerances(rtol=math.inf, atol=0.0).allows(0.0, 0.0)  # inf * 0 is NaN; equal is still equal
    assert Tolerances(rtol=0.0, atol=0.0).allows(1.5, 1.5)


def test_missing_extra_and_changed_rows_are_all_drift():
    baseline = csv_text("a,1.000000e+00,x", "b,2.000000e+00,x")
    fresh = csv_text("a,1.500000e+00,x", "c,3.000000e+00,x")
    comparison = compare_csv(baseline, fresh, "results/t/t.csv", default_tolerances("float64"))
    assert [(d.key, d.kind) for d in comparison.drifted] == [
        (("a",), "changed"),
        (("b",), "missing"),
        (("c",), "extra"),
    ]
    assert comparison.drifted[0].columns == ("value",)
    assert comparison.drifted[0].abs_diff("value") == 0.5
    assert comparison.drifted[0].rel_diff("value") == 0.5
    assert comparison.describe() == "t.csv: 1 changed, 1 missing, 1 extra of 2 rows"


def test_a_flip_at_the_round_off_line_within_tolerance_is_not_drift():
    """Round-off (written 0) on one CPU, just above the measured line on another: the value moved by noise."""
    baseline = csv_text("k,0.000000e+00,equivariant")
    assert not compare_csv(baseline, csv_text("k,2.300000e-15,order-sensitive"), "t.csv", TIGHT).drifted
    wide = "case,s,rope,rope verdict"
    baseline = csv_text("permutation,k,0.000000e+00,invariant", header=wide)
    fresh = csv_text("permutation,k,1.000000e-15,order-sensitive", header=wide)
    assert not compare_csv(baseline, fresh, "t.csv", TIGHT).drifted


@pytest.mark.parametrize(
    ("old", "new", "columns"),
    [
        ("0.000000e+00,equivariant", "2.500000e-01,order-sensitive", ("value", "verdict")),  # a real effect appeared
        ("0.000000e+00,equivariant", "nan,non-finite", ("value", "verdict")),
        ("0.000000e+00,equivariant", "0.000000e+00,non-finite", ("verdict",)),
        ("1.000000e-15,order-sensitive", "1.000000e-15,non-finite", ("verdict",)),
    ],
)
def test_any_other_verdict_change_is_drift(old, new, columns):
    (drift,) = compare_csv(csv_text(f"k,{old}"), csv_text(f"k,{new}"), "t.csv", TIGHT).drifted
    assert drift.columns == columns


TIGHT = Tolerances(rtol=2e-6, atol=2.2e-13)


def test_empty_value_cell_reads_as_nan_and_matches_only_an_empty_cell():
    tol = default_tolerances("float64")
    assert not compare_csv(csv_text("k,,x"), csv_text("k,,x"), "t.csv", tol).drifted
    (drift,) = compare_csv(csv_text("k,,x"), csv_text("k,0.000000e+00,x"), "t.csv", tol).drifted
    assert drift.columns == ("value",)


SUMMARY_HEADER = "case,subject,metric,none,rope,none verdict,rope verdict"


def test_wide_summary_is_keyed_on_its_text_columns_and_compares_every_encoding():
    baseline = csv_text(
        "permutation,dog bites man,equivariance,4.121314e-16,1.747729e-01,equivariant,order-sensitive",
        "permutation,dog bites man,invariance_first,1.464257e+00,1.464257e+00,order-sensitive,order-sensitive",
        header=SUMMARY_HEADER,
    )
    fresh = csv_text(
        "permutation,dog bites man,equivariance,1.000000e-16,1.747729e-01,equivariant,invariant",  # round-off; a word
        "permutation,dog bites man,invariance_first,1.464257e+00,1.500000e+00,order-sensitive,order-sensitive",
        header=SUMMARY_HEADER,
    )
    comparison = compare_csv(baseline, fresh, "results/d/summary.csv", default_tolerances("float64"))
    assert comparison.key_columns == ["case", "subject", "metric"]
    assert [(d.key[-1], d.columns) for d in comparison.drifted] == [
        ("equivariance", ("rope verdict",)),
        ("invariance_first", ("rope",)),
    ]


def test_integer_and_text_columns_form_the_key_and_float_columns_are_values():
    header = "encoding,sentence_id,sentence,words,mean_similarity,share_above"
    text = csv_text("trained,3,Dogs bark.,2,8.313592e-01,0.000000e+00", header=header)
    layout = layout_of(read_csv(text, "fresh"), read_csv(text, "baseline"))
    assert layout.key == ("encoding", "sentence_id", "sentence", "words")
    assert layout.numeric == {"mean_similarity", "share_above"}


def test_a_float_column_joins_the_key_when_the_rows_need_it_to_be_told_apart():
    header = "encoding,base,value"
    baseline = csv_text("rope,1.000000e+04,1.000000e+00", "rope,5.000000e+05,2.000000e+00", header=header)
    fresh = csv_text("rope,1.000000e+04,1.000000e+00", "rope,5.000000e+05,3.000000e+00", header=header)
    comparison = compare_csv(baseline, fresh, "t.csv", default_tolerances("float64"))
    assert comparison.key_columns == ["encoding", "base"]
    assert [d.key for d in comparison.drifted] == [("rope", "5.000000e+05")]


def test_drift_keys_name_swept_columns_and_read_any_table():
    stack = ("permutation", "dog bites man", "rope", "2 1 0", "man bites dog", "1", "0", "attention_equivariance")
    names = ["causal", *STACK_KEY]
    assert drift_key(("True", *stack), names) == (
        "dog bites man -> man bites dog [2 1 0]\ncausal=True, rope, layer 1, head 0, attention_equivariance"
    )
    assert drift_key(
        ("3", "2", "zero", "1", "similarity_cls"), ["sentence_id", "words", "encoding", "shuffle", "metric"]
    ) == ("sentence_id=3, words=2, encoding=zero, shuffle=1, metric=similarity_cls")


def test_spec_check_section_sets_tolerances_and_the_command_line_wins(tmp_path: Path):
    spec = tmp_path / "s.yaml"
    spec.write_text("inputs: [{sentence: a b}]\nmodel: {dtype: float32}\ncheck: {rtol: 0.5}\n")
    loaded = load_spec(spec).spec
    assert tolerances_for(loaded) == Tolerances(rtol=0.5, atol=default_tolerances("float32").atol)
    assert tolerances_for(loaded, rtol=0.1, atol=0.2) == Tolerances(rtol=0.1, atol=0.2)


def test_spec_check_section_refuses_negative_tolerances(tmp_path: Path):
    spec = tmp_path / "s.yaml"
    spec.write_text("inputs: [{sentence: a b}]\ncheck:\n  atol: -1\n")
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    assert "s.yaml:3: check.atol: got -1" in result.output


HEADER = "case,input,encoding,permutation,permuted,layer,head,metric,value,verdict\n"
GOOD_ROW = "permutation,a b,none,1 0,b a,0,,equivariance,0.000000e+00,equivariant\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        (HEADER + GOOD_ROW[:-20], "truncated"),
        ("case,input\na,b\n", ":1: header 'case,input'; this orderlab writes 'case,input,encoding"),
        ("case,case,value\n", ":1: header"),
        (HEADER + "permutation,a b,none\n", ":2: 3 fields; expected 10"),
        ("case,case\na,b\n", "expected distinct column names"),
        (HEADER + GOOD_ROW.replace("0.000000e+00", "zero"), ":2: value 'zero' is not a number"),
        (HEADER + GOOD_ROW + GOOD_ROW, ":3: the same key columns (case,input,"),
        (HEADER + 'permutation,"a b\n', "not valid CSV"),
    ],
)
def test_malformed_baseline_is_a_one_line_error_naming_the_file(text: str, message: str):
    with pytest.raises(BaselineError) as caught:
        compare_csv(text, HEADER + GOOD_ROW, "results/x/metrics.csv", default_tolerances("float64"))
    assert str(caught.value).startswith("results/x/metrics.csv")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_junit_drops_characters_xml_cannot_carry():
    nasty = "dog\x00\x01\x1b bites\ud800 man\ufffe\uffff\x7f\tok\n"
    case = Case(name=nasty, file=nasty, seconds=1.0, failure=nasty, details=nasty)
    (element,) = ET.fromstring(junit_xml([case])).iter("testcase")
    failure = element.find("failure")
    assert element.get("name") == element.get("file") == "dog bites man\x7f\tok\n"  # DEL, tab, newline are legal
    assert failure is not None and failure.text == failure.get("message") == "dog bites man\x7f\tok\n"


# --- the command, end to end on a temporary project ----------------------------------------------


def test_shipped_baselines_check_clean(project: Path):
    result = check()
    assert result.exit_code == 0, result.output
    for name in SHIPPED:
        assert f"{name}: ok: 4 CSVs" in result.output


def test_editing_one_number_is_drift_naming_that_row_and_reverting_passes(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    original = csv_path.read_bytes()
    old = edit_cell(csv_path, EDITED_ROW, "value", "9.999999e-01")

    result = check()
    assert result.exit_code == 1, result.output
    assert "dog_bites_man: DRIFT vs results/dog_bites_man/" in result.output
    assert "metrics.csv: 1 changed, 0 missing, 0 extra of 495 rows" in result.output
    assert "drifted rows of results/dog_bites_man/metrics.csv" in result.output
    assert "dog bites man -> man bites dog [2 1 0]" in result.output  # the row's key...
    assert "rope, layer 2, invariance_mean" in result.output
    assert "9.999999e-01" in result.output and old in result.output  # ...its baseline and new value
    assert "summary.csv" not in result.output  # only the edited file drifted
    assert "cat_chased_dog: ok:" in result.output  # the other spec is still reported

    csv_path.write_bytes(original)
    assert check().exit_code == 0


def test_editing_summary_csv_is_drift_naming_the_file_and_the_encoding_column(project: Path):
    summary = project / "results" / "dog_bites_man" / "summary.csv"
    old = edit_cell(summary, SUMMARY_ROW, "sinusoidal", "9.999999e-01")
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 1, result.output
    assert "summary.csv: 1 changed, 0 missing, 0 extra of 10 rows" in result.output
    assert "drifted rows of results/dog_bites_man/summary.csv" in result.output
    assert "subject=dog bites man," in result.output and "metric=invariance_first" in result.output  # the row
    assert "sinusoidal" in result.output and old in result.output and "9.999999e-01" in result.output
    assert "metrics.csv:" not in result.output


@pytest.mark.parametrize(
    ("file", "row", "column", "value", "expected"),
    [
        ("summary.csv", SUMMARY_ROW, "rope verdict", "invariant", ["summary.csv: 1 changed", "rope verdict"]),
        (  # attention weights are never negative
            "attention.csv", ATTENTION_ROW, "value", "-1.000000e+00",
            ["attention.csv: 1 changed, 0 missing, 0 extra of 432 rows",
             "drifted rows of results/dog_bites_man/attention.csv"],
        ),
    ],
    ids=["summary verdict word", "attention weight"],
)  # fmt: skip
def test_editing_a_cell_of_another_csv_is_drift(project: Path, file, row, column, value, expected):
    edit_cell(project / "results" / "dog_bites_man" / file, row, column, value)
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 1, result.output
    for words in expected:
        assert words in result.output


def test_missing_and_extra_rows_are_drift(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    lines = csv_path.read_text().splitlines(keepends=True)
    csv_path.write_text("".join([lines[0], *lines[2:]]))  # drop the first data row
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 1
    assert "1 extra" in result.output  # the fresh run has a row the baseline lacks

    csv_path.write_text("".join(lines) + lines[1].replace("dog bites man", "dog bites dog"))
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 1
    assert "1 missing" in result.output


def test_a_baseline_csv_the_run_no_longer_writes_is_drift_and_update_removes_it(project: Path):
    stale = project / "results" / "dog_bites_man" / "old.csv"
    stale.write_text("a,value\nx,1.000000e+00\n")
    manifest_path = stale.with_name("manifest.json")  # listed as orderlab's, as if an older version wrote it
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "files": sorted([*manifest["files"], "old.csv"])}))
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 1, result.output
    assert "results/dog_bites_man/old.csv: the fresh run no longer writes this file" in result.output
    assert "old.csv: no longer written" in result.output  # in the summary line

    result = check("--update", "experiments/dog_bites_man.yaml")
    assert result.exit_code == 0, result.output
    assert "dog_bites_man: updated results/dog_bites_man: old.csv: removed" in result.output
    assert not stale.exists()


def test_a_csv_missing_from_the_baseline_is_drift_with_the_update_hint(project: Path):
    (project / "results" / "dog_bites_man" / "attention.csv").unlink()
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 1, result.output
    assert (
        "results/dog_bites_man/attention.csv: no baseline file, but the fresh run writes one; "
        "create it with `orderlab check --update`" in result.output
    )


def test_update_regenerates_every_csv_and_says_what_changed(project: Path):
    folder = project / "results" / "dog_bites_man"
    originals = {path: path.read_bytes() for path in folder.glob("*.csv")}
    edit_cell(folder / "metrics.csv", EDITED_ROW, "value", "9.999999e-01")
    edit_cell(folder / "summary.csv", SUMMARY_ROW, "sinusoidal", "9.999999e-01")

    result = check("--update")
    assert result.exit_code == 0, result.output
    assert (
        "dog_bites_man: updated results/dog_bites_man: metrics.csv: 1 changed, 0 missing, 0 extra of 495 rows; "
        "summary.csv: 1 changed, 0 missing, 0 extra of 10 rows" in result.output
    )
    assert "changed rows of results/dog_bites_man/summary.csv" in result.output
    assert "cat_chased_dog: unchanged" in result.output
    assert {path: path.read_bytes() for path in folder.glob("*.csv")} == originals
    assert check().exit_code == 0


def test_update_creates_a_missing_baseline_and_replaces_an_unreadable_one(project: Path):
    shutil.rmtree(project / "results" / "cat_chased_dog")
    (project / "results" / "dog_bites_man" / "metrics.csv").write_text("garbage")
    result = check("--update")
    assert result.exit_code == 0, result.output
    assert "cat_chased_dog: wrote results/cat_chased_dog: attention.csv (1,800 rows), metrics.csv (360 rows)" in (
        result.output
    )
    assert "metrics.csv: replaced an unreadable baseline" in result.output
    assert check().exit_code == 0


def test_truncated_baseline_exits_2_naming_the_file(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    csv_path.write_bytes(csv_path.read_bytes()[:5000])
    result = check("--junit", "check.xml")
    assert result.exit_code == 2
    assert "error: results/dog_bites_man/metrics.csv: truncated" in result.output
    assert "cat_chased_dog: ok:" in result.output  # the other spec is still checked
    assert "Traceback" not in result.output
    suite = ET.parse(project / "check.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("errors")) == ("0", "1")


def test_broken_spec_exits_2_with_its_one_line_error(project: Path):
    (project / "experiments" / "dog_bites_man.yaml").write_text("model: {d_model: 63}\ninputs: [{sentence: a}]\n")
    result = check()
    assert result.exit_code == 2
    assert "error: experiments/dog_bites_man.yaml:1: model.d_model: 63 is not divisible" in result.output


@pytest.mark.parametrize("targets", [(), ("experiments/cat_chased_dog.yaml",)])
def test_spec_without_a_baseline_folder_fails_with_the_update_hint(project: Path, targets: tuple[str, ...]):
    shutil.rmtree(project / "results" / "cat_chased_dog")
    result = check(*targets, "--junit", "check.xml")
    assert result.exit_code == 1, result.output
    assert (
        "cat_chased_dog: no baseline: results/cat_chased_dog/ does not exist; "
        "run `orderlab check --update experiments/cat_chased_dog.yaml`" in result.output
    )
    suite = ET.parse(project / "check.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"


def test_nothing_to_check_exits_2_and_still_writes_an_empty_junit_report(project: Path):
    for spec in (project / "experiments").glob("*.yaml"):
        spec.unlink()
    result = check("--junit", "reports/check.xml")
    assert result.exit_code == 2
    assert result.output == "error: nothing to check: no spec files (*.yaml, *.yml) in experiments\n"
    suite = ET.parse(project / "reports" / "check.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("0", "0", "0")


def test_tolerance_options_decide_drift(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    old = float(edit_cell(csv_path, EDITED_ROW, "value", "PLACEHOLDER"))
    csv_path.write_text(csv_path.read_text().replace("PLACEHOLDER", f"{old * 1.01:.6e}"))  # 1% off
    assert check("experiments/dog_bites_man.yaml").exit_code == 1
    assert check("experiments/dog_bites_man.yaml", "--rtol", "0.02").exit_code == 0


@pytest.mark.parametrize(
    ("option", "value"), [("--rtol", "inf"), ("--rtol", "nan"), ("--rtol", "-1"), ("--atol", "-inf")]
)
def test_tolerance_options_must_be_finite_and_not_negative(project: Path, option: str, value: str):
    result = check(option, value)
    assert result.exit_code == 2
    assert result.output == f"error: {option}: got {float(value):g}; expected a finite number >= 0\n"


def test_two_specs_with_one_name_are_refused_before_any_run(project: Path):
    shutil.copy(project / "experiments" / "dog_bites_man.yaml", project / "experiments" / "copy.yaml")
    shutil.rmtree(project / "results")
    result = check("--update")
    assert result.exit_code == 2
    assert result.output == (
        "error: experiments/copy.yaml and experiments/dog_bites_man.yaml both have the spec name 'dog_bites_man', "
        "so they would share one baseline folder; give one of them another `name:`\n"
    )
    assert not (project / "results").exists()  # nothing ran, nothing was written


def test_one_spec_named_twice_is_checked_once(project: Path):
    result = check("experiments/dog_bites_man.yaml", "./experiments/dog_bites_man.yaml")
    assert result.exit_code == 0, result.output
    assert result.output.count("dog_bites_man: ok:") == 1


def test_version_differences_warn_but_do_not_fail(project: Path):
    manifest_path = project / "results" / "dog_bites_man" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["versions"]["torch"] = "1.0.0"
    manifest_path.write_text(json.dumps(manifest))
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 0
    assert "warning: results/dog_bites_man/manifest.json: baseline made with torch 1.0.0, running" in result.output


def test_a_pretrained_specs_check_names_each_library_that_moved_and_each_an_older_manifest_lacks(tmp_path: Path):
    pytest.importorskip("transformers")
    from orderlab.commands.baseline import manifest_warnings
    from orderlab.results.versions import PRETRAINED_LIBRARIES, versions

    loaded = load_spec(ROOT / "experiments" / "zoo_causal.yaml")
    running = versions(loaded.spec)
    assert set(PRETRAINED_LIBRARIES) | {"torch", "numpy"} <= running.keys()
    manifest = json.loads((ROOT / "results" / "zoo_causal" / "manifest.json").read_text())
    manifest["versions"] = {**running, "transformers": "0.0.1", "tokenizers": "0.0.2"}
    del manifest["versions"]["safetensors"]  # an older manifest, written before orderlab recorded safetensors
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    warnings = [w for w in manifest_warnings(tmp_path, loaded) if "sha256 differs" not in w]
    assert warnings == [
        f"{tmp_path / 'manifest.json'}: baseline made with transformers 0.0.1, running {running['transformers']}",
        f"{tmp_path / 'manifest.json'}: baseline made with tokenizers 0.0.2, running {running['tokenizers']}",
        f"{tmp_path / 'manifest.json'}: baseline records no safetensors version (written before orderlab recorded "
        f"it), running {running['safetensors']}",
    ]


def test_the_committed_pretrained_baselines_record_every_library_that_moves_their_numbers():
    from orderlab.results.versions import PRETRAINED_LIBRARIES

    for name in ("zoo_causal", "zoo_equivariance", "minilm_dog_bites_man", "minilm_corpus"):
        recorded = json.loads((ROOT / "results" / name / "manifest.json").read_text())["versions"]
        assert {"torch", "numpy", *PRETRAINED_LIBRARIES} <= recorded.keys(), name


def test_junit_report_has_one_case_per_spec_with_the_drift_as_failure(project: Path):
    edit_cell(project / "results" / "dog_bites_man" / "metrics.csv", EDITED_ROW, "value", "9.999999e-01")
    result = check("--junit", "reports/check.xml")
    assert result.exit_code == 1
    suite = ET.parse(project / "reports" / "check.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == set(SHIPPED)
    failure = cases["dog_bites_man"].find("failure")
    assert failure is not None and "metrics.csv: 1 changed" in failure.get("message", "")
    assert "drifted rows of results/dog_bites_man/metrics.csv" in (failure.text or "")
    assert "rope, layer 2, invariance_mean" in (failure.text or "")
    assert cases["cat_chased_dog"].find("failure") is None


def test_html_drift_report_lists_each_drifted_cell_with_baseline_and_new(project: Path):
    old = edit_cell(project / "results" / "dog_bites_man" / "metrics.csv", EDITED_ROW, "value", "9.999999e-01")
    result = check("--html", "reports/check.html")
    assert result.exit_code == 1
    text = (project / "reports" / "check.html").read_text(encoding="utf-8")
    parse(text)  # balanced, and fetches nothing: fit to upload as a CI artifact
    assert "1 of 2 spec(s) drifted" in text
    assert "drifted rows of results/dog_bites_man/metrics.csv" in text
    assert "rope, layer 2, invariance_mean" in text
    assert f'<td class="num">9.999999e-01</td><td class="num bad">{old}</td>' in text  # baseline, then the new run
    assert "cat_chased_dog: ok:" in text


def test_html_path_that_is_a_folder_is_one_line_before_any_run(project: Path):
    (project / "reports").mkdir()
    result = check("--html", "reports")
    assert result.exit_code == 2
    assert result.output == "error: --html reports: is a folder; expected a file path such as reports/check.html\n"


def test_junit_report_parses_when_a_drifted_row_has_control_characters(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    csv_path.write_text(csv_path.read_text().replace("dog bites man,none,0 1 2", "dog\x01bites\x1b[31m man,none,0 1 2"))
    result = check("experiments/dog_bites_man.yaml", "--junit", "check.xml")
    assert result.exit_code == 1, result.output
    (case,) = ET.parse(project / "check.xml").getroot().iter("testcase")
    failure = case.find("failure")
    assert failure is not None and "dogbites[31m man" in (failure.text or "")  # the drifted key, minus controls


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("reports", "error: --junit reports: is a folder; expected a file path such as reports/check.xml"),
        ("notes.txt/check.xml", "error: --junit notes.txt/check.xml: cannot write there: notes.txt is a file, not"),
        ("x" * 300 + ".xml", "error: --junit " + "x" * 300 + ".xml: file name too long (304 bytes; at most 255)"),
    ],
)
def test_junit_path_that_cannot_take_the_report_is_one_line_before_any_run(project: Path, target: str, message: str):
    (project / "reports").mkdir()
    (project / "notes.txt").write_text("a regular file, so that even root cannot make a folder here")
    result = check("--junit", target)
    assert result.exit_code == 2
    assert result.output.startswith(message)
    assert result.output.count("\n") == 1  # one line: no traceback, and no spec ran


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("experiments/dog_bites_man.yaml", "--junit", "experiments/dog_bites_man.yaml"),
            "--junit experiments/dog_bites_man.yaml: is a file this command reads (experiments/dog_bites_man.yaml)",
        ),
        (
            ("--junit", "experiments/cat_chased_dog.yaml"),
            "--junit experiments/cat_chased_dog.yaml: is a file this command reads (experiments/cat_chased_dog.yaml)",
        ),
        (
            ("--junit", "results/dog_bites_man/metrics.csv"),
            "--junit results/dog_bites_man/metrics.csv: is a file in results/dog_bites_man, which this command reads",
        ),
        (
            ("--html", "results/cat_chased_dog/manifest.json"),
            "--html results/cat_chased_dog/manifest.json: is a file in results/cat_chased_dog, which this command",
        ),
        (
            ("--junit", "reports/check.xml", "--html", "reports/../reports/check.xml"),
            "--junit reports/check.xml and --html reports/../reports/check.xml name one file; expected two files",
        ),
    ],
    ids=["named-spec", "spec-in-folder", "baseline-csv", "baseline-manifest", "junit-is-html"],
)
def test_a_report_path_naming_what_check_reads_is_refused_before_any_run(project: Path, args, message: str):
    (project / "reports").mkdir()
    before = {path: path.read_bytes() for path in project.rglob("*") if path.is_file()}
    result = check(*args)
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {message}") and result.output.count("\n") == 1, result.output
    assert {path: path.read_bytes() for path in project.rglob("*") if path.is_file()} == before


def test_update_never_replaces_a_baseline_it_has_just_made_with_the_junit_report(project: Path):
    shutil.rmtree(project / "results" / "cat_chased_dog")
    result = check("--update", "--junit", "results/cat_chased_dog/metrics.csv")
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(
        "error: --junit results/cat_chased_dog/metrics.csv: is a file in results/cat_chased_dog, which this command"
    )
    assert (project / "results" / "cat_chased_dog" / "metrics.csv").read_text().startswith("case,")


def test_manifest_records_what_a_rerun_needs(project: Path):
    shutil.rmtree(project / "results" / "dog_bites_man")
    assert check("--update", "experiments/dog_bites_man.yaml").exit_code == 0
    manifest = json.loads((project / "results" / "dog_bites_man" / "manifest.json").read_text())
    assert set(manifest["versions"]) >= {"orderlab", "torch", "python", "numpy"}
    assert {"seed", "dtype", "device", "torch_threads"} <= set(manifest)
    assert "wall_seconds" not in manifest  # a re-run must not change a committed file
    assert len(manifest["spec"]["sha256"]) == 64


def test_check_shows_in_help():
    result = runner.invoke(app, ["check", "--help"])
    assert result.exit_code == 0
    for option in ("--rtol", "--atol", "--update", "--junit", "--html", "--out", "--results"):
        assert option in result.output


def test_check_takes_out_like_every_command_and_results_as_its_old_name(tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text("model: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none]\ninputs: [{sentence: a b}]\n")
    for option, root in (("--out", tmp_path / "new"), ("--results", tmp_path / "old")):
        result = runner.invoke(app, ["check", "--update", str(spec), option, str(root)])
        assert result.exit_code == 0, result.output
        assert (root / "tiny" / "metrics.csv").is_file()


def test_version_prints_the_package_version():
    from orderlab import __version__

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"orderlab {__version__}"


def test_help_shows_extras_in_brackets():
    result = runner.invoke(app, ["run", "--help"], terminal_width=200)
    assert "needs the [dist] extra" in " ".join(result.output.replace("│", " ").split())  # however the help wraps


def test_ci_example_runs_check_with_a_junit_report():
    import yaml

    job = yaml.safe_load((ROOT / "docs" / "ci-example.yml").read_text())
    commands = [step.get("run", "") for step in job["jobs"]["check"]["steps"]]
    assert any(command.startswith("orderlab check --junit") and "--html" in command for command in commands)


def test_update_keeps_a_baseline_whose_values_moved_only_within_tolerance(project: Path):
    """What round-off on another CPU does to float values: --update must not rewrite (churn) the baseline for it."""
    path = project / "results" / "dog_bites_man" / "metrics.csv"
    old = edit_cell(path, EDITED_ROW, "value", "0")  # read the cell, then write it back one ulp of the CSV away
    nudged = f"{float(old) * (1 + 1e-6):.6e}"
    edit_cell(path, EDITED_ROW, "value", nudged)
    result = check("--update", "experiments/dog_bites_man.yaml")
    assert result.exit_code == 0, result.output
    assert "dog_bites_man: unchanged" in result.output
    assert nudged in path.read_text() and nudged != old
    edit_cell(path, EDITED_ROW, "value", f"{float(old) * 1.01:.6e}")  # beyond tolerance: rewritten
    assert "dog_bites_man: updated" in check("--update", "experiments/dog_bites_man.yaml").output
    assert f",{old}," in path.read_text()


@pytest.mark.parametrize("kind", ["file", "fifo", "devnull", "loop"])
def test_check_out_that_is_not_a_folder_is_an_argument_error(tmp_path, kind):
    out = {"devnull": Path("/dev/null")}.get(kind, tmp_path / "out")
    if kind == "file":
        out.write_text("a user's file\n")
    elif kind == "fifo":
        os.mkfifo(out)
    elif kind == "loop":
        out.symlink_to(tmp_path / "loop2")
        (tmp_path / "loop2").symlink_to(out)
    result = runner.invoke(app, ["check", str(ROOT / "experiments/dog_bites_man.yaml"), "--out", str(out)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    expected = f"error: --out {out}: not a folder; expected the folder of baselines (OUT/<spec name>/)"
    assert lines == [expected]
    assert kind != "file" or out.read_text() == "a user's file\n"
