"""What the second sentence of a pair is to the first: the one vocabulary of a pair's `relation`.

A probe pair (and any other pair of sentences a spec compares) declares its relation; the default, `reordering`,
is the only one whose distances are an effect of word order, so only its rows get order verdicts (invariant,
order-sensitive). A pair of other words is measured too, but its verdict says only whether the model tells the two
sentences apart, and the metrics that match b's words to a's (token_shift) are not measured. Adding a relation is
one `_relation` line here. Torch-free: spec/ validates against it, measure/ and report/ label rows with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from orderlab.core.registry import Registry
from orderlab.core.text import occurrence_matching


@dataclass(frozen=True)
class Relation:
    name: str
    reorders: bool  # b holds a's words in another order: its distances are an order effect, judged as such
    doc: str  # one line for the docs and the schema


RELATIONS: Registry[Relation] = Registry("pair relation")


def _relation(name: str, reorders: bool, doc: str) -> str:
    return RELATIONS.register(name, Relation(name, reorders, doc)).name


REORDERING: Final = _relation("reordering", True, "b holds a's words in another order (the default)")
DIFFERENT_WORDS: Final = _relation(
    "different_words", False, "b's words are not a's: a distance, but no order verdict, and no token_shift"
)

MINIMAL_PAIR: Final = _relation(
    "minimal_pair", False, "a is grammatical, b its minimal counterpart (BLiMP): scored by metrics: [minimal_pairs]"
)

RELATION_COLUMN: Final = "relation"  # metrics.csv's and summary.csv's column, in specs with a non-reordering pair
# Why a pair of different words has no token_shift row (the terminal's caption and docs/metrics.md say it).
NO_WORD_MATCH: Final = "token_shift is not measured for a pair of different words: no word of b has its own in a"


def relation_problem(relation: str, a: Sequence[str], b: Sequence[str]) -> str | None:
    """Why the pair (a, b) is not what `relation` says it is (one line for the user), or None."""
    reorders = occurrence_matching(list(a), list(b)) is not None
    if RELATIONS.get(relation).reorders and not reorders:
        differ = sorted({word for word in {*a, *b} if a.count(word) != b.count(word)})
        return (
            f"{' '.join(b)!r} is not a reordering of {' '.join(a)!r} (words that differ: {', '.join(differ)}); "
            f"expected the same words in another order, or {{pair: [a, b], relation: {DIFFERENT_WORDS}}}"
        )
    if relation == DIFFERENT_WORDS and reorders:
        return f"{' '.join(b)!r} is a reordering of {' '.join(a)!r}; expected relation: {REORDERING} (the default)"
    return None
