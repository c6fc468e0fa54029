"""Sub-word pieces of sentences by a tokenizer.json's text, counted by the tokenizers library: in the caller's
process, or run as a script in a child process that the caller can stop (plan/token_count.py: a pattern of the
file's own can backtrack for minutes while staying under Oniguruma's retry limit). Imports nothing of orderlab, so
the child starts in a tenth of a second.

As a script: reads {"text": ..., "sentences": [[word, ...], ...]} as JSON on stdin and writes {"counts": [...]}
(null: a file the library cannot parse) or {"failure": reason} on stdout."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


class LibraryFailure(Exception):
    """The library failed while applying the file (a Rust panic included); its reason in one line."""


def piece_counts(text: str, sentences: list[list[str]]) -> list[int] | None:
    """Each sentence's sub-word pieces (its white-space words, no special tokens), or None when the library cannot
    parse `text` (a file left to the run to refuse); LibraryFailure when it fails applying it."""
    from tokenizers import Tokenizer  # lazy: the hf extra's

    try:
        tokenizer = guarded(lambda: Tokenizer.from_str(text))
    except LibraryFailure:
        raise
    except Exception:  # the plain Exception the tokenizers library raises for a file it cannot parse
        return None
    tokenizer.no_padding()  # a tokenizer.json may pad or cut every sequence to a fixed length (MiniLM's: 128)
    tokenizer.no_truncation()
    try:
        return guarded(lambda: [len(tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False).ids)
                                for words in sentences])  # fmt: skip
    except LibraryFailure:
        raise
    except Exception as error:
        raise LibraryFailure(_first_line(error)) from None


def guarded(call: Callable[[], T]) -> T:
    """`call` into the tokenizers library; a panic (pyo3's PanicException, a BaseException) is a LibraryFailure."""
    try:
        with _rust_report_silenced():
            return call()
    except BaseException as panic:
        if isinstance(panic, Exception | KeyboardInterrupt | SystemExit | GeneratorExit):
            raise
        raise LibraryFailure(_first_line(panic)) from None


def _first_line(error: BaseException) -> str:
    """errors.first_line's rule, bounded, kept here: this module imports nothing of orderlab (its docstring)."""
    lines = str(error).strip().splitlines()
    return ((lines[0].strip().rstrip(":") if lines else "") or type(error).__name__)[:160]


@contextmanager
def _rust_report_silenced() -> Iterator[None]:
    """File descriptor 2 points at /dev/null while the library runs: Rust writes a panic's report there directly,
    around Python's sys.stderr."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def main() -> None:
    """The child's side: one request on stdin, one answer on stdout."""
    asked = json.load(sys.stdin)
    try:
        answer: dict[str, object] = {"counts": piece_counts(asked["text"], asked["sentences"])}
    except LibraryFailure as failure:
        answer = {"failure": str(failure)}
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
