"""The trained demo checkpoints that ship in checkpoints/<name>: accuracy, attention, size, cards.

Each task ships checkpoints/<task>; the reverse task also ships five models that differ from it only in
their positional encoding (reverse_learned: a learned table; reverse_nope: none at all; reverse_rope,
reverse_alibi, reverse_relative: rotary positions, ALiBi, T5's relative bias, inside attention).

Fresh examples: each model trained on the fixed set `dataset(task, train_size, seed)` (numbers from
its card); the examples here are `held_out(task, 500, seed + TEST_SEED_OFFSET, exclude=its sources)`,
a seed used neither for training, nor for the card's report (seed + 1), nor for the progress bar
(seed + 2).
"""

import dataclasses
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from model import capture, greedy_decode, load_checkpoint
from model.checkpoints.checkpoint import load_card
from tasks.evaluate import cross_attention_argmax, evaluate, greedy_batch, source_ids
from tasks.pe_experiment import training_sources
from tasks.registry import TASKS, get_task
from tasks.tasks import held_out
from tasks.train import config_summary, make_config, parse_args, resolve
from tasks.training import build_tokenizer

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINTS = ROOT / "checkpoints"
TEST_SEED_OFFSET = 3
EXAMPLES = 500
POSITIONS = {  # --positional of the reverse variants
    "reverse_learned": "learned", "reverse_nope": "none", "reverse_rope": "rope", "reverse_alibi": "alibi",
    "reverse_relative": "relative",
}  # fmt: skip
ONE_STACK_TASKS = ("induction",)  # decoder-only tasks: tests/test_induction_demo.py
DEMOS = {name: name for name in TASKS if name not in ONE_STACK_TASKS} | {name: "reverse" for name in POSITIONS}
# the decoder-only demos: tests/test_decoder_demos.py (reverse), tests/test_induction_demo.py (induction)
DECODER_ONLY = ("reverse_decoder_nope", "reverse_decoder_rope", "induction")
EXACT_MATCH_TARGET = {
    "copy": 0.99, "reverse": 0.99, "dates": 0.98, "translate": 0.95, "fr_en": 0.98, "reverse_learned": 0.95,
    "reverse_rope": 0.95, "reverse_alibi": 0.95, "reverse_relative": 0.95,
}  # fmt: skip
EXACT_MATCH_BELOW = {"reverse_nope": 0.2}  # without positions the model cannot know where a letter was
ALIGNMENT_TARGET = {"reverse": 0.90, "translate": 0.80, "fr_en": 0.80, "reverse_learned": 0.90}
CARD_TOLERANCE = 0.02  # the card's numbers (other fresh examples) agree with ours within 2 points
SIZE_LIMIT = 32 * 1024 * 1024  # twelve models of <= 3 MB and the translate demo's training snapshots
SNAPSHOTS_LIMIT = 8_000_000  # a demo's snapshots/ folder (issue 15)
MODEL_SIZE_LIMIT = 3_000_000  # each shipped checkpoint folder
# wall time of one thread on the shared 2-core machine that trained them: reverse 456 s when idle, its two
# variants 1054 s (learned) under a load average of 7-9 from other work; the limit says "minutes, not hours"
TIME_LIMIT_S = 1200
REQUIRED_CARD_FIELDS = {
    "task", "description", "config", "command", "held_out_exact_match", "held_out_examples", "alignment",
    "training_seconds", "steps", "seed", "parameters", "trained_on", "examples",
}  # fmt: skip


@pytest.fixture(scope="module")
def shipped():
    """task -> (model, tokenizer, card, held-out examples, Evaluation), each measured once."""
    cache = {}

    def get(name):
        if name not in cache:
            folder = CHECKPOINTS / name
            model, tokenizer = load_checkpoint(folder)
            card = load_card(folder)
            task = get_task(DEMOS[name])
            train_sources = training_sources(task.name, card["recipe"]["train_size"], card["seed"])
            examples = held_out(task, EXAMPLES, card["seed"] + TEST_SEED_OFFSET, exclude=set(train_sources))
            assert not {e.source for e in examples} & train_sources
            cache[name] = (model, tokenizer, card, examples, evaluate(model, tokenizer, examples))
        return cache[name]

    return get


def test_every_task_ships_a_checkpoint_and_every_checkpoint_is_a_demo():
    # the decoder-only reverse demos (tasks/decoder_only.py) are tested in tests/test_decoder_demos.py
    assert sorted(p.name for p in CHECKPOINTS.iterdir() if p.is_dir()) == sorted([*DEMOS, *DECODER_ONLY])
    assert set(TASKS) - set(ONE_STACK_TASKS) <= set(DEMOS) and set(DEMOS.values()) == set(TASKS) - set(ONE_STACK_TASKS)
    for name in DEMOS:
        names = {p.name for p in (CHECKPOINTS / name).iterdir()}
        assert {"model.safetensors", "config.json", "tokenizer.json", "card.json"} <= names
        assert load_card(CHECKPOINTS / name)["task"] == DEMOS[name]


def test_checkpoints_fit_the_size_budget():
    total = sum(f.stat().st_size for f in CHECKPOINTS.rglob("*") if f.is_file())
    assert total <= SIZE_LIMIT, f"checkpoints/ holds {total / 1e6:.1f} MB"
    for name in [*DEMOS, *DECODER_ONLY]:
        size = sum(f.stat().st_size for f in (CHECKPOINTS / name).iterdir() if f.is_file())
        assert size <= MODEL_SIZE_LIMIT, f"checkpoints/{name} holds {size / 1e6:.2f} MB"
        snapshots = sum(f.stat().st_size for f in (CHECKPOINTS / name / "snapshots").rglob("*") if f.is_file())
        assert snapshots <= SNAPSHOTS_LIMIT, f"checkpoints/{name}/snapshots holds {snapshots / 1e6:.2f} MB"


@pytest.mark.parametrize("name", sorted(EXACT_MATCH_TARGET))
def test_exact_match_on_fresh_held_out_examples(shipped, name):
    model, tokenizer, card, examples, scores = shipped(name)
    assert len(examples) == EXAMPLES
    assert scores.exact_match >= EXACT_MATCH_TARGET[name], f"{name}: {scores.exact_match:.1%}"
    assert abs(card["held_out_exact_match"] - scores.exact_match) <= CARD_TOLERANCE


@pytest.mark.parametrize("name", sorted(EXACT_MATCH_BELOW))
def test_without_positions_reversing_fails(shipped, name):
    model, tokenizer, card, examples, scores = shipped(name)
    assert model.config.positional == "none"
    assert scores.exact_match < EXACT_MATCH_BELOW[name], f"{name}: {scores.exact_match:.1%}"
    assert abs(card["held_out_exact_match"] - scores.exact_match) <= CARD_TOLERANCE


def test_the_six_reverse_models_differ_only_in_positions(shipped):
    cards = {name: load_card(CHECKPOINTS / name) for name in ("reverse", *POSITIONS)}
    configs = {name: load_checkpoint(CHECKPOINTS / name)[0].config for name in cards}
    assert {name: c.positional for name, c in configs.items()} == {"reverse": "sinusoidal"} | POSITIONS
    assert len({repr(dataclasses.replace(c, positional="sinusoidal")) for c in configs.values()}) == 1
    recipes = [{k: v for k, v in c["recipe"].items() if k != "final_loss"} for c in cards.values()]
    assert all(r == recipes[0] for r in recipes)
    assert len({(c["steps"], c["seed"]) for c in cards.values()}) == 1
    table = 2 * configs["reverse"].max_len * configs["reverse"].d_model  # a learned table on each side
    assert cards["reverse_learned"]["parameters"] - table == cards["reverse"]["parameters"]
    assert cards["reverse_nope"]["parameters"] == cards["reverse"]["parameters"]
    assert cards["reverse_rope"]["parameters"] == cards["reverse_alibi"]["parameters"] == cards["reverse"]["parameters"]
    relative = configs["reverse_relative"]  # one (buckets, heads) table per stack
    assert cards["reverse_relative"]["parameters"] - cards["reverse"]["parameters"] == 2 * 32 * relative.n_heads


@pytest.mark.parametrize("name", sorted(ALIGNMENT_TARGET))
def test_cross_attention_follows_the_gold_alignment(shipped, name):
    model, tokenizer, card, examples, scores = shipped(name)
    assert len(scores.alignment) == model.config.n_decoder_layers
    assert scores.counted > 2000  # most output tokens of 500 examples were counted
    assert max(scores.alignment) >= ALIGNMENT_TARGET[name], f"{name}: per layer {scores.alignment}"
    assert card["alignment"]["per_layer"] == pytest.approx(scores.alignment, abs=CARD_TOLERANCE)
    assert card["alignment"]["best"] == pytest.approx(max(scores.alignment), abs=CARD_TOLERANCE)


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_card_is_complete_and_describes_the_model(shipped, name):
    model, tokenizer, card, examples, scores = shipped(name)
    task = DEMOS[name]
    assert REQUIRED_CARD_FIELDS <= set(card)
    assert card["task"] == task and card["description"] == get_task(task).description
    assert card["examples"] == get_task(task).examples()
    assert card["held_out_examples"] == EXAMPLES
    assert card["config"] == config_summary(model.config)
    assert card["parameters"] == sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    assert not card["stopped_early"]
    assert 0 < card["training_seconds"] <= TIME_LIMIT_S
    # the card's command is the plain one (the variants add their positions; a --threads count changes nothing of the
    # recipe), and it builds exactly this model
    flag = f" --positional {POSITIONS[name]}" if name in POSITIONS else ""
    command = re.sub(r" --threads \d+$", "", card["command"])
    assert command == f"python -m model.train --task {task} --out checkpoints/{name}{flag}"
    recipe, overrides = resolve(parse_args(shlex.split(card["command"])[3:]))
    assert recipe["steps"] == card["steps"] and recipe["seed"] == card["seed"]
    assert recipe["train_size"] == card["recipe"]["train_size"]
    assert recipe["label_smoothing"] == card["recipe"]["label_smoothing"] == 0.1
    assert build_tokenizer(get_task(task)).to_dict() == tokenizer.to_dict()
    assert make_config(recipe["preset"], overrides, tokenizer) == model.config


@pytest.mark.parametrize("name", ["reverse", "translate"])
def test_batched_evaluation_agrees_with_the_app_tools_on_shipped_models(shipped, name):
    model, tokenizer, card, examples, scores = shipped(name)
    some = examples[:6]
    src = source_ids(model, tokenizer, [e.source for e in some])
    outputs = greedy_batch(model, src)
    assert outputs == scores.outputs[:6]
    best = cross_attention_argmax(model, src, outputs)
    for ex, out, b in zip(some, outputs, best):
        assert greedy_decode(model, tokenizer, ex.source).output_ids == out
        np.testing.assert_array_equal(b.numpy(), capture(model, tokenizer, ex.source).cross.mean(1).argmax(-1))


def test_reverse_attends_to_the_mirrored_position_in_the_app_view(shipped):
    """What a user sees: on an example input, some decoder layer's averaged cross-attention is the anti-diagonal."""
    model, tokenizer, *_ = shipped("reverse")
    cap = capture(model, tokenizer, "stressed")
    n = len("stressed")
    assert "".join(cap.target_tokens[1:]) == "desserts"
    best = cap.cross.mean(1).argmax(-1)  # (L, T): T = n + 1 rows, the last one produces </s>
    assert any(list(row[:n]) == [n - 1 - j for j in range(n)] for row in best)


def test_the_worked_example_decodes_word_by_word(shipped):
    """The material's example of greedy decoding, verbatim: "je suis étudiant" -> "i am a student"."""
    model, tokenizer, card, *_ = shipped("fr_en")
    assert card["examples"][0] == "je suis étudiant"
    trace = greedy_decode(model, tokenizer, "je suis étudiant")
    gold = get_task("fr_en").example_for("je suis étudiant").target  # the task's own translation
    assert trace.text == gold and trace.output_tokens == [*gold.split(), "</s>"]
    assert greedy_decode(model, tokenizer, "Je suis e\u0301tudiant").output_ids == trace.output_ids
    for source in card["examples"]:
        assert greedy_decode(model, tokenizer, source).text == get_task("fr_en").example_for(source).target
