"""Shuffle families: word orders that move words only within windows of K ({local: K}) or that move whole N-word
units ({ngram: N}), every one of them or seeded draws; and `distinct: up_to` for draws of any family.

Same convention as permutations.py (slot i of the new sentence holds the word from slot p[i]); like its named rules,
a family names distinct sentences other than the original. Pure and torch-free; numpy only when drawing.

The literature's local shuffles (Clouatre et al. 2022) cut the sentence into consecutive windows of K words and shuffle
inside each; n-gram shuffles (Sinha et al. 2021, Pham et al. 2021) cut it into consecutive N-word units, the last
holding the words left over, and shuffle the units, each kept whole.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Kind = Literal["random", "local", "ngram"]
KINDS: tuple[Kind, ...] = ("random", "local", "ngram")
UP_TO = "up_to"

# Every order of a family is listed only up to this many orders of the slots (9!, as for `all`); past it, draws.
MAX_LISTED = math.factorial(9)


@dataclass(frozen=True)
class ShuffleFamily:
    """A family rule as the spec gives it: its kind, the window or unit size, the draws asked for (None: every
    order) and whether fewer draws are fine where fewer distinct orders exist (`distinct: up_to`)."""

    kind: Kind
    size: int  # words per window (local) or unit (ngram); 0 for random (the whole sentence)
    draws: int | None
    up_to: bool

    def blocks(self, n: int) -> list[range]:
        """The slots each window or unit holds, in order: consecutive, the last one holding what is left over."""
        step = self.size or max(n, 1)
        return [range(start, min(start + step, n)) for start in range(0, n, step)]


def family(rule: object) -> ShuffleFamily | None:
    """The family a rule names ({random: K}, {local: K}, {ngram: N}, validated or as YAML maps it); None for the
    other rules (names and explicit lists)."""
    if isinstance(rule, str | list):
        return None
    fields = dict(rule) if isinstance(rule, Mapping) else {k: getattr(rule, k, None) for k in (*KINDS, "distinct")}
    kind: Kind = "local" if fields.get("local") else "ngram" if fields.get("ngram") else "random"
    size = 0 if kind == "random" else int(fields[kind] or 0)
    draws = fields.get("random")
    return ShuffleFamily(kind, size, None if draws is None else int(draws), fields.get("distinct") == UP_TO)


def slot_orders(f: ShuffleFamily, n: int) -> int:
    """How many orders of the slots the family allows (its listing's cost, repeated words or not)."""
    sizes = [len(block) for block in f.blocks(n)]
    if f.kind == "random":
        return math.factorial(n)
    if f.kind == "local":
        return math.prod(math.factorial(size) for size in sizes)
    return math.factorial(len(sizes))


def available(f: ShuffleFamily, words: Sequence[str]) -> int:
    """Distinct sentences the family can give, the original included: exact for local windows (their contents never
    mix) and for units of one length; with a shorter last unit, counted by listing where that is affordable, else the
    sentences that keep it last (a lower bound, exact but for sentences of repeated units)."""
    n = len(words)
    if f.kind == "random":
        return _arrangements([(word,) for word in words])
    if f.kind == "local":
        return math.prod(_arrangements([(words[i],) for i in block]) for block in f.blocks(n))
    units = [tuple(words[i] for i in block) for block in f.blocks(n)]
    if len(units[-1]) == len(units[0]) or slot_orders(f, n) > MAX_LISTED:
        return _arrangements(units if len(units[-1]) == len(units[0]) else units[:-1])
    return _listed_sentences(tuple(words), f.size)


def target(f: ShuffleFamily, words: Sequence[str]) -> int:
    """How many orders other than the original the family gives: its draws (fewer where fewer exist, with up_to),
    or every other sentence."""
    others = available(f, words) - 1
    if f.draws is None:
        return others
    return min(f.draws, others) if f.up_to else f.draws


def problem(f: ShuffleFamily, words: Sequence[str]) -> str | None:
    """Why the family cannot be applied to the sentence (a message for the user), or None."""
    n = len(words)
    name = f"{{{f.kind}: {f.size}}}" if f.kind != "random" else "random"
    if f.draws is None and slot_orders(f, n) > MAX_LISTED:
        return (f"{name} on {n} words would list {slot_orders(f, n):,} orders, past the limit of {MAX_LISTED:,}; "
                f"expected draws, like {{{f.kind}: {f.size}, random: 100}}")  # fmt: skip
    others = available(f, words) - 1
    if others <= 0:
        return f"{name} on {' '.join(words)!r} gives only the sentence itself; expected another rule"
    if f.draws is not None and not f.up_to and f.draws > others:
        where = f"that {n} tokens make" if f.kind == "random" else f"that {name} makes of these {n} words"
        return (f"random: {f.draws} asks for more distinct reorderings than the {others:,} other sentences {where}; "
                f"expected at most {others:,} (or distinct: up_to, to take as many as there are)")  # fmt: skip
    return None


def orders(f: ShuffleFamily, words: Sequence[str], seed: int) -> Iterator[tuple[int, ...]]:
    """The family's orders of the sentence: every distinct other sentence in slot order, or `target` seeded draws."""
    n = len(words)
    seen = {tuple(words)}
    candidates = _listed(f, n) if f.draws is None else _drawn(f, n, seed)
    wanted = target(f, words)
    for p in candidates:
        if len(seen) > wanted:
            return
        sentence = tuple(words[i] for i in p)
        if sentence not in seen:
            seen.add(sentence)
            yield p


def _listed(f: ShuffleFamily, n: int) -> Iterator[tuple[int, ...]]:
    blocks = f.blocks(n)
    if f.kind == "local":
        for parts in itertools.product(*(itertools.permutations(block) for block in blocks)):
            yield tuple(slot for part in parts for slot in part)
    else:
        for arrangement in itertools.permutations(blocks):
            yield tuple(slot for block in arrangement for slot in block)


def _drawn(f: ShuffleFamily, n: int, seed: int) -> Iterator[tuple[int, ...]]:
    """Endless seeded draws, uniform over the family's slot orders; the caller keeps the new sentences."""
    import numpy as np  # lazy: validation counts orders without numpy

    generator = np.random.Generator(np.random.PCG64(seed))
    blocks = f.blocks(n)
    while True:
        if f.kind == "local":
            yield tuple(block.start + int(i) for block in blocks for i in generator.permutation(len(block)))
        else:
            yield tuple(slot for u in generator.permutation(len(blocks)) for slot in blocks[int(u)])


def _arrangements(items: Sequence[object]) -> int:
    """Distinct orders of a multiset: len! over each repeated item's count!, capped at 20! (more than any K)."""
    copies = Counter(items).values()
    cap = math.factorial(20)
    if math.lgamma(len(items) + 1) - sum(math.lgamma(k + 1) for k in copies) > math.log(cap):
        return cap
    return min(math.factorial(len(items)) // math.prod(math.factorial(k) for k in copies), cap)


@functools.lru_cache(maxsize=64)
def _listed_sentences(words: tuple[str, ...], size: int) -> int:
    """Distinct sentences of an n-gram shuffle with a shorter last unit, by listing them (at most MAX_LISTED): two
    arrangements can then give one sentence ("a a | a" and "a | a a")."""
    f = ShuffleFamily("ngram", size, None, False)
    return len({tuple(words[i] for i in p) for p in _listed(f, len(words))})
