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


def hand_share(backend, slot: int) -> float:
    """The share by hand: positions zeroed and layer 1's output of one slot copied with torch forward hooks."""
    import torch

    model, blocks = backend.model, backend.model.transformer.h
    bos = backend.tokenizer.bos_token_id
    vocab = backend.tokenizer.get_vocab()
    ids = {name: torch.tensor([[bos, *(vocab[WORDS[i]] for i in order)]])
           for name, order in (("source", range(5)), ("target", TARGET))}  # fmt: skip
    kept: dict[str, torch.Tensor] = {}

    def keep(_module, _args, output):
        kept["source"] = (output if isinstance(output, torch.Tensor) else output[0]).clone()

    def copy(_module, _args, output):
        hidden = (output if isinstance(output, torch.Tensor) else output[0]).clone()
        hidden[:, slot + 1] = kept["source"][:, slot + 1]  # by position; token 0 is BOS
        return hidden if isinstance(output, torch.Tensor) else (hidden, *output[1:])

    def last(order: str, hook=None) -> torch.Tensor:
        handles = [model.transformer.wpe.register_forward_hook(lambda _m, _a, out: torch.zeros_like(out))]
        handles += [blocks[0].register_forward_hook(hook)] if hook else []
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
        ({"points": ["pattern"]}, "patching: points: '1.pattern' is formed inside attention: read only on gpt2"),
        ({"slots": [[5]]}, "patching: slots: [5] reaches past the 5 word slots"),
        ({"pairs": [[[0, 1], [1, 0]]]}, "patching: pairs: [0, 1] is no order of the 5 words"),
    ],
)
def test_a_patch_that_cannot_be_made_is_one_line(seeded, patching, expected):
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    with pytest.raises(OrderlabError, match="^" + expected.replace("[", r"\[").replace("]", r"\]")):
        ol.patch(spec(patching), model=seeded.model, tokenizer=seeded.tokenizer)


def test_the_attention_stack_is_refused_in_one_line():
    import orderlab.api as ol
    from orderlab.errors import OrderlabError

    with pytest.raises(OrderlabError, match=r"patching: runs on transformers models, not yet on the attention stack"):
        ol.patch(spec({}, {"d_model": 16, "n_heads": 2, "n_layers": 1}))
