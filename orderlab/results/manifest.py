"""manifest.json read back: the one reader of a results folder's manifest, and the file hashes a shard records.

A folder handed to report, plot, merge or check may come from anyone, so its manifest is input like any
file orderlab did not just write: read through spec/userfiles (a regular file, bounded, strict JSON) into
typed fields with bounds. Names are held to the rule of a spec's `name`, so a name from a manifest can
never lead a path out of --out; numbers are bounded before anything is sized by them. A manifest that is
not what orderlab writes is one FileProblem line (exit 2) naming the file and the field. Fields a command
does not read are kept as they were (`document`), to show (report) or to carry over (merge).
Must not import torch, numpy or pandas (ownership reads manifests for every command).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, StringConstraints, model_validator

from orderlab.core.userfiles import (
    JSON_LIMIT,
    FileModel,
    FileProblem,
    SafeName,
    checkpoint_name_problem,
    file_sha256,
    folder_name_problem,
    parse_json,
    read_text,
    validate_as,
)
from orderlab.plan.shards import MAX_SHARDS
from orderlab.spec.fields import ComputeType

MANIFEST = "manifest.json"
EXPECTED = "the manifest.json an orderlab command writes"
MAX_ROWS = 2**63 - 1  # rows of a CSV: an int64, as pandas counts them
MAX_ENTRIES = 100_000  # files a folder lists, swept values, attention reorderings: far past any run
TEXT_LIMIT = 4096  # characters of a path or a sentence recorded in a manifest
SHARD_FILE_LIMIT = 2**40  # bytes of a shard file merge hashes (streamed: a bound on time, not memory)

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Text = Annotated[str, StringConstraints(max_length=TEXT_LIMIT)]


def _relative_entry(value: str) -> str:
    """A file a folder lists: NAME, or SUB/NAME for the files of a sub-folder (a run's checkpoints/, whose names
    carry their sweep cell and encoding label)."""
    parts = value.split("/")
    rules = [folder_name_problem, checkpoint_name_problem][: len(parts)]
    problems = [problem for part, rule in zip(parts, rules, strict=False) if (problem := rule(part))]
    if len(parts) > 2 or problems:
        raise ValueError(f"got {value[:60]!r}; expected NAME or FOLDER/NAME, each {(problems or ['one name'])[0]}")
    return value


FileEntry = Annotated[str, AfterValidator(_relative_entry)]


class SpecRecord(FileModel):
    """Which spec a run ran: its name names the results folder, so it is held to the spec's name rule."""

    name: SafeName
    path: Text = ""
    sha256: Sha256


class WrittenBy(FileModel):
    command: Annotated[str, StringConstraints(pattern=r"^[a-z]{1,20}$")]
    spec: SafeName | Literal[""] = ""


class ShardRecord(FileModel):
    """Shard K of N, and the sha256 of every file the shard wrote (manifest.json aside), for merge to verify."""

    index: int = Field(ge=1, le=MAX_SHARDS)
    count: int = Field(ge=1, le=MAX_SHARDS)
    sha256: dict[SafeName, Sha256] = Field(default_factory=dict, max_length=MAX_ENTRIES)

    @model_validator(mode="after")
    def _index_within_count(self) -> ShardRecord:
        if self.index > self.count:
            raise ValueError(f"shard {self.index} of {self.count}; expected 1 <= index <= count")
        return self


class Reordering(FileModel):
    permutation: Text
    permuted: Text


class AttentionRecord(FileModel):
    """The sentence attention.csv shows and its reorderings: each a permutation of the sentence's slots."""

    words: Text
    reorderings: list[Reordering] = Field(max_length=MAX_ENTRIES)

    @model_validator(mode="after")
    def _permutations_of_the_sentence(self) -> AttentionRecord:
        n = len(self.words.split())
        for reordering in self.reorderings:
            slots = reordering.permutation.split()
            if sorted(slots) != sorted(map(str, range(n))) or len(reordering.permuted.split()) != n:
                raise ValueError(
                    f"reordering {reordering.permutation[:60]!r}; expected a permutation of the {n} slots of "
                    f"{self.words[:60]!r}"
                )
        return self


SweptValues = Annotated[list[bool | int | float | str | None], Field(max_length=MAX_ENTRIES)]


class ManifestFields(FileModel):
    """What commands read of a manifest; every field optional (each command writes its own), none unchecked."""

    spec: SpecRecord | None = None
    written_by: WrittenBy | None = None
    files: list[FileEntry] | None = Field(None, max_length=MAX_ENTRIES)
    rows: int | None = Field(None, ge=0, le=MAX_ROWS)
    dtype: ComputeType | None = None
    sweep: dict[SafeName, SweptValues] = Field(default_factory=dict, max_length=64)
    shard: ShardRecord | None = None
    attention: AttentionRecord | None = None
    versions: dict[Annotated[str, StringConstraints(max_length=64)], Text] = Field(default_factory=dict, max_length=64)


@dataclass(frozen=True)
class ManifestFile:
    """A manifest.json read back: its typed fields and the whole JSON object as read."""

    path: Path
    fields: ManifestFields
    document: dict[str, Any]


def read_manifest(folder: Path, expected: str = EXPECTED) -> ManifestFile:
    """folder/manifest.json, typed and bounded; one FileProblem line naming the file and field if it is not."""
    path = folder / MANIFEST
    document = parse_json(path, read_text(path, JSON_LIMIT, expected), expected)
    fields = validate_as(path, ManifestFields, document, expected)
    return ManifestFile(path, fields, document)


def file_hashes(folder: Path, names: list[str]) -> dict[str, str]:
    """The sha256 of each named file in `folder`, for a shard's manifest (merge verifies them)."""
    return {name: file_sha256(folder / name, SHARD_FILE_LIMIT, "a file orderlab just wrote") for name in names}


def verify_hashes(folder: Path, recorded: dict[str, str], names: list[str]) -> None:
    """Each named file of a shard hashes to what its manifest records; one FileProblem line for the first that does
    not (edited or damaged since `run --shard` wrote it), or that the manifest records no hash for."""
    for name in names:
        expected = f"the {name} `run --shard` wrote"
        if name not in recorded:
            detail = f"records no sha256 of {name} (a shard of an older orderlab?); expected one"
            raise FileProblem(folder / MANIFEST, detail, "shard.sha256")
        found = file_sha256(folder / name, SHARD_FILE_LIMIT, expected)
        if found != recorded[name]:
            raise FileProblem(
                folder / name,
                f"sha256 {found[:12]}... differs from the {recorded[name][:12]}... its manifest records "
                f"(edited or damaged since it was written?); expected {expected}, unchanged",
            )
