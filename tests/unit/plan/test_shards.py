"""Sharding: unranked permutation ranges, a partition that does the work once, and a merge that writes the bytes
a whole run writes (stack spec, sweep in summary mode, causal prefixes); refused merges."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sharding import assert_same_files, merged, run_shards, run_whole

from orderlab.cli import app
from orderlab.core import permutations as perms
from orderlab.plan.shards import PERMUTATIONS, partition, work
from orderlab.spec.load import load_spec
from orderlab.vocabulary.exactsum import ExactSum

ROOT = Path(__file__).resolve().parents[3]
EXPERIMENTS = ROOT / "experiments"

# A sweep in summary mode with everything a merge must put back together: a position probe, probes, an input
# under two rules (duplicate permutations), random permutations (attention.csv's reordering anywhere), prefixes.
SWEEP = """
name: sharded_sweep
seed: 3
model: {d_model: 16, n_heads: 2, n_layers: [1, 2], causal: [true, false], dtype: float64}
encodings: [none, rope]
rows: summary
inputs:
  - sentence: the cat saw the dog
    permutations: all
  - sentence: a b c d
    permutations: {random: 7}
  - sentence: a b c d
    permutations: swaps
probes:
  - [the cat saw the dog, the dog saw the cat]
metrics: [equivariance, invariance, attention, token_shift, pair_distance, prefix_invariance, decodability]
decodability: {sentences: 16, length: 4, vocabulary: 8}
"""


@given(st.integers(1, 6), st.data())
def test_unrank_gives_the_lexicographic_permutation_and_the_stream_goes_on_from_it(n, data):
    ordered = list(itertools.permutations(range(n)))
    rank = data.draw(st.integers(0, len(ordered) - 1))
    assert perms.unrank(rank, n) == ordered[rank]
    assert list(perms.lexicographic(n, rank)) == ordered[rank:]


def test_unrank_reaches_deep_into_nine_factorial_without_enumerating():
    last = math.factorial(9) - 1
    assert perms.unrank(last, 9) == tuple(range(8, -1, -1))
    assert perms.unrank(4 * math.factorial(8), 9) == (4, 0, 1, 2, 3, 5, 6, 7, 8)  # the first to start with 4
    halfway = perms.lexicographic(9, math.factorial(9) // 2)  # then 4 more blocks of 7! with 4 first
    assert [next(halfway) for _ in range(2)] == [(4, 5, 0, 1, 2, 3, 6, 7, 8), (4, 5, 0, 1, 2, 3, 6, 8, 7)]


@given(st.lists(st.integers(0, 4), max_size=30), st.lists(st.integers(0, 30), max_size=4))
def test_ranges_tile_the_stream_and_never_split_a_run_of_equal_permutations(values, cuts):
    rules: list[perms.Rule] = [[[v, 5] for v in sorted(values)], [[v, 5] for v in sorted(values) if v % 2]]
    whole = list(perms.in_label_order_range(rules, ["a", "b"]))
    bounds = [0, *sorted(cuts), None]
    parts = [list(perms.in_label_order_range(rules, ["a", "b"], 0, a, b)) for a, b in itertools.pairwise(bounds)]
    assert [p for part in parts for p in part] == whole
    for before, after in itertools.pairwise([part for part in parts if part]):
        assert before[-1] != after[0]


def test_exact_sums_merge_from_their_saved_state_as_if_added_in_one():
    values = [0.1 * k + 1e-17 for k in range(50)]
    whole, first, second = ExactSum(), ExactSum(), ExactSum()
    whole.add(values)
    first.add(values[:17])
    second.add(values[17:])
    first.absorb(ExactSum.from_state(json.loads(json.dumps(second.state()))))
    assert first.total() == whole.total() and first.mean(50) == whole.mean(50)


@pytest.mark.parametrize("count", [1, 2, 5, 7])
def test_the_partition_does_every_unit_once_with_near_equal_work(write_spec, count):
    spec = load_spec(write_spec(SWEEP)).spec
    shards = partition(spec, count)
    whole = work(spec)
    pieces = [unit for shard in shards for unit in shard]
    assert [u.segment for u in whole] == list(dict.fromkeys(u.segment for u in pieces))  # order kept, none lost
    for unit in whole:
        ranges = [(u.start, u.stop) for u in pieces if u.segment == unit.segment]
        if unit.kind == PERMUTATIONS:
            assert ranges[0][0] == 0 and ranges[-1][1] == unit.total
            assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        else:
            assert len(ranges) == 1
    weights = [sum(u.weight for u in shard) for shard in shards]
    total = sum(u.weight for u in whole)
    assert sum(weights) == total and max(weights) - min(weights) <= 1 + max(
        u.weight for u in whole if u.kind != PERMUTATIONS
    )


@pytest.fixture(scope="module")
def causal_runs(tmp_path_factory) -> tuple[Path, list[Path]]:
    """experiments/causal_prefix.yaml (a stack sweep of causal prefixes, rows per permutation): whole, in 4 shards."""
    from typer.testing import CliRunner

    spec, out = EXPERIMENTS / "causal_prefix.yaml", tmp_path_factory.mktemp("causal")
    return run_whole(CliRunner(), spec, out / "whole"), run_shards(CliRunner(), spec, 4, out / "shards")


def test_causal_prefix_shards_merged_are_byte_identical_to_the_whole_run(cli, causal_runs, tmp_path):
    whole, shards = causal_runs
    assert len({(s / "metrics.csv").read_bytes() for s in shards}) == 4  # each shard did its own part
    cut = [u for s in shards for u in json.loads((s / "manifest.json").read_text())["shard"]["units"] if u["start"]]
    assert cut  # some sentence's permutations were split between shards
    assert_same_files(merged(cli, list(reversed(shards)), tmp_path), whole)


def test_sweep_in_summary_mode_merged_is_byte_identical_to_the_whole_run(cli, write_spec, tmp_path):
    spec = write_spec(SWEEP)
    whole = run_whole(cli, spec, tmp_path / "whole")
    assert_same_files(merged(cli, run_shards(cli, spec, 3, tmp_path / "shards"), tmp_path / "merged"), whole)


def refused(cli, folders: list[Path], out: Path) -> str:
    result = cli.invoke(app, ["merge", *map(str, folders), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert not out.exists() or not any(out.iterdir())  # nothing written
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


def test_a_merge_with_a_shard_missing_or_given_twice_is_refused(cli, causal_runs, tmp_path):
    shards = causal_runs[1]
    assert "shard(s) 2 of 4 missing" in refused(cli, [shards[0], *shards[2:]], tmp_path / "out")
    assert "shard 1 of 4 is given twice" in refused(cli, [*shards, shards[0]], tmp_path / "out")


def test_shards_of_another_spec_or_another_n_are_refused(cli, causal_runs, write_spec, tmp_path):
    shards = causal_runs[1]
    edited = write_spec((EXPERIMENTS / "causal_prefix.yaml").read_text() + "\n# edited\n")
    other = run_shards(cli, edited, 4, tmp_path / "edited", [4])
    assert "expected the shards of one run of one spec" in refused(cli, [*shards[:3], *other], tmp_path / "out")
    eighth = run_shards(cli, EXPERIMENTS / "causal_prefix.yaml", 8, tmp_path / "eighths", [8])
    assert "expected shards of one partition" in refused(cli, [*shards, *eighth], tmp_path / "out")
    assert "expected the manifest.json of a shard folder" in refused(cli, [tmp_path], tmp_path / "out")


def test_a_shard_that_measured_another_round_off_is_refused(cli, causal_runs, tmp_path):
    copies = []
    for shard in causal_runs[1]:
        copy = tmp_path / shard.name
        copy.mkdir()
        for path in shard.iterdir():
            (copy / path.name).write_bytes(path.read_bytes())
        copies.append(copy)
    partials = json.loads((copies[1] / "partials.json").read_text())
    noisy = next(p for p in partials["pieces"] if p["partial"] and p["unit"]["start"] > 0)  # continues shard 1's
    noisy["partial"]["noise"][0][3] = noisy["partial"]["noise"][0][3] * 2 + 1e-20
    (copies[1] / "partials.json").write_text(json.dumps(partials))
    assert "partials.json: sha256" in refused(cli, copies, tmp_path / "out")  # edited since written
    rehash(copies[1])  # as if the other shard had been written so: the merge still refuses it
    assert "measured another round-off" in refused(cli, copies, tmp_path / "out")


def rehash(shard: Path) -> None:
    """Record the sha256 of the shard's files as they are now (a shard forged consistently)."""
    manifest = json.loads((shard / "manifest.json").read_text())
    manifest["shard"]["sha256"] = {name: hashlib.sha256((shard / name).read_bytes()).hexdigest()
                                   for name in manifest["shard"]["sha256"]}  # fmt: skip
    (shard / "manifest.json").write_text(json.dumps(manifest))


def test_a_bad_shard_option_is_one_line(cli, tmp_path):
    for bad in ("0/3", "4/3", "two", "1/0"):
        result = cli.invoke(
            app, ["run", str(EXPERIMENTS / "dog_bites_man.yaml"), "--out", str(tmp_path), "--shard", bad]
        )
        assert result.exit_code == 2 and result.output.startswith("error: --shard:"), result.output
        assert not any(tmp_path.iterdir())
