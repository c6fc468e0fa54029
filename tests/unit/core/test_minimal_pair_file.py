"""A BLiMP-format file is a stranger's (core/minimal_pair_file.py): each bad line is one `file:line:` problem, and
`probes: {file: PATH}` in a spec becomes its pairs, or one line naming the spec's field and the file's line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.core.minimal_pair_file import read_minimal_pairs
from orderlab.core.pair_relations import MINIMAL_PAIR
from orderlab.core.userfiles import FileProblem

GOOD = {"sentence_good": "the cat sleeps", "sentence_bad": "the cat sleep", "phenomenon": "agreement", "UID": "simple"}


def written(tmp_path: Path, *entries: object) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(e if isinstance(e, str) else json.dumps(e) for e in entries) + "\n")
    return path


def test_pairs_are_read_in_order_with_blimps_own_phenomenon_key(tmp_path: Path):
    blimp = {"sentence_good": "dogs bark", "sentence_bad": "dogs barks", "linguistics_term": "s_v_agreement",
             "UID": "regular_plural", "field": "morphology", "pair_id": 7, "one_prefix_method": False}  # fmt: skip
    pairs = read_minimal_pairs(written(tmp_path, GOOD, "", blimp))
    assert [(p.line, p.good, p.phenomenon, p.uid, p.field) for p in pairs] == [
        (1, "the cat sleeps", "agreement", "simple", None),
        (3, "dogs bark", "s_v_agreement", "regular_plural", "morphology"),
    ]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "a JSON list; expected a JSON object per line"),
        ({**GOOD, "sentence_bad": None}, "sentence_bad: missing; expected a sentence"),
        ({**GOOD, "sentence_good": "   "}, "sentence_good: got '   '; expected a sentence"),
        ({**GOOD, "sentence_bad": "the  cat sleeps"}, "'the cat sleeps' twice; expected a sentence and its minimal"),
        ({k: v for k, v in GOOD.items() if k != "phenomenon"}, "phenomenon: missing; expected a name"),
        ({**GOOD, "UID": "../up"}, "UID: got '../up'; expected letters, digits"),
        ({**GOOD, "phenomenon": 3}, "phenomenon: got '3'; expected a name"),
        ('{"sentence_good": NaN}', "NaN is not a number JSON allows"),
    ],
)
def test_a_bad_line_is_one_problem_naming_the_file_and_line(tmp_path: Path, entry: object, message: str):
    path = written(tmp_path, GOOD, entry)
    with pytest.raises(FileProblem) as error:
        read_minimal_pairs(path)
    assert str(error.value).startswith(f"{path}:2: ") and message in str(error.value), str(error.value)


def test_an_empty_file_a_folder_and_a_fifo_are_refused(tmp_path: Path):
    with pytest.raises(FileProblem, match="no pairs"):
        read_minimal_pairs(written(tmp_path, ""))
    with pytest.raises(FileProblem, match="a folder"):
        read_minimal_pairs(tmp_path)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(FileProblem, match="not a regular file"):  # refused at once, never waited on
            read_minimal_pairs(tmp_path / "fifo")


SPEC = """\
name: pairs
model: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 1}
inputs: [{sentence: the cat sleeps, permutations: identity}]
probes: {file: pairs.jsonl}
metrics: [minimal_pairs]
"""


def test_a_spec_reads_the_file_relative_to_itself_as_minimal_pairs(tmp_path: Path):
    from orderlab.spec.load import load_spec

    written(tmp_path, GOOD)
    (tmp_path / "pairs.yaml").write_text(SPEC)
    (probe,) = load_spec(tmp_path / "pairs.yaml").spec.probes
    assert probe.pair == ("the cat sleeps", "the cat sleep") and probe.relation == MINIMAL_PAIR
    assert (probe.phenomenon, probe.uid, probe.field) == ("agreement", "simple", None)


def test_validate_names_the_spec_field_and_the_files_line_exit_2(tmp_path: Path):
    written(tmp_path, GOOD, {**GOOD, "sentence_bad": GOOD["sentence_good"]})
    (tmp_path / "pairs.yaml").write_text(SPEC)
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "pairs.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "probes.file" in result.output and "pairs.jsonl:2: 'the cat sleeps' twice" in result.output
    (tmp_path / "pairs.yaml").write_text(SPEC.replace("{file: pairs.jsonl}", "{file: pairs.jsonl, shuffle: 2}"))
    result = CliRunner().invoke(app, ["validate", str(tmp_path / "pairs.yaml")])
    assert result.exit_code == 2 and "probes: expected {file: PATH}" in result.output, result.output
