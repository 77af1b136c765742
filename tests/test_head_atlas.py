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
from model.analysis.head_switch_off import ablated_losses, switch_off
from model.network.transformer import build_model
from tests.conftest import DECODER_ONLY, letters_model

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


@pytest.mark.skipif(not INDUCTION.is_dir(), reason="the induction demo is not shipped in this checkout")
def test_the_induction_demo_top_induction_head_is_the_best_scoring_one_and_carries_the_copy():
    model, tok = load_checkpoint(INDUCTION)
    atlas = ha.head_atlas(model, tok, roles=("induction", "previous_token"), seed=5)
    test = atlas.effects["induction"]
    best = np.unravel_index(int(np.argmax(atlas.scores("induction"))), atlas.shape)
    assert test.heads == [tuple(int(x) for x in best)]
    assert test.accuracy - test.accuracy_off >= 0.3  # the repeated half's accuracy falls with it
    assert atlas.strongest()[best] == atlas.roles.index("induction")
