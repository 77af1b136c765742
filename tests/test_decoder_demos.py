"""The decoder-only reverse demos (tasks/decoder_only.py): `stressed=` -> `desserts` as one sequence, learned by a
causal decoder with rotary positions (reverse_decoder_rope) and with no positions at all (reverse_decoder_nope).

The finding (Kazemnejad et al. 2023): without any positional encoding the causal decoder still reverses (the causal
mask lets it count), while the encoder-decoder without positions (reverse_nope, a bidirectional encoder) does not.
Fresh examples here use a seed neither training nor the card's report used; the card's numbers must agree."""

from pathlib import Path

import pytest

from model import greedy_decode, load_checkpoint
from model.checkpoints.checkpoint import load_card
from tasks import decoder_only as d
from tasks.registry import get_task
from tasks.tasks import dataset, held_out

CHECKPOINTS = Path(__file__).resolve().parents[1] / "checkpoints"
NAMES = {"reverse_decoder_rope": "rope", "reverse_decoder_nope": "none"}
EXAMPLES = 300
TEST_SEED_OFFSET = 3
CARD_TOLERANCE = 0.08  # 300 fresh examples against the card's 500 others (about 2 standard errors)
NOPE_AT_LEAST = 0.4  # the causal decoder without positions reverses about half the strings of 1-12 letters (card: 0.53)
ENCODER_DECODER_NOPE_BELOW = 0.2  # the card of reverse_nope (tests/test_demo_models.py measures it)


@pytest.fixture(scope="module")
def shipped():
    cache = {}

    def get(name):
        if name not in cache:
            folder = CHECKPOINTS / name
            if not folder.is_dir():
                pytest.skip(f"checkpoints/{name} is not there")
            model, tok = load_checkpoint(folder)
            card = load_card(folder)
            task = get_task("reverse")
            longest = card["recipe"]["max_length"]
            seen = {e.source for e in dataset(task, card["recipe"]["train_size"], card["seed"])}
            fresh = [e for e in held_out(task, 4 * EXAMPLES, card["seed"] + TEST_SEED_OFFSET, exclude=seen)
                     if len(e.source) <= longest][:EXAMPLES]  # fmt: skip
            cache[name] = (model, tok, card, fresh, d.exact_match(model, tok, fresh))
        return cache[name]

    return get


@pytest.mark.parametrize("name", sorted(NAMES))
def test_the_demo_is_a_decoder_only_model_and_its_card_measures_it(shipped, name):
    model, tok, card, fresh, score = shipped(name)
    assert model.config.shape == "decoder-only" and model.config.positional == NAMES[name]
    assert len(model.encoder.layers) == 0 and all(layer.cross_attn is None for layer in model.decoder.layers)
    assert card["shape"] == "decoder-only" and len(fresh) == EXAMPLES
    assert abs(card["held_out_exact_match"] - score) <= CARD_TOLERANCE, (card["held_out_exact_match"], score)
    curve = card["length_experiment"]
    assert curve["lengths"] == list(range(1, card["recipe"]["max_length"] + d.BEYOND + 1))
    assert len(curve["exact_match"]) == len(curve["lengths"]) and all(0 <= x <= 1 for x in curve["exact_match"])
    assert card["training_seconds"] <= 1800  # minutes on one shared core


def test_without_positions_the_causal_decoder_still_reverses(shipped):
    """The NoPE lesson with this project's numbers: the decoder-only model without positions reverses, the
    encoder-decoder without positions does not."""
    _, _, _, _, nope = shipped("reverse_decoder_nope")
    assert nope >= NOPE_AT_LEAST, nope
    encoder_decoder = load_card(CHECKPOINTS / "reverse_nope")["held_out_exact_match"]
    assert encoder_decoder < ENCODER_DECODER_NOPE_BELOW


def test_the_app_continues_the_prompt_as_the_evaluation_does(shipped):
    model, tok, card, fresh, _ = shipped("reverse_decoder_nope")
    for example in fresh[:5]:
        trace = greedy_decode(model, tok, d.prompt(example.source), max_new_tokens=len(example.target) + 1)
        right = trace.output_ids == tok.target.encode(example.target) + [tok.target.eos_id]
        assert right == (d.exact_match(model, tok, [example]) == 1.0)


def test_fresh_examples_and_the_attribution_agreement_read_the_prompt(shipped):
    """The app's fresh examples of a decoder-only demo are its prompts `source=` of its trained lengths, and the
    attribution agreement over them knows each output's gold source letter (the alignment of `source`)."""
    import numpy as np

    from model.analysis.attribution_agreement import agreement_over
    from tasks.gold import gold_alignment
    from tasks.intervened import fresh_examples

    model, tok, card, _fresh, _match = shipped("reverse_decoder_rope")
    examples = fresh_examples(card, 3)
    assert len(examples) == 3
    for e in examples:
        assert e.source.endswith(d.SEP) and 1 <= len(e.source) - 1 <= card["recipe"]["max_length"]
        assert e.target == e.source[:-1][::-1]
    assert set(gold_alignment(card, "stressed=", "desserts")) == {(7 - t, t) for t in range(8)}
    assert gold_alignment(card, "stressed", "desserts") is None  # not the demo's prompt
    table = agreement_over(model, tok, examples[:2], methods=("rollout", "occlusion"))
    gold = dict(zip(table.names, table.gold))
    assert table.examples == 2 and not np.isnan(gold["occlusion"]) and 0.0 <= gold["occlusion"] <= 1.0
