"""results/run_writer.py, the one writer of a run's folder: any Measurement's frames streamed into metrics.csv as
one write of their concatenation would write it, the tables it derives after, the files it writes beside them, and
nothing at all when the measurement fails."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from orderlab.results.folder import write_csv
from orderlab.results.ownership import Writer, claim
from orderlab.results.run_writer import write_run
from orderlab.vocabulary.digest import Digest, Frames

FRAMES = [
    pd.DataFrame({"case": ["permutation"], "value": [0.125], "verdict": ["invariant"]}),
    pd.DataFrame({"case": ["probe", "probe"], "value": [1e-20, float("nan")], "verdict": ["", "non-finite"]}),
]


class Stub:
    """A Measurement of two frames whose digest counts one non-finite row; it fails mid-stream if asked."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.token_logprobs: list[pd.DataFrame] = []

    def frames(self) -> Frames:
        yield FRAMES[0]
        if self.fail:
            raise RuntimeError("the measurement failed")
        yield FRAMES[1]
        return Digest(non_finite=1)

    def tables(self, digest: Digest) -> dict[str, pd.DataFrame]:
        return {"summary": pd.DataFrame({"non_finite": [digest.non_finite]})}

    def write_beside(self, folder: Path) -> list[str]:
        (folder / "beside").mkdir()
        return ["beside"]


def test_a_whole_run_streams_its_rows_then_derives_its_tables_and_manifest(tmp_path):
    folder = tmp_path / "run"
    with claim(folder, Writer("run", "stub")):
        written = write_run(folder, Stub(), lambda rows, tables, _digest: {"rows": rows, "tables": sorted(tables)})
    write_csv(pd.concat(FRAMES, ignore_index=True), tmp_path / "whole.csv")
    assert (folder / "metrics.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert (written.rows, written.digest.non_finite) == (3, 1)
    assert written.files == ["metrics.csv", "summary.csv", "manifest.json", "beside"]
    assert (folder / "summary.csv").read_text().splitlines() == ["non_finite", "1"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["rows"], manifest["tables"]) == (3, ["summary"])


def test_a_failed_measurement_writes_nothing(tmp_path):
    folder = tmp_path / "run"
    with claim(folder, Writer("run", "stub")), pytest.raises(RuntimeError, match="failed"):
        write_run(folder, Stub(fail=True), lambda rows, tables, _digest: {})
    assert list(tmp_path.iterdir()) == []
