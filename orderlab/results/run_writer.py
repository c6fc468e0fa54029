"""The one writer of a run's results folder, for every kind of measurement (a sweep, a corpus) and for whole runs and
shards alike: metrics.csv streamed chunk by chunk (memory stays flat however many permutations), then what the
measurement derives from its digest (a whole run: summary.csv and the others; a shard: partials.json, which
`orderlab merge` finishes), the files beside them, and manifest.json, all swapped into place whole or not at all.

The caller holds the claim on the folder (ownership.claim) and builds the manifest (`manifest`: from the rows
written and the tables derived).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orderlab.plan.shards import Unit
from orderlab.results.folder import Manifest, staged_folder, write_csv, write_csv_chunks, write_manifest
from orderlab.results.manifest import file_hashes
from orderlab.results.orders import ORDERS, orders_table
from orderlab.results.partials import SHARD_FILES, RunFacts, write_partials
from orderlab.vocabulary.digest import Digest, Measurement

METRICS = "metrics.csv"


@dataclass(frozen=True)
class Written:
    """What the writer wrote: metrics.csv's rows, the run's digest, the tables derived from it, and every file."""

    rows: int
    digest: Digest
    tables: dict[str, pd.DataFrame]  # <name>.csv each; empty for a shard
    files: list[str]  # metrics.csv, the tables, manifest.json, then the files beside them


@dataclass(frozen=True)
class ShardOf:
    """A shard's place in its run (K of N, its units), and what every shard of the run records alike."""

    index: int
    count: int
    units: list[Unit]
    facts: RunFacts


def write_run(
    folder: Path,
    measurement: Measurement,
    manifest: Callable[[int, dict[str, pd.DataFrame], Digest], Manifest],
    *,
    settle: Callable[[Path], None] | None = None,
    shard: ShardOf | None = None,
    parses: Mapping[str, Sequence[int]] | None = None,
) -> Written:
    """Measure into `folder` atomically; a shard's folder gets partials.json and `shard` in its manifest (K, N, its
    units with their ranges, the sha256 of the files merge reads) instead of the derived tables. manifest: the run's
    record from its row count, derived tables and digest. settle: staged_folder's (a whole run keeps the CSVs that
    agree with the previous ones). parses: the inputs' dependency parses (input -> CoNLL heads), for orders.csv."""
    with staged_folder(folder, settle) as staging:
        rows, digest = write_csv_chunks(measurement.frames(), staging / METRICS)
        beside = measurement.write_beside(staging)
        tables = measurement.tables(digest) if shard is None else {}
        if shard is None and (orders := orders_table(staging / METRICS, parses)) is not None:
            tables[ORDERS] = orders  # each order's displacement, from metrics.csv as merged shards make it too
        record = manifest(rows, tables, digest)
        for name, frame in tables.items():
            write_csv(frame, staging / f"{name}.csv")
        if shard is not None:
            record["shard"] = {"index": shard.index, "count": shard.count, "units": [u.record() for u in shard.units]}
            write_partials(staging, shard.facts, digest, measurement.token_logprobs)
            record["shard"]["sha256"] = file_hashes(staging, SHARD_FILES)  # merge verifies them
        write_manifest(staging, record)
    files = [METRICS, *(f"{name}.csv" for name in tables), "manifest.json", *beside]
    return Written(rows, digest, tables, files)
