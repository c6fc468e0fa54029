"""Reading a corpus file: one sentence per line; blank lines and lines starting with '#' are skipped.

Must not import torch: `orderlab validate` reads the corpus to report a bad line by number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orderlab.core.permutations import sentences
from orderlab.core.text import tokenize
from orderlab.core.userfiles import read_bounded
from orderlab.errors import OrderlabError

# A larger corpus is refused unread: 16 MiB is ~200,000 sentences, each with its shuffles a forward pass
# (10 shuffles: 2.2 million passes, about 14 hours at the ~45 sequences/s measured for MiniLM here).
MAX_CORPUS_BYTES = 16 * 2**20
TABLE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")  # files of examples: dataset inputs read them


@dataclass(frozen=True)
class CorpusLine:
    line: int  # 1-based line number in the file
    sentence: str
    words: list[str]

    def shuffles(self, asked: int) -> int:
        """How many shuffles the line gets: `asked`, or every other distinct sentence its words make if fewer."""
        return min(asked, sentences(self.words) - 1)


def read_corpus(path: Path) -> list[CorpusLine]:
    """The sentences of `path`; OrderlabError (one line, `file:line`) for an unreadable file or a line with no other
    order (one word, or one word repeated)."""
    if path.suffix.lower() in TABLE_SUFFIXES:  # a table read as text would make `{"premise":` a word
        raise OrderlabError(f"{path}: a {path.suffix} file; corpus mode reads plain text, one sentence a line; "
                            "expected inputs: {dataset: FILE, text: COLUMN} for a file of examples")  # fmt: skip
    try:
        text = read_bounded(path, MAX_CORPUS_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise OrderlabError(f"{path}: corpus file not found") from None
    except (OSError, ValueError) as error:  # ValueError: too large, not a regular file, not UTF-8
        raise OrderlabError(f"{path}: cannot read the corpus ({error}); expected a UTF-8 text file") from None
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        sentence = " ".join(tokenize(raw))
        if not sentence or sentence.startswith("#"):
            continue
        words = tokenize(sentence)
        if len(words) < 2:
            raise OrderlabError(f"{path}:{number}: {sentence!r} has one word; expected at least two to shuffle")
        if len(set(words)) < 2:  # every order of it is the line itself
            raise OrderlabError(f"{path}:{number}: {sentence!r} is one word repeated; expected two different words")
        lines.append(CorpusLine(number, sentence, words))
    if not lines:
        raise OrderlabError(f"{path}: no sentences; expected one sentence per line")
    return lines
