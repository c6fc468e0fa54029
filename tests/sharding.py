"""Running a spec whole and in shards through the CLI, merging the shards, and comparing folders byte for byte:
shared by the shard tests of the stack (unit/plan/test_shards.py) and of pretrained models
(e2e/pretrained/test_shards_pretrained.py)."""

from __future__ import annotations

from pathlib import Path

from orderlab.cli import app
from orderlab.spec.load import load_spec


def run_whole(cli, spec: Path, out: Path) -> Path:
    result = cli.invoke(app, ["run", str(spec), "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    return out / load_spec(spec).spec.name


def run_shards(cli, spec: Path, count: int, out: Path, indexes: list[int] | None = None) -> list[Path]:
    indexes = indexes or list(range(1, count + 1))
    for index in indexes:
        result = cli.invoke(app, ["run", str(spec), "--out", str(out), "--shard", f"{index}/{count}"])
        assert result.exit_code == 0, result.output
        assert f"wrote shard {index} of {count}" in result.output
    name = load_spec(spec).spec.name
    return [out / f"{name}.shard-{index}-of-{count}" for index in indexes]


def assert_same_files(merged: Path, whole: Path) -> None:
    assert sorted(p.name for p in merged.iterdir()) == sorted(p.name for p in whole.iterdir())
    for path in whole.iterdir():
        assert (merged / path.name).read_bytes() == path.read_bytes(), path.name


def merged(cli, shards: list[Path], out: Path) -> Path:
    result = cli.invoke(app, ["merge", *map(str, shards), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out / shards[0].name.split(".shard-")[0]
