"""Issue 22: the work budget (model/analysis/budget.py). Its estimates bound what capture, decoding and beam search really
hold; the rooms it gives keep every page's work under the budget; texts are cut to a prefix of what was typed."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model import Vocab, beam_search, capture, greedy_decode
from model.analysis.budget import (
    BUDGET_CUT_LONG,
    WorkBudget,
    beam_refusal,
    capture_bytes,
    decode_bytes,
    importance_batch,
    page_bytes,
    steps_for,
)
from model.analysis.budget_input import apply_budget, fit_text
from model.text.inputs import check_text, count_limit
from pack.records import pack_records
from tests.conftest import letters_model
from tests.i18n_helpers import matching, msgid

NO_ROOM = msgid(
    "This model's attention ({heads} heads, {layers} layers) does not fit this server's work budget of {budget} even "
    "for one token."
)

LETTERS = "abcdefgh"


def nbytes(obj) -> int:
    """Every numpy array reachable from a record (dataclasses, lists, dicts, tuples)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(nbytes(o) for o in obj.values())
    if hasattr(obj, "__dataclass_fields__"):
        return sum(nbytes(getattr(obj, f)) for f in obj.__dataclass_fields__)
    return 0


@pytest.fixture(scope="module")
def many_heads():
    """The shape of the issue's hostile checkpoint, scaled down: many heads of width 1, a long max_len."""
    return letters_model(LETTERS, d_model=32, n_heads=32, d_ff=32, n_encoder_layers=1, n_decoder_layers=1,
                         dropout=0.0, max_len=4096)  # fmt: skip


@pytest.mark.parametrize("length", [1, 7, 40])
def test_the_estimates_bound_what_capture_and_decoding_record(many_heads, length):
    model, tok = many_heads
    text = (LETTERS * 10)[:length]
    cfg = model.config
    cap = capture(model, tok, text, qkv=True)
    S, T = len(cap.source_tokens), len(cap.target_tokens)
    assert nbytes(cap) <= capture_bytes(cfg, S, T, qkv=True)
    # the maps alone already take a quarter of the estimate: it is a bound, not a multiple of it
    assert nbytes(cap) >= capture_bytes(cfg, S, T, qkv=True) / 8
    trace = greedy_decode(model, tok, text)
    assert len(trace.steps) <= steps_for(cfg, S) and nbytes(trace) <= decode_bytes(cfg, S, len(trace.steps))
    beam = beam_search(model, tok, text, beam_size=3)
    assert nbytes(beam) <= decode_bytes(cfg, S, len(beam.steps), beams=3)
    assert page_bytes(cfg, S) >= max(capture_bytes(cfg, S, T, qkv=True), decode_bytes(cfg, S, len(trace.steps)))


def test_the_source_room_is_the_longest_input_whose_page_fits(many_heads):
    cfg = many_heads[0].config
    budget = WorkBudget(64 * 2**20)
    room = budget.source_room(cfg)
    assert 1 < room < cfg.max_len
    assert page_bytes(cfg, room) <= budget.max_bytes < page_bytes(cfg, room + 1)
    assert WorkBudget(2**40).source_room(cfg) == cfg.max_len  # a large budget: the model's own limit binds


def test_the_issues_input_is_cut_to_the_room_with_a_notice(many_heads):
    """A 16,000-character input to a model of 32 heads and a long max_len: cut before any work, never refused."""
    model, tok = many_heads
    budget = WorkBudget(64 * 2**20)
    check = check_text("abcdefgh" * 2000, tok.source, model.config.max_len - 1)
    apply_budget(check, tok.source, model.config, budget)
    room = budget.source_room(model.config) - 1
    assert not check.errors and len(check.text) == room and ("abcdefgh" * 2000).startswith(check.text)
    notice = check.warnings[-1]
    # 16,000 tokens are more than the budget's count reads (twice the room, and 1,024 more): it stopped there, and
    # says "more than"; a text is never counted past what the page may read
    assert len(check.warnings) == 1 and notice.template == BUDGET_CUT_LONG and not check.complete
    assert notice.values["n"] == count_limit(room) + 1 and notice.values["n"] < count_limit(model.config.max_len - 1)
    assert (notice.values["heads"], notice.values["layers"], notice.values["room"]) == (32, 2, room)
    assert re.search(matching(BUDGET_CUT_LONG, budget="64.0 MB"), str(notice))
    cap = capture(model, tok, check.text)
    assert page_bytes(model.config, len(cap.source_tokens)) <= budget.max_bytes


def test_a_target_is_cut_beside_its_source(many_heads):
    model, tok = many_heads
    budget = WorkBudget(64 * 2**20)
    check = check_text("ab" * 3000, tok.target, model.config.max_len - 1, what="target")
    apply_budget(check, tok.target, model.config, budget, "target", 20)
    assert "target has" in str(check.warnings[-1])
    assert page_bytes(model.config, 20, len(check.text) + 1) <= budget.max_bytes


def test_nothing_fits_is_an_error_naming_the_budget(many_heads):
    model, tok = many_heads
    check = check_text("abc", tok.source, model.config.max_len - 1)
    apply_budget(check, tok.source, model.config, WorkBudget(1000))
    assert re.search(matching(NO_ROOM, budget="1000 bytes"), str(check.errors[0]))


def test_a_beam_too_wide_for_the_budget_is_refused_with_what_fits(many_heads):
    cfg = many_heads[0].config
    budget = WorkBudget(64 * 2**20)
    S = 100
    refusal = beam_refusal(cfg, S, 64, budget)
    k = budget.beam_room(cfg, S, steps_for(cfg, S))
    assert 1 <= k < 64 and re.search(matching("a beam of {k} fits this input.", k=k), str(refusal))
    assert re.search(matching("A beam of {k} on this input", k=64), str(refusal))
    assert beam_refusal(cfg, S, k, budget) is None


def test_head_importance_batches_follow_the_budget(many_heads):
    cfg = many_heads[0].config
    assert importance_batch(cfg, 10, 10, WorkBudget(2**40), 64) == 64
    small = importance_batch(cfg, 400, 400, WorkBudget(64 * 2**20), 64)
    assert 0 < small < 64
    assert importance_batch(cfg, 4000, 4000, WorkBudget(2**20), 64) == 0


def test_the_lecture_pack_applies_the_same_budget(many_heads):
    model, tok = many_heads
    budget = WorkBudget(8 * 2**20)
    records = pack_records(model, tok, ["abcdefgh" * 100], budget=budget)
    from pack.export import weight_bytes
    from pack.records import pack_export_bytes

    export = pack_export_bytes(weight_bytes(model))  # the pack also exports the model: the input gets the rest
    room = WorkBudget(budget.max_bytes - export).source_room(model.config) - 1
    assert len(records.inputs[0].capture.source_tokens) == room + 1
    assert any("work budget" in str(w) for w in records.inputs[0].warnings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet="abch xyz", max_size=60), n=st.integers(1, 30))
def test_fit_text_keeps_a_prefix_within_n_tokens(text, n):
    for level in ("char", "word"):
        vocab = Vocab.build("abch" if level == "char" else ["ab", "c", "h", "abc"], level=level)
        kept = fit_text(vocab, text, n)
        assert text.startswith(kept) and len(vocab.encode(kept)) <= n
        if len(vocab.encode(text)) <= n:
            assert kept == text


@pytest.fixture
def step_cap():
    from model.decoding import set_step_cap

    yield set_step_cap
    set_step_cap(None)


def test_a_servers_step_cap_bounds_every_decoding(many_heads, step_cap):
    """A model that never writes </s> (max_len 4096) decodes at most the cap, in every strategy; the budget's
    estimates follow the same cap."""
    import torch

    model, tok = many_heads
    cfg = model.config
    with torch.no_grad():
        saved = model.generator.bias[cfg.eos_id].item()
        model.generator.bias[cfg.eos_id] = -1e4
    try:
        assert len(greedy_decode(model, tok, "abc" * 20).steps) == 61 + 50  # the paper's limit: source (</s> too) + 50
        step_cap(12)
        assert len(greedy_decode(model, tok, "abc" * 20).steps) == 12
        assert len(beam_search(model, tok, "abc" * 20, beam_size=2).steps) <= 12
        assert len(capture(model, tok, "abc" * 20).target_tokens) == 12 + 1  # <s> and the capped output
        assert steps_for(cfg, 61) == 12
    finally:
        with torch.no_grad():
            model.generator.bias[cfg.eos_id] = saved


def test_a_text_is_counted_only_as_far_as_the_page_may_read(many_heads):
    """check_text with the budget's room (count_to) reads a visitor's long text only to count_limit(count_to), not
    to the model's max_len: the prefix it kept says so, and the budget's cut is the same as with the full count."""
    model, tok = many_heads
    budget = WorkBudget(64 * 2**20)
    room = budget.source_room(model.config)
    text = "abcdefgh" * 2000
    short = check_text(text, tok.source, model.config.max_len - 1, count_to=room)
    full = check_text(text, tok.source, model.config.max_len - 1)
    assert not short.complete and len(short.text) == count_limit(room) + 1 < len(full.text)  # one token a letter
    for check in (short, full):
        apply_budget(check, tok.source, model.config, budget)
    assert short.text == full.text and short.warnings[-1].values == full.warnings[-1].values
