"""`orderlab merge`: the shards of one run into the folder the whole run writes, byte for byte (on one set-up).

Shard K's metrics.csv rows are a contiguous stretch of the whole run's (orderlab/plan/shards.py), so they are
copied as they are, in shard order. A sentence whose permutations a cut split left a partial summary in
each shard holding part of it: those are folded in order (max with its first permutation, exact sums,
counts) and finished by measure/summaries.finish_summary, the code a whole run finishes its summaries with, so
the summary rows, summary.csv and the verdicts come out as the whole run's. Shards that are missing,
given twice, of another spec or of another partition are refused before anything is written.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import pandas as pd

from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError
from orderlab.measure.escalation import reach_note, resolution_record
from orderlab.measure.summaries import finish_parts, summarize_sweep
from orderlab.results.folder import Manifest, append_csv, staged_folder, write_csv, write_manifest
from orderlab.results.manifest import read_manifest, verify_hashes
from orderlab.results.orders import ORDERS, orders_table
from orderlab.results.outcome import Outcome, RunView
from orderlab.results.ownership import Writer, claim
from orderlab.results.partials import SHARD_FILES, ShardPartials, read_partials
from orderlab.results.paths import child
from orderlab.vocabulary.columns import sort_maps
from orderlab.vocabulary.digest import Judged, NoiseKey, Piece, Reach, Summary, tag

RECORD_LIMIT = 2**20  # characters of one metrics.csv record: orderlab's are one short line
CHECK_CHUNK_ROWS = 200_000  # rows of the merged metrics.csv held at once while checking it against the summary
SHARD_MANIFEST = "the manifest.json of a shard folder, as `run --shard` writes it"


@dataclass(frozen=True)
class Shard:
    folder: Path
    manifest: Manifest
    spec: tuple[str, str]  # (name, sha256) of the spec the shard ran
    index: int  # K of K/N
    count: int  # N
    partials: ShardPartials


def read_shard(folder: Path) -> Shard:
    """A shard folder: its manifest and partials typed and bounded, its files as `run --shard` wrote them (each
    sha256 as its manifest records); one line naming the file and field if it is not one."""
    if not folder.is_dir():
        raise OrderlabError(f"{folder}: not a shard folder (no such folder); expected a folder of `run --shard`")
    manifest = read_manifest(folder, SHARD_MANIFEST)
    spec, shard = manifest.fields.spec, manifest.fields.shard
    if spec is None or shard is None:
        raise FileProblem(manifest.path, f"no `spec` or no `shard` section; expected {SHARD_MANIFEST}")
    verify_hashes(folder, shard.sha256, SHARD_FILES)
    return Shard(folder, manifest.document, (spec.name, spec.sha256), shard.index, shard.count, read_partials(folder))


def complete(shards: list[Shard]) -> list[Shard]:
    """The shards in order, K = 1..N each once, all of one spec and one N; else one line saying what is wrong."""
    first = shards[0]
    for shard in shards[1:]:
        if shard.spec != first.spec:
            raise OrderlabError(
                f"{shard.folder} is a shard of spec {shard.spec[0]!r} (sha256 {shard.spec[1][:12]}), {first.folder} of "
                f"{first.spec[0]!r} (sha256 {first.spec[1][:12]}); expected the shards of one run of one spec"
            )
        if shard.manifest.get("model") != first.manifest.get("model"):
            raise OrderlabError(
                f"{shard.folder} and {first.folder} ran other models ({_model_difference(first, shard)}); expected the "
                "shards of one run of one model, with the same hooks"
            )
        if shard.count != first.count:
            raise OrderlabError(
                f"{shard.folder} is shard {shard.index} of {shard.count}, {first.folder} shard {first.index} of "
                f"{first.count}; expected shards of one partition (one N)"
            )
    seen: dict[int, Path] = {}
    for shard in shards:
        if shard.index in seen:
            raise OrderlabError(
                f"shard {shard.index} of {shard.count} is given twice: {seen[shard.index]} and {shard.folder}"
            )
        seen[shard.index] = shard.folder
    missing = [k for k in range(1, first.count + 1) if k not in seen]
    if missing:
        listed = ", ".join(map(str, missing[:10])) + (", ..." if len(missing) > 10 else "")
        raise OrderlabError(f"shard(s) {listed} of {first.count} missing; expected all {first.count} shards of the run")
    return sorted(shards, key=lambda shard: shard.index)


def _model_difference(first: Shard, other: Shard) -> str:
    """Which of the model record's fields differ between two shards' manifests, named (a model object's weights
    hash and config, the user's hooks, the spec's model fields)."""
    records = [shard.manifest.get("model") for shard in (first, other)]
    fields = [record if isinstance(record, dict) else {} for record in records]
    differing = sorted(key for key in fields[0].keys() | fields[1].keys() if fields[0].get(key) != fields[1].get(key))
    return ", ".join(differing) or "one has no model record"


def merge_shards(folders: list[Path], out: Path, force: bool = False) -> Outcome:
    """Merge shard folders into OUT/<spec name>/, claimed as `orderlab run` claims it (a merge stands for the run)."""
    shards = complete([read_shard(folder) for folder in folders])
    name = shards[0].spec[0]
    folder = child(out, name)  # a name read from a file: held to the writer rule (results/paths.py)
    with claim(folder, Writer("run", name), force):
        return merge_into(shards, folder)


def merge_into(shards: list[Shard], folder: Path) -> Outcome:
    """Write the merged folder (the caller holds its claim and has checked the shards with `complete`)."""
    facts = shards[0].partials.facts
    with staged_folder(folder) as staging:
        with (staging / "metrics.csv").open("w", newline="", encoding="utf-8") as file:
            assembly = Assembly(file, facts.dtype, facts.per_permutation)
            for shard in shards:
                assembly.add(shard)
            assembly.finish()
        # An empty piece (probes that no metric scores, as lm_logprob's) comes back from JSON with float columns
        # that would make every layer 2.000000e+00 in the concatenation: only pieces with rows are joined.
        worst = pd.concat([frame for frame in assembly.worst if len(frame)] or assembly.worst[:1], ignore_index=True)
        check_summary(staging / "metrics.csv", worst, facts.swept)
        tables = {"summary": summarize_sweep(worst, facts.conditions, facts.swept)}
        maps = [frame for shard in shards for frame in shard.partials.attention]
        if maps:
            tables["attention"] = sort_maps(pd.concat(maps, ignore_index=True), facts.swept)
        tokens = [frame for shard in shards for frame in shard.partials.token_logprobs]  # combinations in row order
        if tokens:
            tables["token_logprobs"] = pd.concat(tokens, ignore_index=True)
        if (orders := orders_table(staging / "metrics.csv", facts.parses)) is not None:
            tables[ORDERS] = orders  # as the whole run writes it: from the merged metrics.csv
        manifest = {key: value for key, value in shards[0].manifest.items() if key != "shard"}
        manifest["rows"] = assembly.rows
        if not maps:
            manifest.pop("attention", None)
        reach = reached(shards)
        if resolution := resolution_record(facts.resolution, reach):
            manifest["resolution"] = resolution  # as the whole run records it
        for name, frame in tables.items():
            write_csv(frame, staging / f"{name}.csv")
        write_manifest(staging, manifest)
    non_finite = assembly.non_finite + sum(shard.partials.non_finite for shard in shards)
    note = reach_note(facts.dtype, facts.resolution, reach)
    view = RunView(facts.title, facts.dtype, facts.conditions, facts.swept, tables["summary"], digest=worst,
                   precision_note=note)  # fmt: skip
    files = ["metrics.csv", *(f"{name}.csv" for name in tables), "manifest.json"]
    return Outcome(folder, assembly.rows, files, view, non_finite)


def reached(shards: list[Shard]) -> dict[str, Reach]:
    """Per condition, what the whole run resolved and re-measured: each shard's reach, folded in order (a sentence
    split between shards reaches the same lines in each; its re-measured orders are counted once, where they ran)."""
    reach: dict[str, Reach] = {}
    for shard in shards:
        for label, part in shard.partials.reach.items():
            reach.setdefault(label, Reach()).absorb(part)
    return reach


@dataclass
class Pending:
    """A sentence's summary folded from the shards seen so far, and where its next range must start."""

    piece: Piece
    summary: Summary
    noise: dict[NoiseKey, float]
    next_start: int
    finer: Judged | None  # the orders re-measured in the twin's precision, where the sentence escalates


class Assembly:
    """metrics.csv written in the whole run's order: shards' rows copied, split summaries folded and finished."""

    def __init__(self, file: TextIO, dtype: str, per_permutation: bool):
        self.file, self.dtype, self.per_permutation = file, dtype, per_permutation
        self.header = False
        self.columns: list[str] = []  # the shards' metrics.csv header: finished summary rows are written in it
        self.rows, self.non_finite = 0, 0
        self.worst: list[pd.DataFrame] = []  # max rows, in the whole run's order
        self.pending: Pending | None = None

    def add(self, shard: Shard) -> None:
        with (shard.folder / "metrics.csv").open(newline="", encoding="utf-8") as source:
            records = csv_records(source)
            header = next(records, "")
            if header:  # column names: plain words, never quoted
                self.columns = header.rstrip("\r\n").split(",")
            for piece in shard.partials.pieces:
                if self.pending and self.pending.piece.unit.segment != piece.unit.segment:
                    self.finish()
                self.copy(header, records, piece.rows, shard.folder)
                if piece.worst is not None:
                    self.worst.append(piece.worst)
                if piece.partial is not None:
                    self.fold(piece, shard.folder)
            if next(records, None) is not None:
                raise OrderlabError(f"{shard.folder}/metrics.csv has more rows than its partials.json accounts for")

    def copy(self, header: str, records: Iterator[str], count: int, folder: Path) -> None:
        for _ in range(count):
            record = next(records, None)
            if record is None:
                raise OrderlabError(f"{folder}/metrics.csv has fewer rows than its partials.json accounts for")
            if not self.header:
                self.file.write(header)
                self.header = True
            self.file.write(record)
        self.rows += count

    def fold(self, piece: Piece, folder: Path) -> None:
        assert piece.partial is not None
        unit = piece.unit
        if self.pending is None:
            if unit.start != 0:
                raise OrderlabError(
                    f"{folder}: starts {unit.sentence!r} under {unit.condition} at {unit.start}, "
                    "but no earlier shard holds its first permutations; expected one partition"
                )
            partial = piece.partial
            self.pending = Pending(piece, partial.summary, partial.noise, unit.stop, partial.finer)
            return
        if unit.start != self.pending.next_start:
            raise OrderlabError(
                f"{folder}: {unit.sentence!r} under {unit.condition} resumes at {unit.start}, "
                f"expected {self.pending.next_start}; expected shards of one partition"
            )
        finer, known = piece.partial.finer, self.pending.finer
        if (
            not same_noise(piece.partial.noise, self.pending.noise)
            or (finer is None) != (known is None)
            or (finer is not None and known is not None and not same_noise(finer.noise, known.noise))
        ):
            raise OrderlabError(
                f"{folder} measured another round-off for {unit.sentence!r} under {unit.condition} than the shard "
                "before it; expected shards run on one set-up (machine, versions, threads), so that verdicts agree"
            )
        self.pending.summary.absorb(piece.partial.summary)
        if finer is not None and known is not None:
            known.summary.absorb(finer.summary)
        self.pending.next_start = unit.stop

    def finish(self) -> None:
        """Finish the pending summary as a whole run finishes it: its rows (summary mode) and its max rows."""
        if self.pending is None:
            return
        pending, self.pending = self.pending, None
        unit, combination = pending.piece.unit, pending.piece.combination
        if pending.next_start != unit.total:
            raise OrderlabError(
                f"{unit.sentence!r} under {unit.condition}: the shards hold permutations "
                f"0..{pending.next_start - 1} of {unit.total}; expected all of them"
            )
        partial = pending.piece.partial
        assert partial is not None
        coarse = Judged(pending.summary, pending.noise, partial.dtype or self.dtype)
        parts = [coarse, *([pending.finer] if pending.finer else [])]
        rows, worst, judged = finish_parts(parts, partial.resolution)
        self.worst.append(tag(worst, combination))
        if not self.per_permutation:
            rows = tag(rows, combination)
            rows = rows.reindex(columns=self.columns, fill_value="") if self.columns else rows  # DETAIL_COLUMNS blank
            append_csv(rows, self.file, not self.header)
            self.header = True
            self.rows += len(rows)
            self.non_finite += judged


def csv_records(file: TextIO) -> Iterator[str]:
    """A CSV file's records as written, newlines included; a quoted field may hold a line break (never a record
    past RECORD_LIMIT characters: an unclosed quote in a shard's file must not gather the file in memory)."""
    record = ""
    for line in file:
        record += line
        if record.count('"') % 2 == 0:
            yield record
            record = ""
        elif len(record) > RECORD_LIMIT:
            raise OrderlabError(f"{file.name}: a record over {RECORD_LIMIT:,} characters; expected metrics.csv rows")
    if record:
        yield record


SUMMARY_KEY = ["case", "input", "encoding", "layer", "head", "metric"]  # with the swept fields: one summary row
PAIR = "pair"  # a probe row's second sentence (its `permuted`), blank on other rows: two probes may share a first


def check_summary(metrics: Path, worst: pd.DataFrame, swept: list[str]) -> None:
    """The merged metrics.csv's rows reach, per summary row, the max that summary.csv will show; else one line.

    summary.csv is made from the shards' partial summaries, metrics.csv from their rows: a shard whose rows
    and partials disagree (edited, yet with matching hashes) would merge into a folder that contradicts itself.
    Both are compared as written (%.6e), metrics.csv streamed in chunks, so memory stays that of the summary.
    """
    key = [*swept, *SUMMARY_KEY, PAIR, *(["slot"] if "slot" in worst.columns else [])]  # the probe's rows per slot
    summaries = _as_written(worst).set_index(key)["value"]
    grouped = pd.concat(_maxima(chunk, key) for chunk in _read_as_written(metrics)).groupby(level=key, sort=False)
    rows = grouped.max().where(~grouped.apply(lambda values: values.isna().any()))
    for where in dict.fromkeys([*summaries.index, *rows.index]):
        reached, summarised = rows.get(where), summaries.get(where)
        if reached is not None and summarised is not None and _same(reached, summarised):
            continue
        label = ", ".join(f"{name}={cell}" for name, cell in zip(key, where, strict=True) if cell != "")
        raise OrderlabError(
            f"merged metrics.csv and summary disagree at {label}: the rows reach {_shown(reached)}, the shards' "
            f"summaries {_shown(summarised)}; expected the rows and summaries of one run (a shard edited since?)"
        )


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _shown(value: float | None) -> str:
    return "nothing" if value is None else f"{value:.6e}"


def _maxima(chunk: pd.DataFrame, key: list[str]) -> pd.Series:
    rows = chunk[chunk["statistic"] != "mean"] if "statistic" in chunk else chunk
    rows = _with_pair(rows.assign(value=pd.to_numeric(rows["value"])))
    return rows.groupby(key, sort=False)["value"].max(skipna=False)


def _with_pair(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(**{PAIR: frame["permuted"].where(frame["case"] == "probe", "")})


def _as_written(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame's cells as write_csv writes them, read back as text (numbers as %.6e, blanks for NA)."""
    text = io.StringIO()
    append_csv(frame, text, True)
    text.seek(0)
    written = pd.concat(_read_as_written(text))
    return _with_pair(written.assign(value=pd.to_numeric(written["value"])))


def _read_as_written(source: Path | TextIO) -> Iterator[pd.DataFrame]:
    yield from pd.read_csv(source, dtype=str, keep_default_na=False, chunksize=CHECK_CHUNK_ROWS)


def same_noise(a: dict[NoiseKey, float], b: dict[NoiseKey, float]) -> bool:
    """Equal round-off figures, NaN equal to NaN."""
    return a.keys() == b.keys() and all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)
