"""Reading a BLiMP-format file of minimal pairs (Warstadt et al. 2020): JSON lines, each a grammatical
`sentence_good`, its minimal counterpart `sentence_bad`, and the pair's `phenomenon` (BLiMP's own files name it
`linguistics_term`), with its `UID` (the paradigm) and `field` where given; other keys (`pair_id`, BLiMP's method
flags) are ignored.

The file is a stranger's: a regular file, bounded, UTF-8; every line is checked and the first bad one is one line,
`file:line: what, expected what`. Names are held to the rule of a spec's `name`, as they label summary rows. A
pair of one sentence twice is refused: it would be scored as a failure, never a tie. Must not import torch or
pandas: `orderlab validate` reads the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orderlab.core import bounds
from orderlab.core.text import tokenize
from orderlab.core.userfiles import FileProblem, folder_name_problem, json_object_lines, read_text

# 64 MiB holds BLiMP whole (67 paradigms x 1,000 pairs, about 30 MiB as released) with room for notes in its keys.
MAX_PAIRS_BYTES = 64 * 2**20
MAX_PAIRS = 100_000  # BLiMP's 67,000 pairs; each pair is four passes (both sentences, and their twins')
EXPECTED = "a JSON object per line with sentence_good, sentence_bad and phenomenon (or linguistics_term)"
PHENOMENON_KEYS = ("phenomenon", "linguistics_term")  # the brief's name first, then BLiMP's own
# metrics.csv's columns of a pair's groups, written only by specs whose pairs name them; summary.csv's case of each
# group's accuracy row is the column's name.
PHENOMENON_COLUMN, UID_COLUMN = "phenomenon", "uid"
PAIR_GROUP_COLUMNS = (PHENOMENON_COLUMN, UID_COLUMN)


@dataclass(frozen=True)
class MinimalPair:
    line: int  # 1-based line of the file
    good: str
    bad: str
    phenomenon: str
    uid: str | None
    field: str | None


def read_minimal_pairs(path: Path) -> list[MinimalPair]:
    """The pairs of `path`, in file order; one FileProblem line (`file:line: ...`) for the first bad line."""
    text = read_text(path, MAX_PAIRS_BYTES, "a BLiMP-format JSONL file of minimal pairs")
    pairs = []
    for number, entry in json_object_lines(path, text, EXPECTED):
        pairs.append(_pair(f"{path}:{number}", number, entry))
        if len(pairs) > MAX_PAIRS:
            raise FileProblem(f"{path}:{number}", f"over {MAX_PAIRS:,} pairs; expected at most {MAX_PAIRS:,}")
    if not pairs:
        raise FileProblem(path, f"no pairs; expected {EXPECTED}")
    return pairs


def _pair(where: str, number: int, entry: dict[str, object]) -> MinimalPair:
    good, bad = (_sentence(where, entry, key) for key in ("sentence_good", "sentence_bad"))
    if tokenize(good) == tokenize(bad):
        raise FileProblem(where, f"{' '.join(tokenize(good))!r} twice; expected a sentence and its minimal "
                          "counterpart, which differ")  # fmt: skip
    phenomenon = next((key for key in PHENOMENON_KEYS if key in entry), PHENOMENON_KEYS[0])
    return MinimalPair(
        number, good, bad, _name(where, entry, phenomenon, True) or "", _name(where, entry, "UID", False),
        _name(where, entry, "field", False),
    )  # fmt: skip


def _sentence(where: str, entry: dict[str, object], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not tokenize(value):
        got = "missing" if value is None else f"got {str(value)[:60]!r}"
        raise FileProblem(where, f"{key}: {got}; expected a sentence (a non-empty string)")
    if len(tokenize(value)) > bounds.MAX_PROBE_LENGTH:
        raise FileProblem(where, f"{key}: {len(tokenize(value))} words; expected at most {bounds.MAX_PROBE_LENGTH}")
    return value


def _name(where: str, entry: dict[str, object], key: str, required: bool) -> str | None:
    """A label of summary rows, held to the rule of a spec's name; None where an optional one is absent."""
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        got = "missing" if value is None else f"got {str(value)[:60]!r}"
        raise FileProblem(where, f"{key}: {got}; expected a name (letters, digits, '_', '-' and '.')")
    problem = folder_name_problem(value)
    if problem:
        raise FileProblem(where, f"{key}: got {value[:60]!r}; {problem}")
    return value
