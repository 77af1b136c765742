"""Issue 22 through the pages: a checkpoint of many heads and a long max_len with a long pasted input is cut to the
work budget with a notice (never an allocation error); a link's text is bounded in characters; a beam too wide for
the budget is refused with what would fit; the box keeps what was typed."""

from __future__ import annotations

import re

import pytest

from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint
from model.analysis.budget import BUDGET_CUT_LONG, MAX_TEXT_CHARS, WorkBudget, attention_page_bytes
from model.text.inputs import count_limit
from tests.apptest_helpers import charts, messages, open_page, shown
from tests.i18n_helpers import matching


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """The issue's hostile shape (32 heads of width 1, max_len 16384: a few hundred KB of weights), scaled to 1+1 layers."""
    vocab = Vocab.build("abcdefgh", level="char")
    cfg = TransformerConfig(
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), d_model=32, n_heads=32, d_ff=32,
        n_encoder_layers=1, n_decoder_layers=1, dropout=0.0, max_len=16384,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("wide") / "wide"
    save_checkpoint(build_model(cfg, seed=0), Tokenizer(vocab, vocab), folder, card={"examples": ["abc"]})
    return folder, cfg


def test_a_long_paste_into_a_many_headed_model_is_cut_to_the_budget(wide, monkeypatch):
    folder, cfg = wide
    monkeypatch.setenv("VIZ_WORK_MB", "64")
    text = "abcdefgh" * 2000  # 16,000 characters: 32 GB of attention before (issue 22)
    at = open_page("attention", model=f"path:{folder}", text=text)
    assert not at.exception, at.exception
    assert at.sidebar.text_area(key="text").value == text  # what was typed stays in the box
    room = WorkBudget(64 * 2**20).source_room(cfg, attention_page_bytes) - 1  # the Attention page's own cost
    shown = messages(at)
    # counted only as far as the page may read (twice the room, and 1,024 more): "more than" that many, not 16,000
    limit = count_limit(room)
    cut = matching(BUDGET_CUT_LONG, n=limit + 1, heads=32, layers=2, budget="64.0 MB", room=room)
    assert re.search(cut, shown), shown
    heatmap = next(c for c in charts(at) if c["data"] and c["data"][0].get("type") == "heatmap")
    z = heatmap["data"][0]["z"]
    columns = int(str(z["shape"]).split(",")[-1]) if isinstance(z, dict) else len(z[0])
    assert columns == room + 1  # the source it read: room tokens and </s>


def test_a_link_carries_at_most_the_characters_the_box_takes(monkeypatch):
    long = "stressed" * 4000  # 32,000 characters
    at = open_page("attention", model="demo:reverse", text=long)
    assert not at.exception, at.exception
    assert at.sidebar.text_area(key="text").value == long[:MAX_TEXT_CHARS]
    assert f"The link's input has {len(long)} characters; this app reads at most {MAX_TEXT_CHARS}" in messages(at)


def test_a_beam_too_wide_for_the_budget_is_refused_with_what_fits(wide, monkeypatch):
    folder, _ = wide
    monkeypatch.setenv("VIZ_WORK_MB", "16")
    at = open_page("decoding", model=f"path:{folder}", text="abcdefgh" * 6, dec_strategy="beam", dec_beam="8")
    assert not at.exception, at.exception
    errors = " ".join(shown(e.value) for e in at.error)
    assert "A beam of 8 on this input would need about" in errors and "work budget of 16.0 MB" in errors
    assert "fits this input" in errors or "a shorter input is needed" in errors


def test_a_link_with_settings_over_the_budget_is_refused_before_any_work(monkeypatch):
    """attr_steps=128 with integrated gradients from a link, on a server whose operations budget pays for 16 points
    a piece: the page says what fits (a value of its own menu), and no method ran (nothing computed, no worker)."""
    from i18n import message_of
    from model import load_checkpoint
    from model.analysis import attribution as attr
    from model.analysis.attribution_methods import integrated_gradients as ig
    from model.analysis.attribution_methods import occlusion as occ
    from model.analysis.budget import OVER_OPS, BudgetExceeded
    from model.analysis.budget import WorkBudget as Budget
    from tests.apptest_helpers import ROOT
    from ui.serving import caches, workers
    from ui.shell.safe_text import md

    model, tok = load_checkpoint(str(ROOT / "checkpoints" / "reverse"))
    cfg, text = model.config, "abcdefghijklmnopqrst"
    S, T = len(text) + 1, len(caches.own_output("demo:reverse", text, model, tok)) + 1
    occlusion = occ.need(cfg, S, T)[1]  # occlusion (always shown, the reference) is counted first
    gops = -(-(occlusion + T * ig.piece_ops(cfg, S, T, 16)) // 10**9)  # then 16 points a piece fit, 32 do not
    assert occlusion + T * ig.piece_ops(cfg, S, T, 32) > gops * 10**9
    monkeypatch.setenv("VIZ_WORK_GOPS", str(gops))
    started = []
    monkeypatch.setattr(workers, "run_limited", lambda *a, **k: started.append(a))
    caches.ATTRIBUTIONS.clear()
    methods = "integrated_gradients,occlusion"
    at = open_page("attribution", "demo:reverse", text=text, attr_methods=methods, attr_steps="128")
    assert not at.exception, at.exception
    with pytest.raises(BudgetExceeded) as err:  # what the page was told, computed here from the same counts
        attr.plans(cfg, S, T, ["integrated_gradients", "occlusion"], {"steps": 128}, Budget(256 * 2**20, gops * 10**9))
    message = err.value.args[0]
    assert message.template == OVER_OPS and message.values["fits"].values["k"] == 16
    assert any(shown(md(message_of(err.value))) in shown(e.value) for e in at.error)
    assert not started and not caches.ATTRIBUTIONS._values  # nothing ran
