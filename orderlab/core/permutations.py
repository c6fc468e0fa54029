"""Permutations of a sentence's slots. Convention: the new sentence holds at slot i the word from slot p[i].

So for "dog bites man", p = (2, 1, 0) gives "man bites dog". Must not import torch, and imports
numpy only when drawing random permutations: `orderlab validate` stays quick.

A named rule (all, prefixes, swaps, shifts, reverse) and a family ({random: K}, {local: K}, {ngram: N}: shuffles.py)
names distinct sentences: where a sentence
repeats a word, several permutations give one word sequence ("the cat chased the dog" has 5! = 120 orders of its
slots but 60 sentences), and the rule keeps the first of them in label order (for `all` and `prefixes`, the one
that keeps the copies of each word in their order), and no permutation but the identity itself that gives the
sentence back. An explicit list is taken as written (swapping the two "the" on purpose shows equivariance apart
from token_shift), but two of its entries may not give one sentence other than the original.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

from orderlab.core import shuffles

Permutation = tuple[int, ...]


class FamilyRule(Protocol):
    """{random: K}, {local: K} or {ngram: N} as spec.InputSpec validates it (spec.RandomPermutations, ...)."""

    @property
    def random(self) -> int | None: ...


# A rule as spec.InputSpec holds it: a name ("all", "swaps", ...), explicit permutations, or a family ({random: K},
# {local: K}, {ngram: N}, with random: K draws and distinct: up_to; validated, or as a mapping the way YAML writes it).
Rule = str | list[list[int]] | FamilyRule | Mapping[str, int | str]

# `all` is refused past this many tokens (9! = 362,880 sequences); use {random: K} beyond it.
# Streaming keeps 9! affordable in memory (flat, one chunk at a time) and in time (about a minute
# at the measured rates); per-permutation rows stop at MAX_PERMUTATIONS_FOR_ROWS (spec/schema.py checks).
MAX_TOKENS_FOR_ALL = 9
MAX_PERMUTATIONS_FOR_ROWS = math.factorial(8)


# The fewest tokens with which a named rule gives a permutation other than the identity: below it the
# rule measures nothing (swaps and shifts give none at all, reverse and all only the identity, and
# prefixes, which keeps the last word in place, only the identity below three words).
FEWEST_TOKENS = {"reverse": 2, "all": 2, "swaps": 2, "shifts": 2, "prefixes": 3}


def validate_rule(rule: Rule, words: Sequence[str]) -> None:
    """Raise ValueError (a message for the user) if `rule` cannot be applied to the sentence `words`.

    A rule that names no permutation but the identity is refused too: it would write rows that
    measure nothing, or none at all (and a baseline with no rows cannot be checked).
    """
    n = len(words)
    if isinstance(rule, str) and n < FEWEST_TOKENS.get(rule, 0):
        gives = "no permutation" if rule in ("swaps", "shifts") else "only the identity"
        raise ValueError(
            f"{rule!r} on a sentence of {n} word(s) gives {gives}; expected at least {FEWEST_TOKENS[rule]} words "
            "(or permutations: identity)"
        )
    if isinstance(rule, list) and not rule:
        raise ValueError(f"an empty list gives no permutation; expected at least one, like {list(range(n))[::-1]}")
    if rule == "prefixes" and n - 1 > MAX_TOKENS_FOR_ALL:
        raise ValueError(
            f"'prefixes' would be {n - 1}! = {math.factorial(n - 1):,} permutations, past the limit of "
            f"{MAX_TOKENS_FOR_ALL}! = {math.factorial(MAX_TOKENS_FOR_ALL):,}; expected a sentence of at most "
            f"{MAX_TOKENS_FOR_ALL + 1} words"
        )
    if rule == "all" and n > MAX_TOKENS_FOR_ALL:
        orders = f"{n}! = {math.factorial(n):,}" if n <= 20 else f"{n}!"  # 1,000! has 2,568 digits
        raise ValueError(
            f"'all' would be {orders} permutations, past the limit of "
            f"{MAX_TOKENS_FOR_ALL}! = {math.factorial(MAX_TOKENS_FOR_ALL):,}; expected {{random: K}} instead"
        )
    family = shuffles.family(rule)
    if family is not None and (problem := shuffles.problem(family, words)):
        raise ValueError(problem)
    if isinstance(rule, list):
        validate_list(rule, words)
    elif isinstance(rule, str) and rule != "identity" and count(rule, words) <= (rule in ("all", "prefixes")):
        raise ValueError(f"{rule!r} on {' '.join(words)!r} gives only the sentence itself; expected another rule")


def validate_list(rule: list[list[int]], words: Sequence[str]) -> None:
    """Each entry permutes the slots; no two give one sentence other than the original (a duplicate reordering)."""
    n = len(words)
    given: dict[tuple[str, ...], int] = {}
    for index, p in enumerate(rule):
        if sorted(p) != list(range(n)):
            raise ValueError(
                f"entry {index} {p} is not a permutation of the sentence's slots; expected each of "
                f"0..{n - 1} exactly once"
            )
        sentence = tuple(apply(p, words))
        if sentence in given and list(sentence) != list(words):
            raise ValueError(
                f"entry {index} {p} gives {' '.join(sentence)!r}, as entry {given[sentence]} does; expected "
                "each reordering once"
            )
        given.setdefault(sentence, index)


def sentences(words: Sequence[str]) -> int:
    """How many distinct sentences the orders of `words` make: n! over k! for each word repeated k times, capped at
    20! (more than any K), so that a 10^5-word sentence is not counted out exactly."""
    copies = Counter(words).values()
    cap = math.factorial(20)
    if math.lgamma(len(words) + 1) - sum(math.lgamma(k + 1) for k in copies) > math.log(cap):
        return cap
    total = math.factorial(len(words))
    for k in copies:
        total //= math.factorial(k)
    return min(total, cap)


def generate(rule: Rule, words: Sequence[str], seed: int = 0) -> list[Permutation]:
    """The permutations `rule` names for the sentence `words`, identity first where it is included."""
    if rule in ("all", "prefixes"):
        return list(iterate(rule, words, seed))
    if isinstance(rule, list):
        return [tuple(p) for p in rule]
    if isinstance(rule, str):
        return list(_new_sentences(_slot_orders(rule, len(words)), words))
    family = shuffles.family(rule)
    assert family is not None
    if family.kind == "random":
        return list(random_distinct(len(words), shuffles.target(family, words), seed, words))
    return list(shuffles.orders(family, words, seed))


def _slot_orders(rule: str, n: int) -> list[Permutation]:
    """The permutations identity, reverse, swaps or shifts give n slots, whatever words they hold."""
    if rule == "identity":
        return [tuple(range(n))]
    if rule == "reverse":
        return [tuple(reversed(range(n)))]
    if rule == "swaps":
        return [adjacent_swap(n, i) for i in range(n - 1)]
    return [tuple((i + s) % n for i in range(n)) for s in range(1, n)]  # shifts


def _new_sentences(orders: Iterator[Permutation] | list[Permutation], words: Sequence[str]) -> Iterator[Permutation]:
    """The orders that give a sentence not given before, nor the original one (unless it is the identity itself)."""
    identity = tuple(range(len(words)))
    seen = {tuple(words)}
    for p in orders:
        sentence = tuple(apply(p, words))
        if p == identity or sentence not in seen:
            seen.add(sentence)
            yield p


def iterate(rule: Rule, words: Sequence[str], seed: int = 0) -> Iterator[Permutation]:
    """The same permutations as `generate`, one at a time: `all` never builds its n! list."""
    n = len(words)
    if rule == "all":
        return _copies_in_order(itertools.permutations(range(n)), words)
    if rule == "prefixes":
        return _copies_in_order(((*p, n - 1) for p in itertools.permutations(range(n - 1))), words)
    return iter(generate(rule, words, seed))


def _copies_in_order(orders: Iterator[Permutation], words: Sequence[str]) -> Iterator[Permutation]:
    """The orders that keep the copies of each repeated word in their order: of the orders giving one sentence,
    the first in label order (the others only swap copies). Local to each order, so a shard can start anywhere."""
    follows = _consecutive_copies(words)
    if not follows:
        return orders
    return (p for p in orders if _keeps(p, follows))


def _consecutive_copies(words: Sequence[str]) -> list[tuple[int, int]]:
    """(i, j) for each word's consecutive copies: slot i holds it, and j its next copy."""
    last: dict[str, int] = {}
    pairs = []
    for slot, word in enumerate(words):
        if word in last:
            pairs.append((last[word], slot))
        last[word] = slot
    return pairs


def _keeps(p: Permutation, follows: list[tuple[int, int]]) -> bool:
    where = {slot: position for position, slot in enumerate(p)}
    return all(where[i] < where[j] for i, j in follows)


def in_label_order(rule: Rule, words: Sequence[str], seed: int = 0) -> Iterator[Permutation]:
    """`iterate` sorted by label (the order of the tidy CSV); `all` and `prefixes` already are (n <= 10)."""
    if rule in ("all", "prefixes") and len(words) <= 10:
        return iterate(rule, words, seed)
    return iter(sorted(iterate(rule, words, seed), key=label))


def unrank(rank: int, n: int) -> Permutation:
    """The permutation of range(n) at `rank` (0-based) in lexicographic order, without enumerating those before it.

    Factorial number system: rank = sum d_i (n-1-i)!, and digit d_i picks the d_i-th smallest slot still free.
    """
    if not 0 <= rank < math.factorial(n):
        raise ValueError(f"rank {rank} is outside 0..{math.factorial(n) - 1}")
    free, chosen = list(range(n)), []
    for position in range(n - 1, -1, -1):
        digit, rank = divmod(rank, math.factorial(position))
        chosen.append(free.pop(digit))
    return tuple(chosen)


def lexicographic(n: int, start: int = 0) -> Iterator[Permutation]:
    """The permutations of range(n) in lexicographic order from rank `start` on: a shard starts mid-way cheaply.

    After p = unrank(start) come, first-difference position j from the last down, every order with p's first
    j slots, a larger slot than p[j] at j, and the free slots after it in lexicographic order (itertools).
    """
    if start >= math.factorial(n):
        return
    first = unrank(start, n)
    yield first
    for j in range(n - 2, -1, -1):
        free = sorted(set(range(n)) - set(first[:j]))
        for slot in (s for s in free if s > first[j]):
            rest = [s for s in free if s != slot]
            for tail in itertools.permutations(rest):
                yield (*first[:j], slot, *tail)


def in_label_order_range(
    rules: list[Rule], words: Sequence[str], seed: int = 0, start: int = 0, stop: int | None = None
) -> Iterator[Permutation]:
    """The permutations of a sentence's rules merged in label order (the tidy CSV's), those at index start..stop-1.

    `all` and `prefixes` alone over distinct words are unranked, so a range far into n! costs nothing to reach.
    A run of equal permutations (two rules naming one order) is never split: it belongs to the range in which it
    starts.
    """
    n = len(words)
    moved_words = words if rules[0] == "all" else words[:-1]
    if len(rules) == 1 and rules[0] in ("all", "prefixes") and n <= 10 and not _consecutive_copies(moved_words):
        moved = n if rules[0] == "all" else n - 1
        tail = () if rules[0] == "all" else (n - 1,)
        ranked = ((*p, *tail) for p in lexicographic(moved, start))
        return ranked if stop is None else itertools.islice(ranked, stop - start)
    ordered = [in_label_order(rule, words, seed) for rule in rules]
    merged = ordered[0] if len(ordered) == 1 else heapq.merge(*ordered, key=label)
    return _whole_runs(merged, start, stop)


def _whole_runs(stream: Iterator[Permutation], start: int, stop: int | None) -> Iterator[Permutation]:
    """stream[start:stop], less a run of equals begun before start, plus the rest of a run begun before stop."""
    last: Permutation | None = None
    skipping = start > 0
    for index, p in enumerate(stream):
        if index < start or (skipping and p == last):
            last = p
            continue
        skipping = False
        if stop is not None and index >= stop and p != last:
            return
        last = p
        yield p


def count(rule: Rule, words: Sequence[str]) -> int:
    """How many permutations `rule` names for the sentence `words`, without generating n! of them (progress
    totals, limits): `all` the distinct sentences, `prefixes` those of the words before the last."""
    if rule == "all":
        return sentences(words)
    if rule == "prefixes":
        return sentences(words[:-1])
    if rule == "identity":
        return 1
    if rule == "reverse":
        return int(list(words) != list(reversed(words)))
    if rule == "swaps":
        return sum(a != b for a, b in itertools.pairwise(words))
    if rule == "shifts":
        return period(words) - 1
    if isinstance(rule, list):
        return len(rule)
    family = shuffles.family(rule)
    assert family is not None
    return shuffles.target(family, words)


def period(words: Sequence[str]) -> int:
    """The smallest shift s > 0 that gives the sentence back (n when only n does): shifts 1..s-1 give the distinct
    other sentences. The longest proper border of the words (Knuth-Morris-Pratt), in one pass."""
    n = len(words)
    border = [0] * n
    for i in range(1, n):
        k = border[i - 1]
        while k and words[i] != words[k]:
            k = border[k - 1]
        border[i] = k + (words[i] == words[k])
    shortest = n - border[-1] if n else 1
    return shortest if n % shortest == 0 else n


def chunks(permutations: Iterator[Permutation], size: int) -> Iterator[list[Permutation]]:
    """Consecutive lists of `size` permutations; a run of equal permutations is never split."""
    chunk: list[Permutation] = []
    for p in permutations:
        if len(chunk) >= size and p != chunk[-1]:
            yield chunk
            chunk = []
        chunk.append(p)
    if chunk:
        yield chunk


def adjacent_swap(n: int, i: int) -> Permutation:
    p = list(range(n))
    p[i], p[i + 1] = p[i + 1], p[i]
    return tuple(p)


def random_distinct(n: int, k: int, seed: int, words: Sequence[str] | None = None) -> Iterator[Permutation]:
    """k distinct non-identity permutations, drawn uniformly with a seeded generator; given the sentence's words,
    k that give distinct sentences other than the original (the draws of a sentence without repeats are the same)."""
    import numpy as np  # lazy: validation counts permutations without numpy

    generator = np.random.Generator(np.random.PCG64(seed))
    identity = tuple(range(n))
    seen: set[tuple[object, ...]] = {identity if words is None else tuple(words)}
    while len(seen) < k + 1:
        p = tuple(int(i) for i in generator.permutation(n))
        key = p if words is None else tuple(apply(p, words))
        if key not in seen:
            seen.add(key)
            yield p


def apply(p: Sequence[int], words: Sequence[str]) -> list[str]:
    return [words[i] for i in p]


def label(p: Sequence[int]) -> str:
    return " ".join(map(str, p))
