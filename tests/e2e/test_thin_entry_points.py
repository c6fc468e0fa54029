"""The entry points stay thin and the command line reads plainly: commands/ returns data and never draws; help
shows no Python types and one usage style; a bad option value is one line at any terminal width."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer
from command_line import python_orderlab
from typer.testing import CliRunner

from orderlab.cli import app

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = sorted((ROOT / "orderlab" / "commands").glob("*.py"))
DRAWING_CALLS = {"print", "echo", "secho", "print_json", "log", "rule"}  # print() or console.print(), typer.echo()
DRAWING_NAMES = {"stdout", "stderr", "Console", "log_console", "stderr_console"}


def drawing_in(path: Path) -> list[str]:
    """Calls in a module that write to the terminal: print/echo/console methods, sys.stdout or stderr, consoles."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in DRAWING_CALLS:
                found.append(f"{path.name}:{node.lineno}: {name}()")
        if isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in DRAWING_NAMES:
                found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_no_command_draws_on_the_terminal():
    assert COMMANDS, "orderlab/commands/ moved"
    assert [line for path in COMMANDS for line in drawing_in(path)] == []


def test_the_reader_catches_drawing(tmp_path: Path):
    drawn = tmp_path / "drawn.py"
    drawn.write_text("import sys\ndef f(console):\n    console.print('x')\n    print(1)\n    sys.stderr.write('y')\n")
    assert len(drawing_in(drawn)) == 3


def test_cli_stays_thin():
    lines = (ROOT / "orderlab" / "cli.py").read_text().splitlines()
    assert len(lines) <= 290, "cli.py parses, calls commands/ and hands the result to report/: keep it so"


def commands() -> list[str]:
    return sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("command", [None, *commands()])
def test_help_shows_no_python_types_and_one_usage_style(command: str | None):
    result = CliRunner().invoke(app, [command, "--help"] if command else ["--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    for leaked in ("<bool>", "<list[", "<path>", "<int>", "<float>", "<str>", "{spec}", "]...]"):
        assert leaked not in result.output, (leaked, result.output)
    usage = next(line for line in result.output.splitlines() if "Usage:" in line).split("[OPTIONS]")[-1].split()
    for word in usage:  # SPEC, [SPEC]..., SHARD_DIR...: capitals, optional in brackets, several with ...
        assert word.strip("[].").isupper() or word == "COMMAND" or word == "[ARGS]...", usage


@pytest.mark.parametrize("columns", ["0", "10", "80"])
@pytest.mark.parametrize(
    "arguments",
    [["run", "--device", "tpu", "x.yaml"], ["run"], ["trace", "x.yaml", "--decimals", "40"], ["check", "--rtol", "a"]],
)
@pytest.mark.slow
def test_a_bad_option_value_is_one_line_at_any_width(columns: str, arguments: list[str]):
    done = python_orderlab(*arguments, env={"COLUMNS": columns}, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "--help" in lines[0]
