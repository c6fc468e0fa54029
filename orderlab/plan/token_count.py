"""How many sub-word tokens a checkpoint's own tokenizer makes of a sentence, counted when a spec is validated:
its tokenizer.json read by the tokenizers library (torch- and transformers-free, so validate stays fast), as the
run's fast tokenizer splits the words. Where a folder has no tokenizer.json (a slow tokenizer's vocabulary files),
or the library is missing, there is no count here and the run counts them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from orderlab.core.userfiles import read_bounded
from orderlab.spec.extras import installed

# A larger tokenizer.json is not read here (the largest common ones, Llama 3's and Qwen's, are under 12 MB).
MAX_TOKENIZER_BYTES = 64 * 2**20

WordCounter = Callable[[list[str]], int]


def subword_counter(folder: Path | None) -> WordCounter | None:
    """The number of sub-word pieces of white-space words (no special tokens) by `folder`'s tokenizer.json, or None
    when there is none to read: a file that is not a bounded, regular tokenizer file is left to the run to refuse."""
    if folder is None or not installed("tokenizers"):
        return None
    from tokenizers import Tokenizer  # lazy: the hf extra's, and validate of a stack spec never needs it

    try:
        tokenizer = Tokenizer.from_str(read_bounded(folder / "tokenizer.json", MAX_TOKENIZER_BYTES).decode("utf-8"))
    except Exception:  # OSError, ValueError, and the plain Exception the tokenizers library raises for a bad file
        return None
    tokenizer.no_padding()  # a tokenizer.json may pad or cut every sequence to a fixed length (MiniLM's: 128)
    tokenizer.no_truncation()

    def count(words: list[str]) -> int:
        return len(tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False).ids)

    return count
