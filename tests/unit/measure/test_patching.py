"""Activation patching between orders (api.patch, measure/patching.py) on a seeded GPT-2 without positions, and a
reordering of the words before the last: the last word's layer-1 state is then the same in both orders (causal
attention over the same set of words), so what it reads at layer 2 is all that differs."""

from __future__ import annotations

import pytest

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

WORDS = ["the", "dog", "saw", "a", "cat"]
TARGET = [2, 0, 3, 1, 4]  # the words before the last reordered
GIVEN = {"kind": "hf", "family": "gpt2", "position_embeddings": ["zero"]}


def spec(patching: dict, model: dict = GIVEN) -> dict:
    return {"name": "patched", "model": model, "inputs": [{"sentence": " ".join(WORDS), "permutations": [TARGET]}],
            "metrics": ["equivariance"], "patching": patching}  # fmt: skip


@pytest.fixture(scope="module")
def seeded():
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(32, 2, 2, tuple(sorted(WORDS)), 2), family="gpt2")
    return backend


@pytest.fixture(scope="module")
def patched(seeded):
    import orderlab.api as ol

    groups = [[0, 1, 2, 3, 4], [4], [], [1], [0]]
    return ol.patch(spec({"layers": [1], "slots": groups}), model=seeded.model, tokenizer=seeded.tokenizer).shares


def share(frame, slots: str) -> tuple[float, str]:
    row = frame[frame.slots == slots].iloc[0]
    return float(row["share"]), str(row["verdict"])


def test_every_slot_recovers_the_whole_difference_the_last_alone_none_and_nothing_none(patched):
    assert share(patched, "0+1+2+3+4") == (1.0, "recovers all")
    assert share(patched, "4") == (0.0, "recovers none")  # its layer-1 state was already the source's
    assert share(patched, "none") == (0.0, "recovers none")
    assert set(patched.source) == {"0 1 2 3 4"} and set(patched.target) == {"2 0 3 1 4"}
    assert set(patched.layer) == {1} and set(patched.point) == {"output"}


def hand_share(backend, slot: int, module=None, columns: slice = slice(None)) -> float:
    """The share by hand: positions zeroed and one slot's output of `module` (layer 1's block unless given; its
    `columns` of the last axis) copied from the source's run into the target's with torch forward hooks."""
    import torch

    model = backend.model
    module = module or model.transformer.h[0]
    bos = backend.tokenizer.bos_token_id
    vocab = backend.tokenizer.get_vocab()
    ids = {name: torch.tensor([[bos, *(vocab[WORDS[i]] for i in order)]])
           for name, order in (("source", range(5)), ("target", TARGET))}  # fmt: skip
    kept: dict[str, torch.Tensor] = {}

    def keep(_module, _args, output):
        kept["source"] = (output if isinstance(output, torch.Tensor) else output[0]).clone()

    def copy(_module, _args, output):
        hidden = (output if isinstance(output, torch.Tensor) else output[0]).clone()
        hidden[:, slot + 1, columns] = kept["source"][:, slot + 1, columns]  # by position; token 0 is BOS
        return hidden if isinstance(output, torch.Tensor) else (hidden, *output[1:])

    def last(order: str, hook=None) -> torch.Tensor:
        handles = [model.transformer.wpe.register_forward_hook(lambda _m, _a, out: torch.zeros_like(out))]
        handles += [module.register_forward_hook(hook)] if hook else []
        with torch.no_grad():
            state = model(input_ids=ids[order], output_hidden_states=True).hidden_states[-1][0, -1]
        for handle in handles:
            handle.remove()
        return state.double()

    source = last("source", keep)
    target, moved = last("target"), last("target", copy)
    return float(1 - (moved - source).norm() / (target - source).norm())


@pytest.mark.parametrize("slot", [1, 0])
def test_one_earlier_slot_recovers_the_share_two_hand_written_hooks_give(patched, seeded, slot):
    measured, verdict = share(patched, str(slot))
    assert verdict == "recovers part" and 0 < measured < 1
    assert measured == pytest.approx(hand_share(seeded, slot), abs=1e-5)


@pytest.fixture(scope="module")
def attention_patched(seeded):
    """Layer 2's queries, keys, values and mid patched, each on its own: the last word's state at layer 2 reads its
    own query (its layer-1 state is the same in both orders) and every slot's key and value, and its own mid alone."""
    import orderlab.api as ol

    groups = [[0, 1, 2, 3, 4], [], [1], [4]]
    patching = {"points": ["q", "k", "v", "mid"], "layers": [2], "slots": groups}
    return ol.patch(spec(patching), model=seeded.model, tokenizer=seeded.tokenizer).shares


def test_queries_keys_and_values_are_patched_on_their_token_axis(attention_patched):
    by_point = attention_patched.set_index(["point", "slots"])["verdict"]
    assert set(by_point["q"]) == {"recovers none"}  # only the last slot's query reads, and it is the same
    for point in ("k", "v"):
        assert by_point[point, "none"] == by_point[point, "4"] == "recovers none"
        assert by_point[point, "0+1+2+3+4"] == by_point[point, "1"] == "recovers part"


def test_mid_formed_inline_is_patched_into_the_residual_stream(attention_patched):
    by_slots = attention_patched[attention_patched.point == "mid"].set_index("slots")["verdict"]
    assert by_slots["4"] == by_slots["0+1+2+3+4"] == "recovers all"  # the last slot's own mid, residual and all
    assert by_slots["1"] == by_slots["none"] == "recovers none"


def test_one_slots_keys_recover_the_share_two_hand_written_hooks_give(attention_patched, seeded):
    width = seeded.model.config.n_embd  # GPT-2's c_attn emits [q | k | v]
    rows = attention_patched[(attention_patched.point == "k") & (attention_patched.slots == "1")]
    by_hand = hand_share(seeded, 1, seeded.model.transformer.h[1].attn.c_attn, slice(width, 2 * width))
    assert float(rows.share.iloc[0]) == pytest.approx(by_hand, abs=1e-5)


def test_every_slots_layer_1_pattern_by_word_recovers_the_whole_difference_the_last_alone_none(seeded):
    """Without positions a layer-1 value is its word's alone, so a word's layer-1 state is its attention over the
    words' values: given the source's probabilities by word (match: word reorders the key columns too), every word's
    layer-1 state is the source's, and the last word's layer-2 attention over the same states in another order is
    too. The last word's own row already matches by word (it saw every word in both orders)."""
    import orderlab.api as ol

    patching = {"points": ["pattern"], "layers": [1], "slots": [[0, 1, 2, 3, 4], [4], [], [1]], "match": "word"}
    frame = ol.patch(spec(patching), model=seeded.model, tokenizer=seeded.tokenizer).shares
    assert share(frame, "0+1+2+3+4") == (1.0, "recovers all")
    assert share(frame, "4") == share(frame, "none") == (0.0, "recovers none")
    assert share(frame, "1")[1] == "recovers part"
    assert set(frame.point) == {"pattern"}
    assert seeded.model.config._attn_implementation == "sdpa"  # the model's own, after the eager passes patched


def test_every_slots_queries_keys_and_values_together_give_the_source_state():
    """The patching's own recording and writing functions, all three points at once through the one hook channel."""
    import torch

    from orderlab.measure.patching import (
        OrderPair,
        added_hooks,
        recorders,
        share_of,
        slot_masks,
        source_tokens,
        writers,
    )
    from orderlab.models.hf.loader import PretrainedBackend, Seeded

    backend = PretrainedBackend(Seeded(32, 2, 2, tuple(sorted(WORDS)), 2), family="gpt2")
    backend.set_positions("zero", 0)
    pair = OrderPair(tuple(range(5)), tuple(TARGET))
    source, target = (backend.word_tokens(WORDS).permuted(order) for order in (pair.source, pair.target))
    names, recorded = ["2.q", "2.k", "2.v"], {}
    ids = torch.tensor([source.ids, target.ids])
    with torch.inference_mode(), added_hooks(backend, recorders(names, recorded)):
        ends = backend.forward(ids).hidden[-1][:, -1].double()
    every = slot_masks(target, [tuple(range(5)), ()])
    reads = source_tokens(source, target, pair, "position")
    with torch.inference_mode(), added_hooks(backend, writers(names, recorded, reads, every)):
        patched = backend.forward(torch.tensor([target.ids] * 2)).hidden[-1][:, -1].double()
    assert (ends[0] - ends[1]).norm() > 1e-2
    assert share_of(ends[0], ends[1], patched, "state") == pytest.approx([1, 0], abs=1e-5)  # float32 round-off


def test_each_slot_at_every_layer_on_the_last_words_log_p():
    import orderlab.api as ol

    model = {**GIVEN, "d_model": 32, "n_heads": 2, "n_layers": 2, "position_embeddings": ["zero", "trained"]}
    seen: list[tuple[int, int]] = []
    patched = ol.patch(spec({"effect": "last_logprob"}, model), progress=lambda done, total: seen.append((done, total)))
    frame = patched.shares
    assert seen == [(1, 1)]  # one sweep combination, patched
    assert list(frame.slots.unique()) == ["0", "1", "2", "3", "4", "0+1+2+3+4"]
    assert sorted(frame.layer.unique()) == [1, 2] and sorted(frame.encoding.unique()) == ["seeded", "zero"]
    layer_2 = frame[(frame.layer == 2) & (frame.slots == "0+1+2+3+4")]  # every state the source's
    assert set(layer_2.verdict) == {"recovers all"}
    figure = patched.figure()  # a panel per condition, layers x slot groups
    assert [ax.get_title() for ax in figure.axes[:2]] == ["seeded", "zero"]
    assert [label.get_text() for label in figure.axes[0].get_yticklabels()] == ["output 1", "output 2"]
    assert "patches" in patched._repr_html_() and repr(patched) == "Patched(name='patched', patches=24)"


def test_a_slot_reads_the_source_at_its_position_or_where_its_word_is():
    from orderlab.measure.patching import OrderPair, source_tokens
    from orderlab.models.hf.grouping import WordTokens

    tokens = WordTokens((9, 1, 2, 2, 3), ((1, 2), (2, 4), (4, 5)))  # BOS, then a word of two tokens in the middle
    pair = OrderPair((0, 1, 2), (1, 0, 2))
    source, target = tokens.permuted(pair.source), tokens.permuted(pair.target)
    assert source_tokens(source, target, pair, "word").tolist() == [0, 2, 3, 1, 4]
    from orderlab.errors import OrderlabError

    with pytest.raises(OrderlabError, match=r"^patching: slot 0 has 2 token"):
        source_tokens(source, target, pair, "position")


@pytest.mark.parametrize(
    ("patching", "expected"),
    [
        ({"layers": [3]}, "patching: layers [3]: the model has 2"),
        ({"slots": [[5]]}, "patching: slots: [5] reaches past the 5 word slots"),
        ({"pairs": [[[0, 1], [1, 0]]]}, "patching: pairs: [0, 1] is no order of the 5 words"),
    ],
)
def test_a_patch_that_cannot_be_made_is_one_line(seeded, patching, expected):
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    with pytest.raises(OrderlabError, match="^" + expected.replace("[", r"\[").replace("]", r"\]")):
        ol.patch(spec(patching), model=seeded.model, tokenizer=seeded.tokenizer)
