"""Moving torch's CPU generator ahead by a count of its outputs without producing them.

A seeded build that skips a draw whose values are overwritten must still leave the generator where the draw would
have (models/kept_draws.py), or every later weight changes. torch's CPU generator is MT19937: a linear recurrence
over GF(2) on 19,937 bits of state. A short move runs numpy's MT19937 (the same engine, about twice as fast as a
draw, no numbers kept); a long one jumps (Haramoto et al., "Efficient jump ahead for F2-linear random number
generators", 2008): the state `s` words on is a sum of the first 19,937 states, chosen by the coefficients of
t^s mod the recurrence's characteristic polynomial (CHARACTERISTIC below). At 85 M outputs, a jump takes ~0.1 s
against ~0.5 s stepping and ~0.9 s drawing.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import torch

WORDS = 624  # MT19937's state: 624 words of 32 bits, the first word's upper bit counting
DEGREE = 19937  # the recurrence's degree: the characteristic polynomial's
JUMP_FROM = 16_000_000  # outputs from which a jump is faster than stepping (~0.1 s either way there)
WINDOW = 8  # bits a reduction clears a step (a table of 2**WINDOW multiples of the polynomial)
ROWS_AT_ONCE = 48  # state words summed at once: a 48 x ~10,000 gather, about 2 MB


def advance(steps: int, generator: torch.Generator | None = None) -> None:
    """Move a CPU generator (torch's default one unless given) on by `steps` 32-bit outputs, as that many draws of
    one output would."""
    if steps <= 0:
        return
    generator = generator or torch.default_generator
    raw = generator.get_state()
    key, position = read_state(raw)
    key, position = jumped(key, position, steps) if steps >= JUMP_FROM else stepped(key, position, steps)
    generator.set_state(written_state(raw, key, position))


def read_state(raw: torch.Tensor) -> tuple[np.ndarray, int]:
    """(state words, position of the next output in them, 624 for a twist first) from torch.get_rng_state().

    torch 2.x's layout: seed (u64), left (i32), seeded (i32), next (u64), state (624 x u64), then its cached normal
    samples; `left - 1` outputs remain before the next twist."""
    data = raw.numpy().tobytes()
    left = int(np.frombuffer(data, np.int32, 1, 8)[0])
    key = np.frombuffer(data, np.uint64, WORDS, 24).astype(np.uint32)
    return key, WORDS + 1 - left


def written_state(raw: torch.Tensor, key: np.ndarray, position: int) -> torch.Tensor:
    """torch.get_rng_state()'s bytes with the engine at (key, position), every other field (seed, cached normal
    samples) as it was."""
    data = bytearray(raw.numpy().tobytes())
    data[8:12] = np.int32(WORDS + 1 - position).tobytes()
    data[16:24] = np.uint64(position).tobytes()
    data[24 : 24 + 8 * WORDS] = key.astype(np.uint64).tobytes()
    return torch.frombuffer(data, dtype=torch.uint8).clone()


def engine(key: np.ndarray, position: int) -> np.random.MT19937:
    """numpy's MT19937 at this state (numpy's `pos` is torch's next output's index)."""
    generator = np.random.MT19937()
    generator.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": position}}
    return generator


def stepped(key: np.ndarray, position: int, steps: int) -> tuple[np.ndarray, int]:
    """The state `steps` outputs on, numpy's engine run that far with no output kept."""
    generator = engine(key, position)
    generator.random_raw(steps, output=False)
    state = generator.state["state"]
    return np.asarray(state["key"], dtype=np.uint32), int(state["pos"])


def state_words(key: np.ndarray, count: int) -> np.ndarray:
    """The engine's words x[0..count): the state, then each twist's 624 new words (untempered)."""
    blocks = [key]
    while len(blocks) * WORDS < count:
        generator = engine(blocks[-1], WORDS)  # at the block's end: the next output twists
        generator.random_raw(1)
        blocks.append(np.asarray(generator.state["state"]["key"], dtype=np.uint32))
    return np.concatenate(blocks)[:count]


def jumped(key: np.ndarray, position: int, steps: int) -> tuple[np.ndarray, int]:
    """The state `steps` outputs on: the words x[s .. s + 624) of a twist boundary s, at the same position in them.

    Every bit of x[k] for k >= 1 is a linear form in the 19,937-bit state, so the words satisfy the characteristic
    polynomial's recurrence from x[1] on: x[1 + e + j] = XOR over the set coefficients i of t^e mod it of
    x[1 + i + j]."""
    blocks, offset = divmod(position + steps, WORDS)
    if offset == 0:  # torch holds "the next block untwisted" as the last one used up (left = 1)
        blocks, offset = blocks - 1, WORDS
    start = blocks * WORDS
    if start < 2 * DEGREE:  # a short way: the words themselves are as cheap as the polynomial
        return state_words(key, start + WORDS)[start:].copy(), offset
    chosen = coefficients(power_of_t(start - 1))
    words = state_words(key, 1 + DEGREE + WORDS)[1:]
    jumped_key = np.empty(WORDS, dtype=np.uint32)
    for first in range(0, WORDS, ROWS_AT_ONCE):
        rows = np.arange(first, min(first + ROWS_AT_ONCE, WORDS))
        jumped_key[rows] = np.bitwise_xor.reduce(words[chosen[None, :] + rows[:, None]], axis=1)
    return jumped_key, offset


def coefficients(polynomial: int) -> np.ndarray:
    """The exponents of a GF(2) polynomial's set coefficients (bit i: t^i)."""
    bits = np.unpackbits(np.frombuffer(polynomial.to_bytes((polynomial.bit_length() + 7) // 8, "little"), np.uint8),
                         bitorder="little")  # fmt: skip
    return np.flatnonzero(bits)


def power_of_t(exponent: int) -> int:
    """t^exponent mod the characteristic polynomial, by squaring (a square over GF(2) spreads the bits)."""
    reduce = reducer()
    result = 1
    for bit in format(exponent, "b"):
        result = reduce(squared(result))
        if bit == "1":
            result = reduce(result << 1)
    return result


def squared(polynomial: int) -> int:
    """The square over GF(2): each bit i moved to 2i, a byte at a time."""
    spread = spread_table()[np.frombuffer(polynomial.to_bytes((polynomial.bit_length() + 7) // 8 or 1, "little"),
                                          np.uint8)]  # fmt: skip
    return int.from_bytes(spread.astype("<u2").tobytes(), "little")


@cache
def spread_table() -> np.ndarray:
    """Each byte's bits moved to the even places of 16: a byte's square over GF(2)."""
    table = np.zeros(256, dtype=np.uint16)
    for bit in range(8):
        table |= ((np.arange(256) >> bit) & 1).astype(np.uint16) << (2 * bit)
    return table


class Reducer:
    """A polynomial mod the characteristic polynomial, WINDOW top bits cleared a step by a multiple from a table."""

    def __init__(self, modulus: int):
        self.degree = modulus.bit_length() - 1
        multiples: dict[int, int] = {}
        for multiplier in range(1 << WINDOW):
            product = 0
            for bit in range(WINDOW):
                if multiplier >> bit & 1:
                    product ^= modulus << bit
            multiples[product >> self.degree] = product  # its top WINDOW bits: a bijection over the multipliers
        self.multiples = [multiples[top] for top in range(1 << WINDOW)]

    def __call__(self, polynomial: int) -> int:
        while (length := polynomial.bit_length()) > self.degree:
            shift = max(length - self.degree - WINDOW, 0)
            polynomial ^= self.multiples[polynomial >> (shift + self.degree)] << shift
        return polynomial


@cache
def reducer() -> Reducer:
    return Reducer(int(CHARACTERISTIC, 16))


# MT19937's characteristic polynomial, hexadecimal, t^19937 first: Berlekamp-Massey over any one bit of its outputs
# gives it (tests/unit/models/test_generator_jump.py does, and checks it against this).
CHARACTERISTIC = (
    "2000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000040000000000000000000000000000000000000000000000000000000080000000000"
    "0000000000000000000000000000000000000000000001000000000000000000000000000000000000000000800000000000002000000000"
    "0000000000000000000000000000000000000000000000040000000000000000000000000000000000000000020000000000000080000000"
    "0000000000000000000100000000000000000000000000001000000000000000000000000000200000000000000800000000000002000000"
    "0000000000000000000000000000000000000000000000000040000000000002000000000000000000000000000020000000000000080000"
    "0000000000000000000000100000000000000000000000000001000000000000000000000000000200000000000000800000000000042000"
    "0000000000000000000000000000000000000000000000000000840000000000002000000000000000000000000000020000000000001080"
    "0000000000000000000000000100000000000000000000000000021000000000000000000000000000200000000000000800000000000002"
    "0000000000000000000000000000000000000000000000000000000040000000000002000000000000100000000000000020000000000000"
    "0800000000000000000000000002100000000000000000000000000001000000000000000000000000000200000000000000800000000000"
    "0420000000000020000000000000000000000000000000000000000000840000000000002000000000000000000000000000020000000000"
    "0010800000000000000000000000000100000000000000000000000000021000000000000000000000000000200000000000000800000000"
    "0000020000000000000000000000000000000000000000000000000000000040000000000002000000000000100000000000000020000000"
    "0000000800000000000000000000000002100000000000000000000000000001000000000000000000000000000200000000000000800000"
    "0000000420000000000020000000000000000000000000000000000000000000840000000000002000000000000000000000000000020000"
    "0000000010800000000000002000000000000100000000000000000000000000021000000000000000000000000000200000000000000800"
    "0000000000020000000000000000000000000000000000000000000000000000000000000000000002000000000000100000000000000020"
    "0000000004000000000000000000000000000002100000000000000000000000008000000000000000000000000000000200000000000000"
    "0000000000100400000000000020000000000000000000000000080000000000000200800000000000002000000000000000000000000000"
    "0000000000000010000000000000000000000000000000000000002000000000000000020000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000100000000000"
    "0000000000000000000000000000200000000000000002000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000004000000000000000000000000000000000000000000000000000000008000000000000000000000000000000000"
    "0000000000000000000000100000000000000000000000000000000000000000080000000000000200000000000200000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000200000000000000000"
    "0000000000000000000000000000000000000000200000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000200000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000200000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000040000000000000000000000000"
    "0000000000000000000000000000000800000000000000000000000000000000000000000000000000000001000000000000000000000000"
    "0000000000000000000000000000000020000000000000000000000000000000000000000000000000000000040000000000000000000000"
    "0000000000000000000000000000000000800000000000000000000000000000000000000000000000000000001000000000000000000000"
    "0000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000000002000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000400000000000000000000000000000000000000000000000000000000800000000000002000"
    "0000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000020000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"
    "000000000000000000000000000000000000000000000000000000001"
)
