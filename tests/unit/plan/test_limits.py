"""Limits before work: a spec that cannot run here, or would write nothing, is refused at once in one line.

Every refusal must come from validation, before a weight is drawn or a permutation generated, so
each test runs under a deadline: a test that runs into it found work done before the check.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from orderlab.cli import app
from orderlab.core.corpustext import read_corpus
from orderlab.errors import OrderlabError
from orderlab.plan import limits
from orderlab.plan.memory import Room

DEADLINE_SECONDS = 20  # validation takes well under a second; the refused work would take hours or all memory
GB = 10**9


@pytest.fixture(autouse=True)
def deadline():
    def expire(signum, frame):
        raise TimeoutError(f"no answer within {DEADLINE_SECONDS} s: the work started before the limits were checked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(DEADLINE_SECONDS)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def memory(monkeypatch):
    """Pretend this machine has `amount` bytes available, so figures in messages do not depend on the host."""

    def available(amount: int) -> None:
        monkeypatch.setattr(limits, "memory_room", lambda: Room(amount, "this machine has"))

    return available


def refused(cli, path: Path, *fragments: str, command: str = "validate") -> str:
    """Run the command on the spec; assert exit 2 and ONE line on stderr holding every fragment."""
    args = [command, str(path)] + (["--out", str(path.parent / "out")] if command == "run" else [])
    result = cli.invoke(app, args)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}:"), result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


SENTENCE = "inputs: [{sentence: dog bites man}]\n"

# The reported cases: each used to give a traceback, or to grow memory until the machine gave out.
OUT_OF_BOUNDS = {
    "d_model 1e9": ("model: {d_model: 1000000000, n_heads: 4}\n" + SENTENCE, "model.d_model: got 1000000000",
                    "less than or equal to 65536"),
    "n_layers 1e5": ("model: {n_layers: 100000}\n" + SENTENCE, "model.n_layers: got 100000",
                     "less than or equal to 1024"),
    "ffn_mult 1e6": ("model: {ffn_mult: 1000000}\n" + SENTENCE, "model.ffn_mult: got 1000000",
                     "less than or equal to 64"),
    "seed 2^70": ("seed: 1180591620717411303424\n" + SENTENCE, "seed: got 1180591620717411303424",
                  "less than or equal to 4294967295"),
    "probe sentences 1e9": ("metrics: [decodability]\ndecodability: {sentences: 1000000000}\n" + SENTENCE,
                            "decodability.sentences: got 1000000000", "less than or equal to 100000"),
    "random 10^12": ("rows: summary\ninputs: [{sentence: a b c d e f g h i j k l m n o, permutations: "
                     "{random: 1000000000000}}]\n", "inputs[0].permutations.random: got 1000000000000",
                     "less than or equal to 10000000"),
    "a swept d_model 1e9": ("model: {d_model: [64, 1000000000]}\n" + SENTENCE, "model.d_model",
                            "less than or equal to 65536"),
}  # fmt: skip


@pytest.mark.parametrize("case", OUT_OF_BOUNDS)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_sizes_out_of_bounds_are_refused_in_one_line(cli, write_spec, case, command):
    text, *fragments = OUT_OF_BOUNDS[case]
    path = write_spec(text)
    refused(cli, path, *fragments, command=command)
    assert not (path.parent / "out").exists()  # `run` touched nothing


def test_weights_that_do_not_fit_name_the_figure_and_the_field(cli, write_spec, memory):
    memory(24 * GB)
    path = write_spec("model: {d_model: 16384, n_heads: 4}\n" + SENTENCE)
    refused(cli, path, ":1: model.d_model: 16,384 needs ~129 GB of memory (weights: 129 GB)",
            "this machine has 24.0 GB available", "expected a smaller d_model")  # fmt: skip


def test_deep_stack_that_does_not_fit_blames_n_layers(cli, write_spec, memory):
    memory(4 * GB)  # 1,024 layers of d_model 256 hold 6.4 GB of float64 weights, 16 GB with the float32 copies
    path = write_spec("model: {d_model: 256, n_layers: 1024}\n" + SENTENCE)
    refused(cli, path, "model.n_layers: 1,024 needs", "expected a smaller n_layers", command="run")
    assert not (path.parent / "out").exists()


def test_a_sweep_names_the_combination_that_does_not_fit(cli, write_spec, memory):
    memory(24 * GB)
    path = write_spec("model: {d_model: [64, 16384]}\n" + SENTENCE)
    refused(cli, path, "model.d_model: 16,384 needs", "(in the sweep combination d_model=16384)")


def test_position_probe_that_does_not_fit_names_its_field(cli, write_spec, memory):
    memory(24 * GB)
    path = write_spec("metrics: [decodability]\ndecodability: {sentences: 100000, length: 512}\n" + SENTENCE)
    refused(cli, path, ":2: decodability.length: 512 needs", "the position probe", "a smaller length (default 8)")


def test_random_permutations_of_a_long_sentence_name_the_permutations(cli, write_spec, memory):
    memory(8 * GB)  # 10^7 drawn permutations of 200 words hold ~34 GB
    words = " ".join(f"w{i}" for i in range(200))
    path = write_spec(f"rows: summary\ninputs: [{{sentence: {words}, permutations: {{random: 10000000}}}}]\n")
    refused(cli, path, "inputs[0].permutations: 10,000,000 permutations needs", "drawn permutations",
            "expected fewer permutations", command="run")  # fmt: skip


def test_a_run_of_years_is_refused_with_its_estimate(cli, write_spec, memory):
    memory(10**12)
    words = " ".join(f"w{i}" for i in range(40))
    path = write_spec(
        "model: {d_model: 1024, n_heads: 8, n_layers: 24}\nrows: summary\n"
        f"inputs: [{{sentence: {words}, permutations: {{random: 10000000}}}}]\n"
    )
    line = refused(cli, path, "inputs[0].permutations: 10,000,000 permutations would run for ~",
                   "the limit is 30.0 days", "expected fewer permutations or a smaller model")  # fmt: skip
    assert "years" in line


def test_per_permutation_rows_past_the_csv_limit_suggest_summary_rows(cli, write_spec, memory):
    memory(10**12)  # 40,320 orders x 3 encodings x ~14,000 rows each: ~200 GB of CSV
    path = write_spec("model: {d_model: 16, n_heads: 8, n_layers: 1024}\n"
                      "inputs: [{sentence: a b c d e f g h, permutations: all}]\n")  # fmt: skip
    refused(cli, path, ":1: rows: ", "rows would write ~", "to metrics.csv, which `orderlab check` and `plot` read "
            "whole; the limit is 2.0 GB", "expected rows: summary")  # fmt: skip


def test_attention_csv_past_the_csv_limit_names_the_shown_sentence(cli, write_spec, memory):
    memory(10**12)  # 2 orders x 8 heads x 5,000^2 slot pairs: 400 million rows
    words = " ".join(f"w{i}" for i in range(5000))
    path = write_spec("model: {d_model: 8, n_heads: 8, n_layers: 1}\nencodings: [none]\n"
                      f"inputs: [{{sentence: {words}, permutations: reverse}}]\n")  # fmt: skip
    refused(cli, path, "inputs[0].sentence: the shown sentence would write ~", "to attention.csv",
            "expected a shorter sentence, or metrics without attention")  # fmt: skip


def test_a_long_sentence_fits_once_attention_is_left_out(cli, write_spec, memory):
    memory(10**12)
    words = " ".join(f"w{i}" for i in range(5000))
    path = write_spec("model: {d_model: 8, n_heads: 8, n_layers: 1}\nencodings: [none]\nmetrics: [equivariance]\n"
                      f"inputs: [{{sentence: {words}, permutations: reverse}}]\n")  # fmt: skip
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output


# --- reading the spec: bounded in bytes, regular files only ------------------------------------------


def test_validate_dev_zero_answers_at_once(cli):
    result = cli.invoke(app, ["validate", "/dev/zero"])
    assert result.exit_code == 2
    assert result.output == "error: /dev/zero: cannot read: not a regular file (a device, pipe or socket); " \
                            "expected a YAML spec file\n"  # fmt: skip


def test_a_pipe_is_refused_without_waiting_for_a_writer(cli, tmp_path):
    pipe = tmp_path / "spec.yaml"
    os.mkfifo(pipe)
    result = cli.invoke(app, ["run", str(pipe), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "not a regular file" in result.output


def test_a_spec_over_the_size_limit_is_refused_unread(cli, write_spec):
    path = write_spec("# padding\n" * 30_000 + SENTENCE)  # 300 kB of comments: valid YAML, too large
    size = path.stat().st_size
    refused(cli, path, f"cannot read: {size:,} bytes, over the limit of 256 KiB; expected a YAML spec file")


def test_a_corpus_over_the_size_limit_or_not_a_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("orderlab.core.corpustext.MAX_CORPUS_BYTES", 1000)
    big = tmp_path / "corpus.txt"
    big.write_text("the dog bit the man\n" * 100)
    with pytest.raises(OrderlabError, match=r"corpus.txt: cannot read the corpus \(2,000 bytes, over the limit of "):
        read_corpus(big)
    with pytest.raises(OrderlabError, match=r"cannot read the corpus \(not a regular file"):
        read_corpus(Path("/dev/zero"))


# --- zero permutations, zero rows ---------------------------------------------------------------------

ZERO_PERMUTATIONS = {
    "an empty list": ("dog bites man", "[]", "an empty list gives no permutation; expected at least one, like "
                      "[2, 1, 0]"),
    "swaps on one word": ("dog", "swaps", "'swaps' on a sentence of 1 word(s) gives no permutation; expected at "
                          "least 2 words"),
    "shifts on one word": ("dog", "shifts", "'shifts' on a sentence of 1 word(s) gives no permutation"),
    "reverse on one word": ("dog", "reverse", "'reverse' on a sentence of 1 word(s) gives only the identity"),
    "all on one word": ("dog", "all", "'all' on a sentence of 1 word(s) gives only the identity"),
    "prefixes on two words": ("dog bites", "prefixes", "'prefixes' on a sentence of 2 word(s) gives only the "
                              "identity; expected at least 3 words"),
}  # fmt: skip


@pytest.mark.parametrize("case", ZERO_PERMUTATIONS)
def test_rules_that_measure_no_reordering_are_refused(cli, write_spec, case):
    sentence, rule, message = ZERO_PERMUTATIONS[case]
    path = write_spec(f"inputs:\n  - sentence: {sentence}\n    permutations: {rule}\n")
    refused(cli, path, f":3: inputs[0].permutations: {message}")


def test_check_update_refuses_a_spec_with_no_permutations_instead_of_writing_an_empty_baseline(cli, tmp_path):
    (tmp_path / "experiments").mkdir()
    spec = tmp_path / "experiments" / "empty.yaml"
    spec.write_text("inputs: [{sentence: dog bites man, permutations: []}]\n")
    result = cli.invoke(app, ["check", "--update", str(spec), "--results", str(tmp_path / "results")])
    assert result.exit_code == 2, result.output
    assert "inputs[0].permutations: an empty list gives no permutation" in result.output
    assert not (tmp_path / "results" / "empty").exists()


def test_the_identity_rule_on_one_word_is_still_allowed(cli, write_spec):
    result = cli.invoke(app, ["validate", str(write_spec("inputs: [{sentence: dog, permutations: identity}]\n"))])
    assert result.exit_code == 0, result.output


ZERO_ROWS = {
    "pair_distance without probes": ("[pair_distance]", "permutations: all"),
    "repeated_words without a repeated word": ("[repeated_words]", "permutations: all"),
    "prefix_invariance when every permutation moves the last word": ("[prefix_invariance]", "permutations: shifts"),
    "prefix_invariance on random draws that may all move it": ("[prefix_invariance]", "permutations: {random: 2}"),
}


@pytest.mark.parametrize("case", ZERO_ROWS)
def test_metrics_that_measure_nothing_in_the_inputs_are_refused(cli, write_spec, case):
    metrics, rule = ZERO_ROWS[case]
    path = write_spec(f"metrics: {metrics}\ninputs: [{{sentence: dog bites man, {rule}}}]\n")
    refused(cli, path, f":1: metrics: {metrics} measure nothing in these inputs and probes, so metrics.csv would "
            "have no rows", "expected a metric that applies")  # fmt: skip


def test_a_position_probe_that_leaves_nothing_to_score_is_refused(cli, write_spec):
    path = write_spec("metrics: [decodability]\ndecodability: {sentences: 8, held_out: 0.01}\n" + SENTENCE)
    refused(cli, path, ":2: decodability: held_out 0.01 of 8 sentences leaves 8 to fit and 0 to score; expected "
            "at least one on each side")  # fmt: skip
