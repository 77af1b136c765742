"""Issue 22 through the pages: a checkpoint of many heads and a long max_len with a long pasted input is cut to the
work budget with a notice (never an allocation error); a link's text is bounded in characters; a beam too wide for
the budget is refused with what would fit; the box keeps what was typed."""

from __future__ import annotations

import threading

import pytest

from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint
from model.analysis.budget import MAX_TEXT_CHARS, WorkBudget
from tests.apptest_helpers import charts, messages, open_page, shown


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
    room = WorkBudget(64 * 2**20).source_room(cfg) - 1
    shown = messages(at)
    assert "The input has 16000 tokens, but this model's attention (32 heads, 2 layers" in shown
    assert f"work budget of 64.0 MB for at most {room}" in shown
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


def test_a_heavy_run_yields_the_cpu_and_a_demo_run_does_not(wide, monkeypatch):
    """The sidebar asks model.analysis.cpu_share before any work: a run whose work bound is above 1/8 of the budget
    lowers its own thread (the room's light sessions go first), a demo run stays at the process's priority."""
    from model.analysis import cpu_share
    from ui import sidebar

    seen = []

    def record(work_bytes, budget_bytes):
        heavy = cpu_share.share_cpu(work_bytes, budget_bytes)
        seen.append((heavy, cpu_share.thread_nice()))
        return heavy

    monkeypatch.setattr(sidebar, "share_cpu", record)
    folder, _ = wide
    base = cpu_share.thread_nice()
    at = open_page("attention", model=f"path:{folder}", text="abcdefgh" * 2000)
    assert not at.exception, at.exception
    assert seen and seen[-1] == (True, max(cpu_share.HEAVY_NICE, base))
    at = open_page("attention", model="demo:reverse", text="stressed")
    assert not at.exception, at.exception
    assert seen[-1][0] is False


def test_every_run_ends_its_count_even_one_that_stops_early(wide, monkeypatch):
    """ui/run_app.py ends the run's count of light runs in progress (cpu_share.run_over) on the run's own thread,
    after the sidebar counted it: for a drawn page, and for runs that stop early (a beam refused by the budget, an
    input with no symbol the model knows), so no heavy run waits for a run that is over."""
    from model.analysis import cpu_share
    from ui import run_app

    events = []
    began = cpu_share.begin_run
    monkeypatch.setattr(
        cpu_share, "begin_run", lambda heavy: (events.append(("begin", threading.get_ident())), began(heavy))
    )

    def over():
        events.append(("over", threading.get_ident(), cpu_share.light_runs()))
        cpu_share.run_over()

    monkeypatch.setattr(run_app, "run_over", over)
    folder, _ = wide
    monkeypatch.setenv("VIZ_WORK_MB", "16")
    for page, params, refused in (
        ("attention", {"model": "demo:reverse", "text": "stressed"}, False),
        (
            "decoding",
            {"model": f"path:{folder}", "text": "abcdefgh" * 6, "dec_strategy": "beam", "dec_beam": "8"},
            True,
        ),
        ("attention", {"model": f"path:{folder}", "text": "xyz"}, True),  # none of the model's symbols
    ):
        events.clear()
        at = open_page(page, **params)
        assert bool(at.error) == refused
        begins = [e for e in events if e[0] == "begin"]
        assert begins and events[-1][0] == "over" and events[-1][1] == begins[-1][1]  # on the run's thread, last
