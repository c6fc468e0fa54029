"""`orderlab check` against committed baselines: drift is found and named, clean passes, --update heals."""

from __future__ import annotations

import json
import math
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orderlab.check import (
    Baseline,
    BaselineError,
    Row,
    Tolerances,
    compare,
    default_tolerances,
    parse_metrics,
    tolerances_for,
)
from orderlab.cli import app
from orderlab.report import STACK_KEY, drift_key
from orderlab.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("dog_bites_man", "cat_chased_dog")  # the core's experiments; others may be added beside them
# A row of dog_bites_man that is far from zero, so an edit in its third digit is drift under any tolerance.
EDITED_ROW = "permutation,dog bites man,rope,2 1 0,man bites dog,2,,invariance_mean,"

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


def edit_value(path: Path, row_prefix: str, new_value: str) -> str:
    """Replace the value of the one row starting with row_prefix; return the old value text."""
    lines = path.read_text().splitlines(keepends=True)
    (index,) = [i for i, line in enumerate(lines) if line.startswith(row_prefix)]
    old = lines[index][len(row_prefix) :].split(",")[0]
    lines[index] = lines[index].replace(f",{old},", f",{new_value},")
    path.write_text("".join(lines))
    return old


def row(value: float, verdict: str = "order-sensitive", key: tuple[str, ...] = ("k",)) -> Row:
    return Row(key, f"{value:.6e}", value, verdict)


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


def table(rows: dict) -> Baseline:
    return Baseline(["key", "value", "verdict"], rows)


def test_missing_extra_and_changed_rows_are_all_drift():
    baseline = table({("a",): row(1.0, key=("a",)), ("b",): row(2.0, key=("b",))})
    fresh = table({("a",): row(1.5, key=("a",)), ("c",): row(3.0, key=("c",))})
    comparison = compare(baseline, fresh, default_tolerances("float64"))
    assert [(d.key, d.kind) for d in comparison.drifted] == [
        (("a",), "changed"),
        (("b",), "missing"),
        (("c",), "extra"),
    ]
    assert comparison.drifted[0].abs_diff == 0.5
    assert comparison.drifted[0].rel_diff == 0.5


def test_a_verdict_flip_within_tolerance_is_drift():
    baseline = table({("k",): row(2.0e-13, "equivariant")})
    fresh = table({("k",): row(2.3e-13, "order-sensitive")})
    assert compare(baseline, fresh, default_tolerances("float64")).drifted


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
        ("case,input\n" + GOOD_ROW, ":1: header"),
        ("case,case,value\n", ":1: header"),
        (HEADER + "permutation,a b,none\n", ":2: 3 fields; expected 10"),
        ("case,input\na,b\n", "expected distinct column names with 'value'"),
        (HEADER + GOOD_ROW.replace("0.000000e+00", "zero"), ":2: value 'zero' is not a number"),
        (HEADER + GOOD_ROW + GOOD_ROW, ":3: the same key columns appear on an earlier line"),
        (HEADER + 'permutation,"a b\n', "not valid CSV"),
    ],
)
def test_malformed_baseline_is_a_one_line_error_naming_the_file(text: str, message: str):
    with pytest.raises(BaselineError) as caught:
        parse_metrics(text, "results/x/metrics.csv")
    assert str(caught.value).startswith("results/x/metrics.csv")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_empty_value_cell_reads_as_nan():
    rows = parse_metrics(HEADER + GOOD_ROW.replace("0.000000e+00", ""), "f").rows
    assert math.isnan(next(iter(rows.values())).value)


# --- the command, end to end on a temporary project ----------------------------------------------


def test_shipped_baselines_check_clean(project: Path):
    result = check()
    assert result.exit_code == 0, result.output
    for name in SHIPPED:
        assert f"{name}: ok:" in result.output


def test_editing_one_number_is_drift_naming_that_row_and_reverting_passes(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    original = csv_path.read_bytes()
    old = edit_value(csv_path, EDITED_ROW, "9.999999e-01")

    result = check()
    assert result.exit_code == 1, result.output
    assert "dog_bites_man: DRIFT: 1 changed, 0 missing, 0 extra of 495 rows" in result.output
    assert "dog bites man -> man bites dog [2 1 0]" in result.output  # the row's key...
    assert "rope, layer 2, invariance_mean" in result.output
    assert "9.999999e-01" in result.output and old in result.output  # ...its baseline and new value
    assert "cat_chased_dog: ok:" in result.output  # the other spec is still reported

    csv_path.write_bytes(original)
    assert check().exit_code == 0


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


def test_update_regenerates_baselines_that_then_check_clean(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    original = csv_path.read_bytes()
    edit_value(csv_path, EDITED_ROW, "9.999999e-01")

    result = check("--update")
    assert result.exit_code == 0, result.output
    assert "dog_bites_man: updated results/dog_bites_man: 1 changed, 0 missing, 0 extra of 495 rows" in result.output
    assert "cat_chased_dog: unchanged" in result.output
    assert csv_path.read_bytes() == original
    assert check().exit_code == 0


def test_update_creates_a_missing_baseline_and_replaces_an_unreadable_one(project: Path):
    shutil.rmtree(project / "results" / "cat_chased_dog")
    (project / "results" / "dog_bites_man" / "metrics.csv").write_text("garbage")
    result = check("--update")
    assert result.exit_code == 0, result.output
    assert "cat_chased_dog: wrote results/cat_chased_dog (360 rows)" in result.output
    assert "replacing an unreadable baseline" in result.output
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


def test_baseline_folder_without_metrics_csv_exits_2_naming_the_file(project: Path):
    (project / "results" / "dog_bites_man" / "metrics.csv").unlink()
    result = check()
    assert result.exit_code == 2
    assert "results/dog_bites_man/metrics.csv: no baseline file" in result.output


def test_broken_spec_exits_2_with_its_one_line_error(project: Path):
    (project / "experiments" / "dog_bites_man.yaml").write_text("model: {d_model: 63}\ninputs: [{sentence: a}]\n")
    result = check()
    assert result.exit_code == 2
    assert "error: experiments/dog_bites_man.yaml:1: model.d_model: 63 is not divisible" in result.output


def test_named_spec_without_baseline_exits_2_and_says_how_to_create_it(project: Path):
    shutil.rmtree(project / "results" / "cat_chased_dog")
    result = check("experiments/cat_chased_dog.yaml")
    assert result.exit_code == 2
    assert "no baseline file; create it with `orderlab check --update`" in result.output


def test_experiment_without_baseline_is_noted_not_failed(project: Path):
    shutil.rmtree(project / "results" / "cat_chased_dog")
    result = check()
    assert result.exit_code == 0
    assert "note: skipped experiments/cat_chased_dog.yaml: no baseline" in result.output


def test_nothing_to_check_exits_2(project: Path):
    shutil.rmtree(project / "results")
    result = check()
    assert result.exit_code == 2
    assert "nothing to check" in result.output


def test_tolerance_options_decide_drift_and_refuse_negatives(project: Path):
    csv_path = project / "results" / "dog_bites_man" / "metrics.csv"
    old = float(edit_value(csv_path, EDITED_ROW, "PLACEHOLDER"))
    csv_path.write_text(csv_path.read_text().replace("PLACEHOLDER", f"{old * 1.01:.6e}"))  # 1% off
    assert check("experiments/dog_bites_man.yaml").exit_code == 1
    assert check("experiments/dog_bites_man.yaml", "--rtol", "0.02").exit_code == 0
    result = check("--rtol", "-1")
    assert result.exit_code == 2
    assert "Invalid value for '--rtol'" in result.output


def test_version_differences_warn_but_do_not_fail(project: Path):
    manifest_path = project / "results" / "dog_bites_man" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["versions"]["torch"] = "1.0.0"
    manifest_path.write_text(json.dumps(manifest))
    result = check("experiments/dog_bites_man.yaml")
    assert result.exit_code == 0
    assert "warning: results/dog_bites_man/manifest.json: baseline made with torch 1.0.0, running" in result.output


def test_junit_report_has_one_case_per_spec_with_the_drift_as_failure(project: Path):
    edit_value(project / "results" / "dog_bites_man" / "metrics.csv", EDITED_ROW, "9.999999e-01")
    result = check("--junit", "reports/check.xml")
    assert result.exit_code == 1
    suite = ET.parse(project / "reports" / "check.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == set(SHIPPED)
    failure = cases["dog_bites_man"].find("failure")
    assert failure is not None and "1 changed" in failure.get("message", "")
    assert "rope, layer 2, invariance_mean" in (failure.text or "")
    assert cases["cat_chased_dog"].find("failure") is None


def test_manifest_records_what_a_rerun_needs(project: Path):
    shutil.rmtree(project / "results" / "dog_bites_man")
    assert check("--update", "experiments/dog_bites_man.yaml").exit_code == 0
    manifest = json.loads((project / "results" / "dog_bites_man" / "manifest.json").read_text())
    assert set(manifest["versions"]) >= {"orderlab", "torch", "python", "numpy"}
    assert {"seed", "dtype", "device", "torch_threads", "wall_seconds"} <= set(manifest)
    assert len(manifest["spec"]["sha256"]) == 64


def test_check_shows_in_help():
    result = runner.invoke(app, ["check", "--help"])
    assert result.exit_code == 0
    for option in ("--rtol", "--atol", "--update", "--junit", "--results"):
        assert option in result.output


def test_ci_example_runs_check_with_a_junit_report():
    import yaml

    job = yaml.safe_load((ROOT / "docs" / "ci-example.yml").read_text())
    commands = [step.get("run", "") for step in job["jobs"]["check"]["steps"]]
    assert any(command.startswith("orderlab check --junit") for command in commands)
