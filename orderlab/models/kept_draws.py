"""A seeded build that draws only the weights it keeps, every number as a full build draws it.

transformers draws most of a seeded model's weights two or three times: a layer's own initialisation in its
constructor, then the family's in `post_init`, GPT-2's output projections a third time (206 M numbers for GPT-2's
85 M weights), and drawing is most of a build. `drawing_kept_weights` holds each whole-tensor draw back (a
TorchFunctionMode) with its place in the generator's stream; a later draw or fill of the same tensor cancels it,
and any other op that touches the tensor runs it first. At the end every draw still held runs from its own place
(a generator moved there: generator_jump.py), shared out over threads in runs of consecutive draws (each thread's
generator jumped to where its run starts), and the generator is left where the full build leaves it. A
random op it does not hold back runs with every held draw done first. Two guards: a draw is held only where this
machine's kernel draws as counted (`rule_holds`), and an op not known to draw that moves the generator while draws
are held sends the build round again, drawing everything (`built_drawing_kept`). A draw into a 16-bit tensor, held or
not, runs in float32 and is rounded in (rounded_draws.py). tests/unit/models/test_kept_draws.py checks every family's
weights, bit for bit, and the generator's end state against a build that draws everything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, partial
from typing import Any, TypeVar

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from orderlab.models.generator_jump import advance
from orderlab.models.rounded_draws import RoundedDraws, drawn_rounded, initialises, rounds

HELD_DTYPES = (torch.float32, torch.bfloat16, torch.float16)  # drawn as float32: one 32-bit output a number
HELD_OPS = ("normal_", "uniform_", "kaiming_uniform_")  # the draws held back (kaiming_uniform_: a uniform_)
RULE_PROBES = (16, 33, 48, 1030)  # sizes that rule_holds draws: whole blocks of 16 and remainders
# Outputs a thread draws at the least when the held draws are shared out at the end: below, the move to where its
# share starts (a jump, ~0.1 s: generator_jump.py) costs more than drawing half of it in parallel saves.
SHARE_FROM = 16_000_000
# Ops that draw from the generator (torch's and torch.nn.init's names); any of them not held back runs in order.
RANDOM_OPS = frozenset({
    "normal_", "uniform_", "random_", "bernoulli_", "exponential_", "geometric_", "cauchy_", "log_normal_", "rand",
    "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "bernoulli", "multinomial",
    "poisson", "dropout", "trunc_normal_", "orthogonal_", "sparse_", "xavier_uniform_", "xavier_normal_",
    "kaiming_uniform_", "kaiming_normal_",
})  # fmt: skip
FILLS = frozenset({"zeros_", "ones_", "constant_", "zero_", "fill_"})  # write every number, read none
# Ops that read a tensor's shape or make an alias of it, never its numbers.
SHAPE_ONLY = frozenset({
    "dim", "size", "numel", "is_floating_point", "__get__", "detach", "requires_grad_", "is_contiguous", "stride",
    "storage_offset", "element_size", "__len__",
})  # fmt: skip


def outputs_drawn(name: str, tensor: torch.Tensor) -> int | None:
    """How many 32-bit outputs torch's float32 CPU kernel takes to fill this tensor with `name` (a 16-bit tensor's
    draw runs in float32: rounded_draws.py), or None when the draw is not one held back: another device, dtype or
    layout, fewer than 16 normal numbers (drawn in float64 with a cached sample), or a kernel on this machine that
    does not draw as `outputs_counted` says (rule_holds)."""
    if name not in HELD_OPS or tensor.device.type != "cpu" or tensor.dtype not in HELD_DTYPES:
        return None
    if tensor.layout != torch.strided or not tensor.is_contiguous():
        return None
    kind = "normal_" if name == "normal_" else "uniform_"
    numbers = tensor.numel()
    if numbers < (16 if kind == "normal_" else 1) or not rule_holds(kind):
        return None
    return outputs_counted(kind, numbers)


def outputs_counted(kind: str, numbers: int) -> int:
    """torch 2.x's float32 CPU kernels: normal_ fills 16 at a time (Box-Muller), drawing a number for each and then
    the last 16 again after a remainder; uniform_ one a number."""
    if kind == "uniform_":
        return numbers
    return numbers + (16 if numbers % 16 else 0)


@cache
def rule_holds(kind: str) -> bool:
    """Whether this machine's float32 kernel draws as outputs_counted says (a kernel may differ by CPU and torch
    build): probe draws on a private generator against a generator moved on by the count without drawing. A
    generator state laid out otherwise than generator_jump reads it fails here too."""
    for numbers in RULE_PROBES:
        drawn, moved = torch.Generator().manual_seed(numbers), torch.Generator().manual_seed(numbers)
        getattr(torch.empty(numbers, dtype=torch.float32), kind)(generator=drawn)  # whatever the default dtype
        try:
            advance(outputs_counted(kind, numbers), moved)
        except (RuntimeError, ValueError):  # torch refused the state written, or numpy the one read
            return False
        if not torch.equal(drawn.get_state(), moved.get_state()):
            return False
    return True


Built = TypeVar("Built")
Region = tuple[int, int, int]  # storage address, offset, numbers


def region(tensor: torch.Tensor) -> Region:
    return storage_address(tensor), int(tensor.storage_offset()), tensor.numel()


def storage_address(tensor: torch.Tensor) -> int:
    """Where the tensor's numbers live; -1 for a tensor without a storage of its own (sparse, a subclass's
    wrapper), which no held draw fills."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return -1


@dataclass
class HeldDraw:
    place: int  # outputs into the stream since the last time the generator was in step
    outputs: int
    func: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grad: bool  # whether gradients were recorded where it was called,
    inference: bool  # and inference mode on: a thread's own settings, the caller's wherever it runs

    def run(self, generator: torch.Generator) -> None:
        with torch.inference_mode(self.inference), torch.set_grad_enabled(self.grad):
            self.func(*self.args, **{**self.kwargs, "generator": generator})


def stream_shares(draws: list[HeldDraw], workers: int, least: int) -> list[list[HeldDraw]]:
    """Held draws, in the stream's order, cut into at most `workers` runs of consecutive draws: each run but the
    last closed once it holds an equal share of the outputs, a share of `least` outputs or more (one run where they
    hold less)."""
    total = sum(draw.outputs for draw in draws)
    share = total / max(1, min(workers, total // max(least, 1)))
    shares: list[list[HeldDraw]] = [[]]
    held = 0  # outputs in the last run
    for draw in draws:
        if held >= share:
            shares.append([])
            held = 0
        shares[-1].append(draw)
        held += draw.outputs
    return shares


def thread_modes() -> tuple[bool, bool]:
    """This thread's grad and inference modes, which a draw held here runs under in any thread."""
    return torch.is_grad_enabled(), torch.is_inference_mode_enabled()


def drawn_in_turn(draws: list[HeldDraw], known: tuple[int, torch.Tensor]) -> tuple[int, torch.Tensor]:
    """Consecutive held draws run on a generator of their own, from a known (place, generator state) before the
    first, moving it over the outputs between them: the place and state after the last."""
    at, state = known
    generator = torch.Generator()
    generator.set_state(state)
    for draw in draws:
        advance(draw.place - at, generator)
        draw.run(generator)
        at = draw.place + draw.outputs
    return at, generator.get_state()


@dataclass
class KeptDraws(TorchFunctionMode):
    """The mode: held draws by the region they fill; `skipped`: outputs of the draws cancelled. The draws held at
    the end run in up to `workers` threads (torch's thread count unless given), each from its own place."""

    held: dict[Region, HeldDraw] = field(default_factory=dict)
    stream: int = 0  # outputs the full build would have drawn since `states[0]`
    states: list[tuple[int, torch.Tensor]] = field(default_factory=list)  # (place, generator state) known
    skipped: int = 0
    out_of_place: str = ""  # an op that drew though it was not known to: the weights may not be the full build's
    workers: int = 0
    share_from: int = SHARE_FROM

    def __post_init__(self) -> None:
        super().__init__()
        self.in_step()

    def __torch_function__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        init = initialises(func)
        target = args[0] if args else kwargs.get("tensor")
        if rounds(func, target):  # drawn in float32 and rounded, held or not
            func = partial(drawn_rounded, func)
        own_generator = kwargs.get("generator") is not None or any(isinstance(arg, torch.Generator) for arg in args)
        if isinstance(target, torch.Tensor) and not own_generator:
            outputs = outputs_drawn(name, target)
            if outputs is not None:
                self.overwritten(target)
                self.held[region(target)] = HeldDraw(self.stream, outputs, func, args, kwargs, *thread_modes())
                self.stream += outputs
                return target
        if name in RANDOM_OPS or (init and name not in FILLS):
            self.settle()
            result = func(*args, **kwargs)
            self.in_step()  # the stream counted from where that op left the generator
            return result
        if name in SHAPE_ONLY:
            return func(*args, **kwargs)
        if self.held:
            tensors = [leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, torch.Tensor)]
            if name in FILLS and tensors and tensors[0].is_contiguous():
                self.overwritten(tensors[0])
                tensors = tensors[1:]
            self.draw_held_in(tensors)
        before = torch.get_rng_state()
        result = func(*args, **kwargs)
        if not torch.equal(before, torch.get_rng_state()):  # an op not known to draw drew
            if self.stream:  # from where the held draws left the generator, not from its place in the stream
                self.out_of_place = name
            self.in_step()
        return result

    def overwritten(self, tensor: torch.Tensor) -> None:
        """A whole-tensor write: a draw held for exactly this tensor is cancelled, any other in its storage drawn."""
        place = region(tensor)
        draw = self.held.pop(place, None)
        if draw is not None:
            self.skipped += draw.outputs
        self.draw_held_in([tensor])

    def draw_held_in(self, tensors: list[torch.Tensor]) -> None:
        """Draws held in these tensors' storage run now: an op is about to read or partly write them."""
        touched = {storage_address(tensor) for tensor in tensors}
        for place in [place for place in self.held if place[0] in touched]:
            self.draw(self.held.pop(place))

    def draw(self, draw: HeldDraw) -> None:
        """Run a held draw from its own place in the stream, from the nearest known state before it."""
        self.states.append(drawn_in_turn([draw], self.known_before(draw.place)))

    def known_before(self, place: int) -> tuple[int, torch.Tensor]:
        return max((known for known in self.states if known[0] <= place), key=lambda known: known[0])

    def move_to(self, place: int) -> None:
        known, state = self.known_before(place)
        torch.set_rng_state(state)
        advance(place - known)

    def settle(self) -> None:
        """Every held draw run, shared out in runs of consecutive draws over threads (each draw from its own place
        in the stream, so the numbers do not depend on the sharing), and the generator where the full build would
        have it."""
        draws = sorted(self.held.values(), key=lambda draw: draw.place)
        self.held.clear()
        if draws:
            shares = stream_shares(draws, self.workers or torch.get_num_threads(), self.share_from)
            starts = [self.known_before(share[0].place) for share in shares]
            with ThreadPoolExecutor(max(len(shares) - 1, 1)) as pool:
                others = pool.map(drawn_in_turn, shares[1:], starts[1:])  # under way while this thread draws the first
                self.states += [drawn_in_turn(shares[0], starts[0]), *others]
        self.move_to(self.stream)
        self.in_step()

    def in_step(self) -> None:
        self.stream, self.states = 0, [(0, torch.get_rng_state())]


@contextmanager
def drawing_kept_weights(workers: int = 0, share_from: int = SHARE_FROM) -> Iterator[KeptDraws]:
    """Within: whole-tensor draws of a seeded build held back, those overwritten never drawn (module docstring);
    those held at the end drawn in up to `workers` threads (0: torch's thread count), each drawing `share_from`
    outputs or more."""
    mode = KeptDraws(workers=workers, share_from=share_from)
    with mode:
        yield mode
    mode.settle()


def built_drawing_kept(build: Callable[[], Built]) -> Built:
    """`build()` drawing only the weights it keeps; built again drawing every one, from the same generator state,
    where an op not known to draw did (an initialisation this module has not met): the same weights either way,
    a 16-bit tensor's drawn in float32 and rounded (rounded_draws.py)."""
    start = torch.get_rng_state()
    with drawing_kept_weights() as mode:
        built = build()
    if not mode.out_of_place:
        return built
    del built
    torch.set_rng_state(start)
    return built_drawing_every(build)


def built_drawing_every(build: Callable[[], Built]) -> Built:
    """`build()` drawing every weight, the draws that later ones overwrite too, a 16-bit tensor's in float32 and
    rounded (rounded_draws.py): what built_drawing_kept builds, the long way."""
    with RoundedDraws():
        return build()
