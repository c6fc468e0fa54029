"""The README and docs/ hold what the code does: every page reachable, every link alive, the README's printed
run, command list and the development page's module map as the code has them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.spec.extras import installed

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def prose(path: Path) -> str:
    """A page without its fenced code blocks: their `#` lines are comments, not headings."""
    return FENCE.sub("", path.read_text())


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats numbered."""
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} +(.+?) *$", prose(path), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        seen[slug] = seen.get(slug, -1) + 1
        if seen[slug]:
            seen[f"{slug}-{seen[slug]}"] = 0
    return set(seen)


def relative_links(path: Path) -> list[str]:
    return [t for t in LINK.findall(prose(path)) if not re.match(r"[a-z]+:", t)]


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / target.split("#")[0]).resolve() for target in relative_links(README)}
    assert [page.name for page in PAGES if page.resolve() not in linked] == []


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path):
    broken = []
    for target in relative_links(page):
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def fenced_block_after(marker: str, text: str) -> list[str]:
    start = text.index(marker)
    block = re.search(r"^```[a-z]*\n(.*?)^```", text[start:], re.M | re.S)
    assert block, f"README: no code block after {marker!r}"
    return block.group(1).splitlines()


def test_the_readme_shows_dog_bites_man_as_it_prints(tmp_path: Path, monkeypatch):
    shown = fenced_block_after("<!-- the output of `orderlab run experiments/dog_bites_man.yaml`", README.read_text())
    monkeypatch.chdir(tmp_path)  # `--out results` as `make run` writes it, so the printed path is the README's
    result = CliRunner().invoke(app, ["run", str(ROOT / "experiments" / "dog_bites_man.yaml")])
    assert result.exit_code == 0, result.output
    printed = [line.rstrip() for line in result.output.strip("\n").splitlines()]
    table_end = next(i for i, line in enumerate(printed) if line.startswith("wrote "))
    assert printed[:table_end] == shown[:table_end]  # title, table and caption wrap at the table's width
    wrote = re.compile(r" in [0-9.]+ s$")  # the last line wraps at the terminal's width; its time varies
    assert wrote.sub("", " ".join(printed[table_end:])) == wrote.sub("", " ".join(shown[table_end:]))


def readme_commands() -> list[list[str]]:
    """The README's command list, one line per command: its words before the comment."""
    lines = fenced_block_after("<!-- one line per command;", README.read_text())
    return [line.split("#")[0].split() for line in lines if line.strip()]


def test_the_readme_lists_every_command():
    listed = {words[1] for words in readme_commands()}
    assert listed == set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_every_option_the_readme_lists_is_one_its_command_takes():
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    unknown = []
    for words in readme_commands():
        options = {name for param in commands[words[1]].params for name in param.opts}
        unknown += [f"{words[1]} {word}" for word in re.findall(r"--[a-z-]+", " ".join(words)) if word not in options]
    assert unknown == []


def test_the_module_map_names_every_module_and_only_those():
    page = (ROOT / "docs" / "development.md").read_text()
    tree = fenced_block_after("<!-- the module map", page)
    named = set(re.findall(r"[a-z_0-9]+\.py\b", "\n".join(tree))) | set(re.findall(r"([a-z_]+)/", "\n".join(tree)))
    package = ROOT / "orderlab"
    modules = {p.name for p in package.rglob("*.py") if p.name != "__init__.py"}
    folders = {p.name for p in package.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    assert modules - named == set(), "docs/development.md's module map misses these modules"
    assert folders - named == set(), "docs/development.md's module map misses these folders"
    gone = named - modules - folders - {"__init__.py", "orderlab"}
    assert gone == set(), "docs/development.md's module map names modules that are gone"


CODE_PATH = re.compile(r"\b((?:orderlab|tests|benchmarks)/[\w./-]*\w)(?:::(\w+))?")


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_module_test_or_benchmark_a_page_names_exists(page: Path):
    """Module paths in prose go stale when code moves: each must be a file or folder, each `::test` defined in it."""
    missing = []
    for path, test in CODE_PATH.findall(page.read_text()):
        file = ROOT / path
        if not file.exists():
            missing.append(path)
        elif test and not re.search(rf"^def {test}\(", file.read_text(), re.M):
            missing.append(f"{path}::{test}")
    assert missing == []


def test_the_zoo_page_holds_the_families_table_as_the_registry_prints_it():
    from orderlab.families.docs_table import markdown_table

    found = re.search(r"python -m orderlab\.families\.docs_table -->\n(.*?)<!-- end of generated table -->",
                      (ROOT / "docs" / "zoo.md").read_text(), re.S)  # fmt: skip
    assert found, "docs/zoo.md lost its generated table's markers"
    assert found.group(1) == markdown_table(), "run `python -m orderlab.families.docs_table` and paste into docs/zoo.md"


@pytest.mark.slow
@pytest.mark.skipif(not installed("transformers"), reason="builds a seeded model of every family: orderlab[hf]")
def test_the_python_page_holds_the_hook_names_tables_as_the_families_declare_them():
    from orderlab.measure.hook_listing import markdown_table

    found = re.search(r"python -m orderlab\.measure\.hook_listing -->\n(.*?)<!-- end of generated tables -->",
                      (ROOT / "docs" / "python.md").read_text(), re.S)  # fmt: skip
    assert found, "docs/python.md lost its generated hook-names tables"
    assert found.group(1) == markdown_table(), (
        "run `python -m orderlab.measure.hook_listing`, paste into docs/python.md"
    )
