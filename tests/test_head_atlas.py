"""The head atlas: shards merged into the scores of head_scores, and the switch-off test that labels a role "pattern
only" when its top heads matter no more than random ones (a head whose output is exactly zero), and not when they do
(the induction demo's induction head)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from model import head_scores, load_checkpoint
from model.analysis import head_atlas as ha
from model.analysis.head_scores import ROLES, random_sequences
from model.analysis.head_switch_off import ablated_losses, random_heads, switch_off, switch_off_roles, top_heads
from model.network.transformer import build_model
from tests.conftest import DECODER_ONLY, letters_model
from ui.serving.fork_map import fork_map

INDUCTION = Path(__file__).resolve().parents[1] / "checkpoints" / "induction"


@pytest.fixture(scope="module")
def tiny():
    return letters_model(list("abcdefghijklmnop"), seed=3, **DECODER_ONLY)


def test_shards_merge_into_head_scores_whatever_their_size(tiny):
    model, tok = tiny
    texts = ["abcabcabc", "hello", "ponmlk", "aaaa", "dcba"]
    whole = ha.merge([ha.run_shard(model, tok, j) for j in ha.plan(model, tok, texts, shard=16)], "decoder_self", ROLES)
    pieces = [ha.run_shard(model, tok, j) for j in ha.plan(model, tok, texts, shard=2)]
    split = ha.merge(pieces[::-1], "decoder_self", ROLES)  # any order of arrival
    for role in ROLES:
        np.testing.assert_allclose(whole.scores(role), split.scores(role), atol=1e-12)
        items = texts if role in ("previous_token", "first_token") else None
        np.testing.assert_allclose(whole.scores(role), head_scores(model, tok, role, texts=items), atol=1e-12)
    assert whole.labels["corpus"][0] == list("abcabcabc")
    assert whole.typical.shape == (2, 2, ha.MAP_SIZE, ha.MAP_SIZE)
    # the typical map of a causal head: each row's mean over the texts that reach it sums to 1 (rows 0-3: all texts)
    np.testing.assert_allclose(whole.typical[:, :, :4, :4].sum(-1), 1.0, atol=1e-6)


def test_a_head_that_does_nothing_is_pattern_only(tiny):
    model, tok = tiny
    silent = build_model(model.config, seed=3).eval()
    silent.load_state_dict(model.state_dict())
    with torch.no_grad():  # head 0 of layer 1 writes nothing: its slice of W^O is zero
        out = silent.decoder.layers[1].self_attn.out_proj
        out.weight[:, : silent.config.d_head] = 0
    scores = np.zeros((2, 2))
    scores[1, 0] = 1.0
    items = random_sequences(silent, tok, n=6, seed=1)
    test = switch_off(silent, tok, "previous_token", scores, items, "decoder_self", k=1, draws=6)
    assert test.heads == [(1, 0)]
    assert abs(test.effect) < 1e-9 and test.pattern_only
    assert max(test.random_effects) > 1e-6  # the other heads do change the loss
    loss, _ = ablated_losses(silent, tok, items, "decoder_self", [[], [(0, 0), (0, 1), (1, 1)]], repeated=False)
    assert abs(loss[1] - loss[0]) > 1e-4  # switched off in every row of the batch: the loss moves


def test_a_head_that_alone_writes_is_more_than_a_pattern(tiny):
    model, tok = tiny
    lone = build_model(model.config, seed=3).eval()
    lone.load_state_dict(model.state_dict())
    d = lone.config.d_head
    with torch.no_grad():  # every head but head 1 of layer 0 writes nothing
        lone.decoder.layers[0].self_attn.out_proj.weight[:, :d] = 0
        lone.decoder.layers[1].self_attn.out_proj.weight[:] = 0
    scores = np.zeros((2, 2))
    scores[0, 1] = 1.0
    items = random_sequences(lone, tok, n=6, seed=1)
    test = switch_off(lone, tok, "previous_token", scores, items, "decoder_self", k=1, draws=6)
    assert test.heads == [(0, 1)] and max(abs(e) for e in test.random_effects) < 1e-9
    assert abs(test.effect) > 1e-4 and not test.pattern_only
    assert test.head_effects == [test.effect]


def test_roles_tested_in_one_pass_get_what_each_gets_alone(tiny):
    """switch_off_roles puts several roles' rows in one pass (the unchanged row shared): each role's numbers are
    those of its own test."""
    model, tok = tiny
    items = random_sequences(model, tok, n=4, seed=2)
    scores = {"induction": np.array([[0.1, 0.2], [0.9, 0.0]]), "duplicate_token": np.array([[0.0, 0.8], [0.1, 0.2]])}
    together = switch_off_roles(model, tok, scores, items, "decoder_self", True, k=1, draws=2, avoid=[(0, 1), (1, 0)])
    for role, values in scores.items():
        alone = switch_off(model, tok, role, values, items, "decoder_self", k=1, draws=2, avoid=[(0, 1), (1, 0)])
        assert together[role].heads == alone.heads
        np.testing.assert_allclose(together[role].to_json()["random_losses"], alone.random_losses, atol=1e-9)
        np.testing.assert_allclose(
            [together[role].loss, together[role].loss_off], [alone.loss, alone.loss_off], atol=1e-9
        )


def test_the_atlas_on_forked_helpers_is_the_atlas_here_and_its_tests_those_of_one_pass_per_group(tiny):
    """Shards and switch-off inputs run by two forked helpers (the page's runner) give the atlas computed here, and
    its switch-off tests (one unit per input, summed) are switch_off_roles' on the same inputs."""
    model, tok = tiny
    texts = ["abcabcabc", "hello", "ponmlk", "aaaa", "dcba", "mnop"]
    here = ha.head_atlas(model, tok, texts)
    forked = ha.head_atlas(model, tok, texts, runner=lambda fn, units: fork_map(fn, units, processes=2))
    assert forked.to_json() == here.to_json()
    L, H = here.shape
    k = max(1, L * H // 16)
    avoid = sorted({h for role in here.roles for h in top_heads(here.scores(role), k)})
    jobs = ha.plan(model, tok, texts)
    for group, repeated in (("corpus", False), ("repeated", True)):
        roles = [r for r in here.roles if here.group_of(r) == group]
        items = ha.effect_items(ha.items_of(jobs, group), here.labels[group])
        scores = {r: here.scores(r) for r in roles}
        tests = switch_off_roles(model, tok, scores, items, "decoder_self", repeated, k, ha.DRAWS, 0, avoid=avoid)
        for role in roles:
            np.testing.assert_allclose(
                [here.effects[role].loss, here.effects[role].loss_off, *here.effects[role].random_losses],
                [tests[role].loss, tests[role].loss_off, *tests[role].random_losses],
                atol=1e-12,
            )


def test_random_heads_keep_away_from_every_roles_top_heads_and_do_not_repeat():
    drawn = random_heads(4, 4, 2, 5, seed=1, exclude=[(0, 0), (0, 1)], avoid=[(1, 1), (2, 2)])
    assert len(drawn) == 5 and len({tuple(d) for d in drawn}) == 5
    assert all(len(set(d)) == 2 and not set(d) & {(0, 0), (0, 1), (1, 1), (2, 2)} for d in drawn)
    # a pool with fewer sets than draws: each of its sets once (here the one head no role labels)
    assert random_heads(2, 2, 1, 5, seed=0, exclude=[(1, 0)], avoid=[(0, 0), (0, 1)]) == [[(1, 1)]]
    # too few unlabelled heads: the heads other than the role's own top ones
    assert random_heads(2, 2, 1, 5, seed=0, exclude=[(1, 0)], avoid=[(0, 0), (0, 1), (1, 1)]) == [
        [(0, 0)],
        [(0, 1)],
        [(1, 1)],
    ]


@pytest.mark.skipif(not INDUCTION.is_dir(), reason="the induction demo is not shipped in this checkout")
def test_the_induction_demo_top_induction_head_is_the_best_scoring_one_and_carries_the_copy():
    """The atlas the page computes (every role, seed 0): the induction head matters, against random heads that
    leave the previous-token head it reads alone (drawn with it, a random head matters about as much)."""
    model, tok = load_checkpoint(INDUCTION)
    atlas = ha.head_atlas(model, tok, seed=0)
    test = atlas.effects["induction"]
    best = np.unravel_index(int(np.argmax(atlas.scores("induction"))), atlas.shape)
    assert test.heads == [tuple(int(x) for x in best)]
    assert test.accuracy - test.accuracy_off >= 0.3  # the repeated half's accuracy falls with it
    assert atlas.strongest()[best] == atlas.roles.index("induction")
    reader = atlas.effects["previous_token"].heads[0]
    assert reader[0] == 0 and test.random_losses and not test.pattern_only
    items = ha.effect_items(ha.items_of(ha.plan(model, tok, None), "repeated"), atlas.labels["repeated"])
    with_reader = switch_off(model, tok, "induction", atlas.scores("induction"), items, "decoder_self", k=1, draws=5)
    assert any(reader in d for d in random_heads(2, 2, 1, 5, 0, exclude=test.heads))
    assert max(with_reader.random_effects) >= 0.5 * with_reader.effect  # the reader is half of the circuit
