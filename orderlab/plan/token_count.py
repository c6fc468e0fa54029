"""How many sub-word tokens a checkpoint's own tokenizer makes of a sentence, counted when a spec is validated:
its tokenizer.json read by the tokenizers library (torch- and transformers-free, so validate stays fast), as the
run's fast tokenizer splits the words. Where a folder has no tokenizer.json (a slow tokenizer's vocabulary files),
or the library is missing, there is no count here and the run counts them.

The file is a stranger's and the library is Rust: a pattern it cannot apply (a Split pre-tokenizer's `(a+)+$`) ends
in a panic, which Python sees as a BaseException after Rust prints its own report. Every call into the library is
guarded: its failure, panics included, is one line naming the file, and Rust's report is kept off the terminal. Time
is bounded by the library itself (Oniguruma's retry limit turns a runaway match into that panic)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from orderlab.core.userfiles import FileProblem, read_bounded
from orderlab.spec.extras import installed

# A larger tokenizer.json is not read here (the largest common ones, Llama 3's and Qwen's, are under 12 MB).
MAX_TOKENIZER_BYTES = 64 * 2**20
EXPECTED = "a tokenizer.json the tokenizers library can apply"

WordCounter = Callable[[list[str]], int]
T = TypeVar("T")


def subword_counter(folder: Path | None) -> WordCounter | None:
    """The number of sub-word pieces of white-space words (no special tokens) by `folder`'s tokenizer.json, or None
    when there is none to read: a file that is not a bounded, regular tokenizer file is left to the run to refuse;
    one the library fails on while applying it is a FileProblem."""
    if folder is None or not installed("tokenizers"):
        return None
    from tokenizers import Tokenizer  # lazy: the hf extra's, and validate of a stack spec never needs it

    path = folder / "tokenizer.json"
    try:
        text = read_bounded(path, MAX_TOKENIZER_BYTES).decode("utf-8")
    except (OSError, ValueError, FileProblem):
        return None
    try:
        tokenizer = guarded(path, lambda: Tokenizer.from_str(text))
    except FileProblem:
        raise
    except Exception:  # the plain Exception the tokenizers library raises for a file it cannot parse
        return None
    tokenizer.no_padding()  # a tokenizer.json may pad or cut every sequence to a fixed length (MiniLM's: 128)
    tokenizer.no_truncation()

    def count(words: list[str]) -> int:
        encoding = guarded(path, lambda: tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False))
        return len(encoding.ids)

    return count


def guarded(path: Path, call: Callable[[], T]) -> T:
    """`call` into the tokenizers library; a panic (pyo3's PanicException, a BaseException) is a FileProblem."""
    try:
        with _rust_report_silenced():
            return call()
    except BaseException as panic:
        if isinstance(panic, Exception | KeyboardInterrupt | SystemExit | GeneratorExit):
            raise
        reason = (str(panic).strip().splitlines() or [type(panic).__name__])[0][:160]
        raise FileProblem(path, f"the tokenizers library failed on it ({reason}); expected {EXPECTED}") from None


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
