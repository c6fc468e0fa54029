"""The environment a command runs in: any stdout encoding, any terminal width, a terminal that must not receive a
spec's escape sequences, an address-space or cgroup memory limit, and a model whose positions a sentence outgrows."""

from __future__ import annotations

import resource
from pathlib import Path

import command_line
import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.plan.memory import cgroup_room

ROOT = Path(__file__).resolve().parents[2]
SPEC = """name: small
description: {description}
model: {{d_model: 8, n_heads: 2, n_layers: 1}}
encodings: [none, sinusoidal]
inputs:
  - sentence: {sentence}
    permutations: reverse
metrics: [equivariance]
"""


def small_spec(folder: Path, sentence: str = "dog bites man", description: str = "a small run") -> Path:
    path = folder / "small.yaml"
    path.write_text(SPEC.format(sentence=sentence, description=description))
    return path


def python_orderlab(*args: str | Path, env: dict[str, str] | None = None, limit: int | None = None):
    """`python -m orderlab ARGS` in a child process (its own stdout encoding, its own resource limits)."""

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return command_line.python_orderlab(*args, env=env, preexec_fn=limited, encoding="utf-8", errors="replace")


@pytest.mark.slow
def test_a_stdout_that_cannot_encode_the_marks_gets_ascii_marks(tmp_path: Path):
    """≈, ✓ and ✗ crashed `run` and `trace` after their CSVs were written (exit 1, the code for NaN) under
    PYTHONIOENCODING=ascii; they become ~, + and x, and the table keeps its width. `run` writes to an ASCII stdout,
    `trace` to a Latin-1 one (an encoding not named ascii that cannot encode them either)."""
    spec = small_spec(tmp_path)
    run = python_orderlab("run", spec, "--out", tmp_path / "out", env={"PYTHONIOENCODING": "ascii"})
    assert run.returncode == 0, run.stderr
    assert "~0 +" in run.stdout and " x" in run.stdout and "UnicodeEncodeError" not in run.stderr
    widths = {len(line) for line in run.stdout.splitlines() if line.startswith("|")}
    assert len(widths) == 1, run.stdout  # every row of the table as wide as the others
    trace = python_orderlab("trace", spec, "--out", tmp_path / "out", env={"PYTHONIOENCODING": "latin-1"})
    assert trace.returncode == 0, trace.stderr
    assert "UnicodeEncodeError" not in trace.stderr


@pytest.mark.parametrize("columns", ["0", "10", "80"])
def test_any_terminal_width_shows_every_row(tmp_path: Path, columns: str):
    """COLUMNS=0 printed nothing and COLUMNS=10 squeezed the metric names out; the table is never drawn narrower than
    40 columns (a narrower terminal wraps its lines, losing nothing)."""
    result = CliRunner().invoke(app, ["run", str(small_spec(tmp_path)), "--out", str(tmp_path / "out")],
                                env={"COLUMNS": columns})  # fmt: skip
    assert result.exit_code == 0, result.output
    for shown in ("dog bites man", "equivariance", "sinusoidal", "none", "wrote"):
        assert shown in result.output, result.output


def test_a_specs_escape_sequences_never_reach_the_terminal(tmp_path: Path):
    """A window title, a screen clear, a clipboard write (OSC 52), a C1 CSI and a right-to-left override in the
    description and the sentence are shown as harmless text."""
    hostile = r'"\e]0;pwned\a \e[2J \e]52;c;ZWNobyBoaQ==\a \x9b31m \u202e'
    spec = small_spec(tmp_path, sentence=hostile + 'dog bites man"', description=hostile + ' title"')
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out")], env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    for control in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert control not in result.output
    assert "dog bites man" in result.output and "title" in result.output and "[2J" in result.output


BIG = """name: big
model: {d_model: 1024, n_heads: 8, n_layers: 12, dtype: float64}
encodings: [none]
inputs: [{sentence: dog bites man, permutations: reverse}]
metrics: [equivariance]
"""


@pytest.mark.slow
def test_an_address_space_limit_is_read_by_the_plan(tmp_path: Path):
    """Under `ulimit -v` validate accepted a run (2.1 GB of float64 weights) that then died in a torch allocation:
    memory was sized from /proc/meminfo alone."""
    spec = tmp_path / "big.yaml"
    spec.write_text(BIG)
    assert python_orderlab("validate", spec).returncode == 0  # the machine itself has room (with no limit)
    limited = python_orderlab("validate", spec, limit=3 * 10**9)
    assert limited.returncode == 2, limited.stdout + limited.stderr
    line = limited.stderr.strip()
    assert line.startswith(f"error: {spec}:2: model.d_model: ") and line.count("\n") == 0, line
    assert "the address-space limit (ulimit -v) leaves" in line


def cgroup_tree(root: Path, own: str, files: dict[str, str]) -> Path:
    """A fake /sys/fs/cgroup holding `files` in the folder of cgroup `own`, and its /proc/self/cgroup."""
    folder = root / own.strip("/")
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_a_cgroup_memory_limit_is_read_by_the_plan(tmp_path: Path):
    # v2: memory.max less memory.current, the inactive page cache counted as room
    root, self_cgroup = tmp_path / "v2", tmp_path / "v2-self"
    cgroup_tree(root, "box", {"memory.max": "4000000000\n", "memory.current": "1000000000\n",
                              "memory.stat": "anon 800000000\ninactive_file 200000000\n"})  # fmt: skip
    self_cgroup.write_text("0::/box\n")
    assert cgroup_room(root, self_cgroup) == 3_200_000_000
    # a parent's tighter limit holds the child too; 'max' is no limit
    cgroup_tree(root, "", {"memory.max": "2000000000\n", "memory.current": "1500000000\n"})
    assert cgroup_room(root, self_cgroup) == 500_000_000
    (root / "box" / "memory.max").write_text("max\n")
    (root / "memory.max").write_text("max\n")
    assert cgroup_room(root, self_cgroup) is None
    # v1: the memory controller's own tree; its 'unlimited' is a page-rounded 2**63 - 1
    root, self_cgroup = tmp_path / "v1", tmp_path / "v1-self"
    cgroup_tree(root / "memory", "job", {"memory.limit_in_bytes": "1000000000\n",
                                         "memory.usage_in_bytes": "400000000\n",
                                         "memory.stat": "total_inactive_file 100000000\n"})  # fmt: skip
    cgroup_tree(root / "memory", "", {"memory.limit_in_bytes": "9223372036854771712\n",
                                      "memory.usage_in_bytes": "7000000000\n"})  # fmt: skip
    self_cgroup.write_text("4:memory:/job\n1:cpu:/\n")
    assert cgroup_room(root, self_cgroup) == 700_000_000


@pytest.mark.parametrize(
    ("family", "where", "message"),
    [
        ("gpt2", "inputs[1].sentence", "600 words make 601 tokens with the model's 1 special token(s); its positions "
         "cover 512; expected at most 511 words"),
        ("bert", "inputs[1].sentence", "600 words make 602 tokens with the model's 2 special token(s); its positions "
         "cover 512; expected at most 510 words"),
        ("llama", "inputs[1].sentence", "600 words make 601 tokens"),
    ],
)  # fmt: skip
def test_a_sentence_too_long_for_the_models_positions_is_refused_at_validate(tmp_path: Path, family: str, where: str,
                                                                             message: str):  # fmt: skip
    """It was refused only at run time, as `w0 w1 ...: 601 tokens; expected at most 512`, without file or field."""
    spec = tmp_path / "long.yaml"
    long = " ".join(f"w{i}" for i in range(600))
    spec.write_text(f"name: long\nmodel: {{kind: hf, family: {family}, d_model: 16, n_heads: 2, n_layers: 1}}\n"
                    f"inputs:\n  - sentence: dog bites man\n  - sentence: {long}\n    permutations: reverse\n"
                    "metrics: [equivariance]\n")  # fmt: skip
    for command in ("validate", "run"):
        result = CliRunner().invoke(app, [command, str(spec), *(["--out", str(tmp_path)] if command == "run" else [])])
        assert result.exit_code == 2, result.output
        assert result.output.startswith(f"error: {spec}:5: {where}: {message}"), result.output
        assert result.output.count("\n") == 1
    assert not (tmp_path / "long").exists()


def test_relative_positions_take_any_length_at_validate(tmp_path: Path):
    spec = tmp_path / "long.yaml"
    long = " ".join(f"w{i}" for i in range(600))
    spec.write_text(f"name: long\nmodel: {{kind: hf, family: bloom, d_model: 16, n_heads: 2, n_layers: 1}}\n"
                    f"inputs:\n  - sentence: {long}\n    permutations: reverse\nmetrics: [equivariance]\n")  # fmt: skip
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 0, result.output
