"""Results folders and shard sets from strangers (issue 22): merge, report and plot read them as untrusted input.

A shard manifest naming a folder outside --out, claiming 10^12 shards, or whose files were edited since they
were written; a manifest naming a system file as its spec; a folder with a foreign attention.csv or metrics.csv;
a 5000-digit --shard. Each ends in exit 2 and one line, nothing written outside --out, no file's contents
leaked; a hypothesis fuzzer over manifests and shard sets holds every outcome to a good merge or that line.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import re
import shutil
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from command_line import assert_refused, invoke
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
RESULTS = ROOT / "results"
SENTINEL = "a user's notes: must survive\n"

# Small and quick, with what a merge must put back together: a sentence whose permutations the cuts split (rows per
# permutation, partial summaries), probes (a whole unit's max rows), attention maps.
SPEC = """
name: tiny_shards
seed: 1
model: {d_model: 8, n_heads: 2, n_layers: 2, dtype: float64}
encodings: [none, rope]
inputs:
  - sentence: a b c d
    permutations: all
probes:
  - [a b c d, d c b a]
metrics: [equivariance, invariance, attention, pair_distance]
"""
NAME, COUNT = "tiny_shards", 3


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes): what must not change."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The tiny spec run whole and in 3 shards."""
    base = tmp_path_factory.mktemp("tiny")
    spec = base / "tiny.yaml"
    spec.write_text(SPEC)
    assert invoke("run", spec, "--out", base / "whole", "-q").exit_code == 0
    for index in range(1, COUNT + 1):
        result = invoke("run", spec, "--out", base / "shards", "--shard", f"{index}/{COUNT}", "-q")
        assert result.exit_code == 0, result.output
    return base / "whole" / NAME, [base / "shards" / f"{NAME}.shard-{k}-of-{COUNT}" for k in range(1, COUNT + 1)]


def copies(shards: list[Path], into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    for shard in shards:
        shutil.copytree(shard, into / shard.name)
    return [into / shard.name for shard in shards]


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def rehash(shard: Path) -> None:
    """Record the sha256 of the shard's files as they are now: a shard forged consistently, not damaged."""
    edit_json(
        shard / "manifest.json",
        lambda m: m["shard"].update(
            sha256={name: hashlib.sha256((shard / name).read_bytes()).hexdigest() for name in m["shard"]["sha256"]}
        ),
    )


def test_the_tiny_shards_merge_into_the_whole_runs_bytes(runs, tmp_path: Path):
    whole, shards = runs
    result = invoke("merge", *shards, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    for name in ("metrics.csv", "summary.csv", "attention.csv"):
        assert (tmp_path / NAME / name).read_bytes() == (whole / name).read_bytes()


# --- case 1: a shard manifest's spec name is the merged folder's name -----------------------------------


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/orderlab-escaped", "..", "a/b", ".hidden", ""])
def test_a_shard_manifest_naming_a_folder_outside_out_is_refused_and_nothing_is_written(runs, tmp_path, name):
    shards = copies(runs[1], tmp_path / "given")
    for shard in shards:
        edit_json(shard / "manifest.json", lambda m: m["spec"].update(name=name))
    out = tmp_path / "deep" / "er" / "out"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text(SENTINEL)
    before = tree(tmp_path)
    assert_refused(invoke("merge", *shards, "--out", out), "manifest.json: spec.name: ")
    assert tree(tmp_path) == before
    assert not Path("/tmp/orderlab-escaped").exists()


# --- case 6: numbers from a manifest size nothing ---------------------------------------------------------


T = TypeVar("T")


def with_peak_memory(call: Callable[[], T]) -> tuple[T, int]:
    """What `call` returns and the most memory Python allocated while it ran (tracemalloc's peak), in bytes."""
    tracemalloc.start()
    try:
        return call(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("field", "value"), [("count", 10**12), ("index", 10**12), ("count", -1), ("index", 0)])
def test_a_shard_manifest_claiming_absurd_numbers_is_refused_without_allocating(runs, tmp_path, field, value):
    shards = copies(runs[1], tmp_path / "given")
    for shard in shards:
        edit_json(shard / "manifest.json", lambda m: m["shard"].update({field: value}))
    result, peak = with_peak_memory(lambda: invoke("merge", *shards, "--out", tmp_path / "out"))
    assert_refused(result, f"shard.{field}")
    assert peak < 50 * 2**20
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_partials_claiming_a_trillion_permutations_merge_into_one_line_not_memory(runs, tmp_path):
    shards = copies(runs[1], tmp_path / "given")
    for shard in shards:
        edit_json(shard / "partials.json", lambda p: [piece["unit"].update(total=10**12) for piece in p["pieces"]])
        rehash(shard)
    result, peak = with_peak_memory(lambda: invoke("merge", *shards, "--out", tmp_path / "out"))
    assert_refused(result, "of 1000000000000; expected all of them")
    assert peak < 200 * 2**20


# --- case 7: merge integrity --------------------------------------------------------------------------


def edit_a_value(shard: Path) -> None:
    """One metrics.csv value set to 999.9999, as in the issue."""
    path = shard / "metrics.csv"
    header, *lines = path.read_text().splitlines(keepends=True)
    at = header.split(",").index("value")
    cells = lines[0].split(",")
    cells[at] = "9.999999e+02"
    path.write_text(header + ",".join(cells) + "".join(lines[1:]))


def test_an_edited_shard_metrics_csv_is_refused_by_its_hash(runs, tmp_path):
    shards = copies(runs[1], tmp_path / "given")
    edit_a_value(shards[1])
    line = assert_refused(invoke("merge", *shards, "--out", tmp_path / "out"), "metrics.csv: sha256 ")
    assert "differs from the" in line and NAME + ".shard-2-of-3" in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_an_edited_shard_with_its_hash_rewritten_still_cannot_disagree_with_its_summary(runs, tmp_path):
    shards = copies(runs[1], tmp_path / "given")
    edit_a_value(shards[1])
    rehash(shards[1])
    assert_refused(
        invoke("merge", *shards, "--out", tmp_path / "out"),
        "merged metrics.csv and summary disagree at ",
        "the rows reach 9.999999e+02",
    )
    assert not (tmp_path / "out" / NAME).exists()


def test_a_shard_without_recorded_hashes_is_refused(runs, tmp_path):
    shards = copies(runs[1], tmp_path / "given")
    edit_json(shards[0] / "manifest.json", lambda m: m["shard"].pop("sha256"))
    assert_refused(invoke("merge", *shards, "--out", tmp_path / "out"), "shard.sha256: records no sha256")


# --- case 8: --shard with a 5000-digit number ---------------------------------------------------------------


@pytest.mark.parametrize("shard", ["9" * 5000 + "/1", "1/" + "9" * 5000, "1/" + "0" * 5000 + "2"])
def test_a_5000_digit_shard_option_is_one_line(tmp_path, shard):
    result = invoke("run", ROOT / "experiments" / "dog_bites_man.yaml", "--out", tmp_path, "--shard", shard)
    assert_refused(result, "--shard: ", f"({len(shard):,} characters) is not K/N")
    assert not any(tmp_path.iterdir())


# --- case 2: report embeds the spec only when it is the one the manifest records ---------------------------

MARKER = "orderlab-test-secret-7f3a9c"


SMALL = "worked_example"  # a folder whose whole report draws in a second: the tests that report it whole


def results_copy(tmp_path: Path, name: str = "dog_bites_man") -> Path:
    folder = tmp_path / "results" / name
    shutil.copytree(RESULTS / name, folder)
    return folder


@pytest.mark.parametrize("recorded", ["its own sha256", "another sha256"])
@pytest.mark.slow
def test_a_manifest_naming_another_file_as_its_spec_never_puts_it_into_the_report(tmp_path, recorded):
    secret = tmp_path / "secret.txt"
    secret.write_text(f"root:x:0:0:{MARKER}:/root:/bin/bash\n")
    folder = results_copy(tmp_path, SMALL)
    sha = hashlib.sha256(b"something else").hexdigest()
    if recorded == "its own sha256":  # a manifest forged by someone who knows the file: nothing to leak, yet out
        sha = hashlib.sha256(secret.read_bytes()).hexdigest()
        secret.write_text(secret.read_text() + "changed since\n")
    edit_json(folder / "manifest.json", lambda m: m["spec"].update(path=str(secret), sha256=sha))
    out = tmp_path / "report.html"
    result = invoke("report", folder, "--out", out)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert MARKER not in page
    assert "left out: no readable file there has the sha256 the manifest records" in page


@pytest.mark.slow
def test_a_manifest_naming_a_fifo_as_its_spec_neither_hangs_nor_leaks(tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    folder = results_copy(tmp_path, SMALL)
    edit_json(folder / "manifest.json", lambda m: m["spec"].update(path=str(fifo)))
    result = invoke("report", folder, "--out", tmp_path / "report.html")
    assert result.exit_code == 0, result.output
    assert "left out" in (tmp_path / "report.html").read_text()


@pytest.mark.slow
def test_the_spec_whose_sha256_is_recorded_is_still_shown(tmp_path):
    folder = results_copy(tmp_path, SMALL)
    spec = ROOT / "experiments" / f"{SMALL}.yaml"
    edit_json(folder / "manifest.json", lambda m: m["spec"].update(path=str(spec)))
    result = invoke("report", folder, "--out", tmp_path / "report.html")
    assert result.exit_code == 0, result.output
    assert "sha256 as recorded" in (tmp_path / "report.html").read_text()


# --- case 8: foreign results CSVs in report and plot --------------------------------------------------------

FOREIGN = [
    ("attention.csv", "a,b\n1,2\n", "attention.csv: encoding: no such column"),
    ("attention.csv", None, "attention.csv: query: line 2: '1000000000' is not a whole number in 0..2"),
    ("attention.csv", "encoding,reordering,layer,head,query,key,value\nnone,0,1,0,0,0,high\n", "value: line 2: 'high'"),
    ("metrics.csv", "case,layer,metric,value\npermutation,one,equivariance,0.1\n", "metrics.csv: input: no such"),
    ("metrics.csv", None, "metrics.csv: layer: line 2: 'one' is not a whole number"),
    ("manifest.json", '{"spec": {"name": "../x", "sha256": "00"}}', "manifest.json: spec.name: got '../x'"),
]


def foreign_folder(tmp_path: Path, file: str, text: str | None) -> Path:
    folder = results_copy(tmp_path)
    path = folder / file
    if text is None:  # the file orderlab wrote, one cell replaced
        header, first, *rest = path.read_text().splitlines(keepends=True)
        column = "query" if file == "attention.csv" else "layer"
        cells = first.split(",")
        cells[header.split(",").index(column)] = "1000000000" if column == "query" else "one"
        text = header + ",".join(cells) + "".join(rest)
    path.write_text(text)
    return folder


@pytest.mark.parametrize(("file", "text", "message"), FOREIGN)
def test_report_over_a_folder_with_a_foreign_file_is_one_line_naming_file_and_column(tmp_path, file, text, message):
    folder = foreign_folder(tmp_path, file, text)
    assert_refused(invoke("report", folder, "--out", tmp_path / "report.html"), message)
    assert not (tmp_path / "report.html").exists()


@pytest.mark.parametrize(("file", "text", "message"), FOREIGN)
def test_plot_over_a_folder_with_a_foreign_file_is_one_line_and_draws_nothing(tmp_path, file, text, message):
    folder = foreign_folder(tmp_path, file, text)
    assert_refused(invoke("plot", folder), message)
    assert not (folder / "figures").exists()


@pytest.mark.parametrize("file", ["metrics.csv", "attention.csv", "summary.csv", "manifest.json"])
def test_report_over_a_folder_with_a_fifo_for_a_file_is_one_line_not_a_hang(tmp_path, file):
    folder = results_copy(tmp_path)
    (folder / file).unlink()
    os.mkfifo(folder / file)
    assert_refused(invoke("report", folder, "--out", tmp_path / "report.html"), file, "not a regular file")


def test_check_against_a_baseline_csv_that_is_a_fifo_is_one_line_not_a_hang(tmp_path):
    folder = results_copy(tmp_path, "worked_example")
    (folder / "summary.csv").unlink()
    os.mkfifo(folder / "summary.csv")
    result = invoke("check", ROOT / "experiments" / "worked_example.yaml", "--results", tmp_path / "results")
    assert result.exit_code == 2, result.output
    assert "summary.csv: not a regular file" in result.output and "Traceback" not in result.output


# --- the fuzzer: manifests and shard sets -------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**15), 10**15)
    | st.sampled_from([10**12, -1, 0, 2**63, 100_001])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["../../escaped", "/tmp/orderlab-fuzz-escaped", "..", "", "a/b", "x" * 300, NAME, "0" * 64])
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def paths_in(document: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a JSON document (capped, so a partials.json stays quick to walk)."""
    found = [prefix]
    children = document.items() if isinstance(document, dict) else enumerate(document[:3]) if isinstance(
        document, list) else []  # fmt: skip
    for key, value in children:
        found += paths_in(value, (*prefix, key))
    return found[:400]


def set_at(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    """`document` with the value at `path` replaced; unchanged where an earlier edit removed what `path` names."""
    if not path:
        return value
    target = document
    for key in path[:-1]:
        if not _holds(target, key):
            return document
        target = target[key]
    if _holds(target, path[-1]) or isinstance(target, dict):
        target[path[-1]] = value
    return document


def _holds(container: Any, key: Any) -> bool:
    if isinstance(container, dict):
        return key in container
    return isinstance(container, list) and isinstance(key, int) and -len(container) <= key < len(container)


Edit = tuple[int, str, tuple[Any, ...], Any, bool]  # shard, file, where, new value, rehashed after


@st.composite
def hostile_shard_sets(draw: st.DrawFn, shards: list[Path]) -> tuple[list[int], list[Edit]]:
    """Which shards to hand over (missing, repeated, reordered) and what to change in their files."""
    chosen = draw(st.lists(st.integers(0, COUNT - 1), min_size=1, max_size=COUNT + 1))
    edits = []
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, COUNT - 1))
        file = draw(st.sampled_from(["manifest.json", "partials.json"]))
        document = json.loads((shards[index] / file).read_text())
        path = draw(st.sampled_from(paths_in(document)))
        edits.append((index, file, path, draw(JSON_VALUES), draw(st.booleans())))
    return chosen, edits


@pytest.fixture(scope="module")
def fuzz_base(runs) -> list[Path]:
    return runs[1]


@pytest.mark.slow  # 40 fuzzed merges: about 20 s
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_manifests_and_shard_sets_merge_well_or_are_one_line_and_write_only_under_out(fuzz_base, runs, data):
    chosen, edits = data.draw(hostile_shard_sets(fuzz_base))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        shards = copies(fuzz_base, root / "given" / "a" / "b")
        for index, file, path, value, rehashed in edits:
            target = shards[index] / file
            target.write_text(json.dumps(set_at(json.loads(target.read_text()), path, copy.deepcopy(value))))
            if rehashed and file == "partials.json":
                with contextlib.suppress(KeyError, TypeError, AttributeError, OSError):  # unless the manifest is broken
                    rehash(shards[index])
        before = tree(root)
        result = invoke("merge", *[shards[i] for i in chosen], "--out", root / "out")
        assert result.exit_code in (0, 2), result.output
        assert "Traceback" not in result.output
        assert not Path("/tmp/orderlab-fuzz-escaped").exists()
        after = tree(root)
        assert {k: v for k, v in after.items() if not k.startswith("out/")} == before
        if result.exit_code == 2:
            assert result.output.startswith("error: ") and result.output.count("\n") == 1, result.output
            assert not (root / "out").exists() or not any((root / "out").iterdir())
        else:
            merged = root / "out" / NAME
            assert sorted(k for k in after if k.startswith("out/")) == sorted(
                f"out/{NAME}/{name}" for name in json.loads((merged / "manifest.json").read_text())["files"]
            )
            if not edits:
                assert (merged / "metrics.csv").read_bytes() == (runs[0] / "metrics.csv").read_bytes()


@pytest.mark.parametrize("member", ["attention.csv", "token_logprobs.csv"])
@pytest.mark.parametrize("link", ["dangling", "loop"])
def test_load_refuses_a_member_that_is_a_link_rather_than_reading_the_folder_without_it(tmp_path, member, link):
    """A dangling link or a link loop where a results file belongs was taken as 'no such file' (issue 42)."""
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    folder = tmp_path / "run"
    shutil.copytree(ROOT / "results" / "dog_bites_man", folder, ignore=shutil.ignore_patterns("figures"))
    path = folder / member
    path.unlink(missing_ok=True)
    path.symlink_to(path if link == "loop" else tmp_path / "nowhere.csv")
    with pytest.raises(OrderlabError, match=re.escape(member)):
        ol.load(folder)
