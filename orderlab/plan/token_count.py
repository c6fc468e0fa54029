"""How many sub-word tokens a checkpoint's own tokenizer makes of a spec's sentences, counted when a spec is
validated: its tokenizer.json read by the tokenizers library (torch- and transformers-free, so validate stays fast),
as the run's fast tokenizer splits the words. Where a folder has no tokenizer.json (a slow tokenizer's vocabulary
files), or the library is missing, there is no count here and the run counts them.

The file is a stranger's and the library is Rust: a pattern it cannot apply (a Split pre-tokenizer's `(a+)+$`) ends
in a panic, which plan/tokenizer_pieces.py turns into one line naming the file. Oniguruma's retry limit bounds one
match, not a search, so a pattern of the file's own can still backtrack for minutes: a file holding patterns
(`"Regex"`: Split pre-tokenizers, Replace normalizers; Llama 3's and Qwen's among them) is applied in a child
process stopped after TOKENIZER_SECONDS, and one without (BERT's, GPT-2's) in this process. Counts are kept per file
content and sentences, so that a sweep's combinations ask once."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from orderlab.core.userfiles import FileProblem, read_bounded
from orderlab.plan import tokenizer_pieces
from orderlab.plan.tokenizer_pieces import LibraryFailure, piece_counts
from orderlab.spec.extras import installed

# A larger tokenizer.json is not read here (the largest common ones, Llama 3's and Qwen's, are under 12 MB).
MAX_TOKENIZER_BYTES = 64 * 2**20
# How long a file with patterns may take to be parsed and applied to a spec's sentences in its child process: a
# Llama 3-sized tokenizer.json (8 MB) takes about a second on a busy machine.
TOKENIZER_SECONDS = 5.0
PATTERNED = '"Regex"'  # the key under which a tokenizer.json holds a pattern of its own
EXPECTED = "a tokenizer.json the tokenizers library can apply"

Counts = list[int] | None
_COUNTED: dict[tuple[str, str, tuple[tuple[str, ...], ...]], Counts | FileProblem] = {}
_KEPT = 64  # answers kept, at most


def subword_counts(folder: Path | None, sentences: list[list[str]]) -> Counts:
    """The number of sub-word pieces of each sentence's white-space words (no special tokens) by `folder`'s
    tokenizer.json, or None when there is none to read: a file that is not a bounded, regular tokenizer file is left
    to the run to refuse; one the library fails on, or takes too long over, is a FileProblem."""
    if folder is None or not installed("tokenizers"):
        return None
    path = folder / "tokenizer.json"
    try:
        data = read_bounded(path, MAX_TOKENIZER_BYTES)
        text = data.decode("utf-8")
    except (OSError, ValueError, FileProblem):
        return None
    key = (str(path), hashlib.sha256(data).hexdigest(), tuple(tuple(words) for words in sentences))
    if key not in _COUNTED:
        if len(_COUNTED) >= _KEPT:
            _COUNTED.clear()
        try:
            _COUNTED[key] = _counted(path, text, sentences)
        except FileProblem as problem:
            _COUNTED[key] = problem
    answer = _COUNTED[key]
    if isinstance(answer, FileProblem):
        raise answer
    return answer


def _counted(path: Path, text: str, sentences: list[list[str]]) -> Counts:
    if PATTERNED not in text:
        try:
            return piece_counts(text, sentences)
        except LibraryFailure as failure:
            raise _failed(path, str(failure)) from None
    return _counted_apart(path, text, sentences)


def _counted_apart(path: Path, text: str, sentences: list[list[str]]) -> Counts:
    """piece_counts in a child process (tokenizer_pieces.py as a script: it imports nothing of orderlab, and -P keeps
    its folder's modules off the path), killed after TOKENIZER_SECONDS; Rust's own report of a panic stays in the
    child's captured stderr."""
    script = [sys.executable, "-P", tokenizer_pieces.__file__]
    asked = json.dumps({"text": text, "sentences": sentences})
    try:
        child = subprocess.run(script, input=asked, capture_output=True, text=True, timeout=TOKENIZER_SECONDS)
    except subprocess.TimeoutExpired:
        raise FileProblem(path, f"the tokenizers library took over {TOKENIZER_SECONDS:g} s to apply it to the spec's "
                          f"sentences (a pattern that backtracks?); expected {EXPECTED}") from None  # fmt: skip
    try:
        answer = json.loads(child.stdout) if child.returncode == 0 else {"failure": f"exit code {child.returncode}"}
    except json.JSONDecodeError:
        answer = {"failure": "no answer"}
    if "failure" in answer:
        raise _failed(path, str(answer["failure"]))
    counts = answer["counts"]
    return None if counts is None else [int(count) for count in counts]


def _failed(path: Path, reason: str) -> FileProblem:
    return FileProblem(path, f"the tokenizers library failed on it ({reason}); expected {EXPECTED}")
