"""Permutations of a sentence's slots. Convention: the new sentence holds at slot i the word from slot p[i].

So for "dog bites man", p = (2, 1, 0) gives "man bites dog". Must not import torch, and imports
numpy only when drawing random permutations: `orderlab validate` stays quick.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

Permutation = tuple[int, ...]


class RandomRule(Protocol):
    """{random: K} as spec.InputSpec validates it (spec.RandomPermutations)."""

    @property
    def random(self) -> int: ...


# A rule as spec.InputSpec holds it: a name ("all", "swaps", ...), explicit permutations, or {random: K}
# (validated, or as a mapping the way YAML writes it).
Rule = str | list[list[int]] | RandomRule | Mapping[str, int]

# `all` is refused past this many tokens (9! = 362,880 sequences); use {random: K} beyond it.
# Streaming keeps 9! affordable in memory (flat, one chunk at a time) and in time (about a minute
# at the measured rates); per-permutation rows stop at MAX_PERMUTATIONS_FOR_ROWS (spec/schema.py checks).
MAX_TOKENS_FOR_ALL = 9
MAX_PERMUTATIONS_FOR_ROWS = math.factorial(8)


# The fewest tokens with which a named rule gives a permutation other than the identity: below it the
# rule measures nothing (swaps and shifts give none at all, reverse and all only the identity, and
# prefixes, which keeps the last word in place, only the identity below three words).
FEWEST_TOKENS = {"reverse": 2, "all": 2, "swaps": 2, "shifts": 2, "prefixes": 3}


def validate_rule(rule: Rule, n: int) -> None:
    """Raise ValueError (a message for the user) if `rule` cannot be applied to an n-token sentence.

    A rule that names no permutation but the identity is refused too: it would write rows that
    measure nothing, or none at all (and a baseline with no rows cannot be checked).
    """
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
        count = f"{n}! = {math.factorial(n):,}" if n <= 20 else f"{n}!"  # 1,000! has 2,568 digits
        raise ValueError(
            f"'all' would be {count} permutations, past the limit of "
            f"{MAX_TOKENS_FOR_ALL}! = {math.factorial(MAX_TOKENS_FOR_ALL):,}; expected {{random: K}} instead"
        )
    if isinstance(rule, dict) or hasattr(rule, "random"):
        k = random_count(rule)
        available = math.factorial(min(n, 20)) - 1  # 20! - 1 > 2e18: more than any K; n! of 10^5 words is slow
        if k > available:
            raise ValueError(
                f"random: {k} asks for more distinct non-identity permutations than the {available:,} "
                f"that {n} tokens have; expected at most {available:,}"
            )
    if isinstance(rule, list):
        for index, p in enumerate(rule):
            if sorted(p) != list(range(n)):
                raise ValueError(
                    f"entry {index} {p} is not a permutation of the sentence's slots; expected each of "
                    f"0..{n - 1} exactly once"
                )


def generate(rule: Rule, n: int, seed: int = 0) -> list[Permutation]:
    """The permutations `rule` names for an n-token sentence, identity first where it is included."""
    if rule == "identity":
        return [tuple(range(n))]
    if rule == "reverse":
        return [tuple(reversed(range(n)))]
    if rule == "all":
        return list(itertools.permutations(range(n)))
    if rule == "swaps":
        return [adjacent_swap(n, i) for i in range(n - 1)]
    if rule == "prefixes":
        return [(*p, n - 1) for p in itertools.permutations(range(n - 1))]
    if rule == "shifts":
        return [tuple((i + s) % n for i in range(n)) for s in range(1, n)]
    if isinstance(rule, list):
        return [tuple(p) for p in rule]
    return list(random_distinct(n, random_count(rule), seed))


def iterate(rule: Rule, n: int, seed: int = 0) -> Iterator[Permutation]:
    """The same permutations as `generate`, one at a time: `all` never builds its n! list."""
    if rule == "all":
        return itertools.permutations(range(n))
    if rule == "prefixes":
        return ((*p, n - 1) for p in itertools.permutations(range(n - 1)))
    return iter(generate(rule, n, seed))


def in_label_order(rule: Rule, n: int, seed: int = 0) -> Iterator[Permutation]:
    """`iterate` sorted by label (the order of the tidy CSV); `all` and `prefixes` already are (n <= 10)."""
    if rule in ("all", "prefixes") and n <= 10:
        return iterate(rule, n, seed)
    return iter(sorted(iterate(rule, n, seed), key=label))


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
    rules: list[Rule], n: int, seed: int = 0, start: int = 0, stop: int | None = None
) -> Iterator[Permutation]:
    """The permutations of a sentence's rules merged in label order (the tidy CSV's), those at index start..stop-1.

    `all` and `prefixes` alone are unranked, so a range far into n! costs nothing to reach. A run of equal
    permutations (two rules naming one order) is never split: it belongs to the range in which it starts.
    """
    if len(rules) == 1 and rules[0] in ("all", "prefixes") and n <= 10:
        moved = n if rules[0] == "all" else n - 1
        tail = () if rules[0] == "all" else (n - 1,)
        ranked = ((*p, *tail) for p in lexicographic(moved, start))
        return ranked if stop is None else itertools.islice(ranked, stop - start)
    ordered = [in_label_order(rule, n, seed) for rule in rules]
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


def count(rule: Rule, n: int) -> int:
    """How many permutations `rule` names, without generating them (for progress totals)."""
    if rule == "all":
        return math.factorial(n)
    if rule == "prefixes":
        return math.factorial(n - 1)
    if rule in ("identity", "reverse"):
        return 1
    if rule in ("swaps", "shifts"):
        return n - 1
    if isinstance(rule, list):
        return len(rule)
    return random_count(rule)


def random_count(rule: Rule) -> int:
    """K of a {random: K} rule (the one kind of rule left once the names and lists are handled)."""
    if isinstance(rule, Mapping):
        return rule["random"]
    assert not isinstance(rule, str | list)
    return rule.random


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


def random_distinct(n: int, k: int, seed: int) -> Iterator[Permutation]:
    """k distinct non-identity permutations, drawn uniformly with a seeded generator."""
    import numpy as np  # lazy: validation counts permutations without numpy

    generator = np.random.Generator(np.random.PCG64(seed))
    identity = tuple(range(n))
    seen = {identity}
    while len(seen) < k + 1:
        p = tuple(int(i) for i in generator.permutation(n))
        if p not in seen:
            seen.add(p)
            yield p


def apply(p: Sequence[int], words: list[str]) -> list[str]:
    return [words[i] for i in p]


def label(p: Sequence[int]) -> str:
    return " ".join(map(str, p))
