"""Issue 34 item 2, one row convention everywhere: a decoder row is the output token it writes, labelled with it, its
hover naming the decoder input that wrote it ("<s> → a"); encoder rows stay source tokens, and their axis says an
encoder writes nothing. Checked against an independent reference: the tokens greedy decoding writes step by step
(its own key/value cache), or the argmax of the model's own last distribution, and the pages the app draws."""

from __future__ import annotations

import html
import io
import json
import re

import numpy as np
import pytest

from i18n import _
from model import capture, greedy_decode, load_checkpoint
from model.analysis.export import capture_json, capture_npz, trace_json
from model.checkpoints.demos import list_demos
from tests.apptest_helpers import charts, open_page
from viz import attention_figs
from viz.bertviz_view import head_view_html
from viz.tokens import ROW_TITLES, capture_rows

TEXT = "abcd"


def _demo(name: str):
    demo = next((d for d in list_demos() if d.name == name), None)
    if demo is None:
        pytest.skip(f"checkpoints/{name} is not there")
    return demo


@pytest.fixture(scope="module")
def reverse():
    model, tok = load_checkpoint(_demo("reverse").path)
    return model, tok, greedy_decode(model, tok, TEXT)


def _hover(token: str) -> str:  # a token as hover text shows it: escaped, a space named
    return _("space") if token == " " else html.escape(token, quote=False)


def expected_labels(written: list[str], first: str = "<s>") -> list[str]:
    """The rows' categories from the tokens written: 'j: input → written', input j the token written before."""
    inputs = [first, *written[:-1]]
    return [f"{j}: {_hover(i)} → {_hover(w)}" for j, (i, w) in enumerate(zip(inputs, written))]


def test_a_row_writes_what_greedy_decoding_writes_and_the_last_row_the_models_next_token(reverse):
    model, tok, trace = reverse
    cap = capture(model, tok, TEXT)  # the decoder input is the model's own output
    assert cap.written_tokens == trace.output_tokens and trace.output_tokens[-1] == "</s>"
    forced = capture(model, tok, TEXT, target="db")  # a typed target: shifted by one, then the model's own choice
    assert forced.written_tokens[:-1] == ["d", "b"] == forced.target_tokens[1:]
    assert forced.written_tokens[-1] == tok.target.decode([int(np.argmax(forced.log_probs[-1]))])[0]


def test_a_decoder_only_models_row_t_writes_the_token_at_t_plus_1_and_the_last_the_next_one():
    model, tok = load_checkpoint(_demo("reverse_decoder_rope").path)
    cap = capture(model, tok, "abc")
    T = len(cap.target_tokens)
    assert cap.written_tokens[: T - 1] == cap.target_tokens[1:]
    assert cap.written_tokens[-1] == tok.target.decode([int(np.argmax(cap.log_probs[-1]))])[0]
    fig = attention_figs.attention_heatmap(cap.decoder_self[0, 0], capture_rows(cap, "decoder_self"), cap.target_tokens)
    assert list(fig.data[0].y)[1] == f"1: {_hover(cap.target_tokens[1])} → {_hover(cap.target_tokens[2])}"


def test_figures_label_rows_with_the_token_written_and_encoder_rows_say_nothing_is_written(reverse):
    model, tok, trace = reverse
    cap = capture(model, tok, TEXT)
    fig = attention_figs.attention_heatmap(cap.cross[-1, 0], capture_rows(cap, "cross"), cap.source_tokens)
    assert list(fig.data[0].y) == expected_labels(trace.output_tokens)
    assert list(fig.layout.yaxis.ticktext) == [html.escape(t, quote=False) for t in trace.output_tokens]
    assert fig.layout.yaxis.title.text == _(ROW_TITLES["written"])
    grid = attention_figs.head_grid(cap.decoder_self[-1], capture_rows(cap, "decoder_self"), cap.target_tokens)
    assert list(grid.data[0].y) == expected_labels(trace.output_tokens)  # keys stay the decoder inputs
    assert list(grid.data[0].x) == [f"{j}: {_hover(t)}" for j, t in enumerate(cap.target_tokens)]
    enc = attention_figs.attention_heatmap(cap.encoder_self[0, 0], capture_rows(cap, "encoder_self"), cap.source_tokens)
    assert list(enc.data[0].y) == [f"{j}: {_hover(t)}" for j, t in enumerate(cap.source_tokens)]
    assert enc.layout.yaxis.title.text == _(ROW_TITLES["source"])


def test_bertviz_and_the_downloads_follow_the_convention(reverse):
    model, tok, trace = reverse
    cap = capture(model, tok, TEXT)
    page = head_view_html(cap.encoder_self, cap.decoder_self, cap.cross, cap.source_tokens, cap.target_tokens,
                          written=cap.written_tokens)  # fmt: skip
    entries = {}
    for found in re.finditer(r'"name":"(\w+)","attn":\[.*?"left_text":(\[.*?\]),"right_text":(\[.*?\])', page):
        entries[found[1]] = (json.loads(found[2]), json.loads(found[3]))
    assert entries["Decoder"] == (trace.output_tokens, cap.target_tokens)  # rows written, keys the inputs
    assert entries["Cross"] == (trace.output_tokens, cap.source_tokens)
    assert entries["Encoder"] == (cap.source_tokens, cap.source_tokens)
    data = json.loads(capture_json(cap))
    assert data["written_tokens"] == trace.output_tokens and data["target_tokens"] == cap.target_tokens
    assert np.load(io.BytesIO(capture_npz(cap)))["written_tokens"].tolist() == trace.output_tokens
    steps = json.loads(trace_json(trace))["steps"]
    assert [s["input"] for s in steps] == ["<s>", *trace.output_tokens[:-1]]
    assert [s["token"] for s in steps] == trace.output_tokens


def _rows(chart: dict) -> list[str]:
    return list(chart["data"][0]["y"])


def test_every_page_labels_a_row_with_the_token_it_writes(reverse):
    """Attention, Compare, Decoding and Attribution for the reverse demo: the same rows (decoder self-attention's:
    the figure test above)."""
    _model, _tok, trace = reverse
    want = expected_labels(trace.output_tokens)
    model = "demo:reverse"
    at = open_page("attention", model, text=TEXT, att_kind="cross", att_view="one")
    assert _rows(charts(at)[0]) == want
    assert charts(at)[0]["layout"]["yaxis"]["title"]["text"] == _(ROW_TITLES["written"])
    at = open_page("compare", model, text=TEXT, cmp_kind="cross")
    assert _rows(charts(at)[0]) == want
    at = open_page("decoding", model, text=TEXT)
    assert any(_rows(c) == want for c in charts(at) if c["data"][0].get("type") == "heatmap")  # the alignment
    at = open_page("attribution", model, text=TEXT, attr_matrix="cross")
    matrix = next(c for c in charts(at) if c["data"][0].get("type") == "heatmap")
    assert [row[0][0] for row in matrix["data"][0]["customdata"]] == want
    assert matrix["layout"]["yaxis"]["ticktext"] == [html.escape(t, quote=False) for t in trace.output_tokens]


def test_the_training_page_labels_a_row_with_the_token_it_writes():
    demo = next((d for d in list_demos() if (d.path / "snapshots").is_dir()), None)
    if demo is None:
        pytest.skip("no shipped demo has snapshots here")
    at = open_page("training", f"demo:{demo.name}", text=demo.examples[0])
    rows = _rows(charts(at)[0])
    pairs = [r.split(": ", 1)[1].split(" → ") for r in rows]
    assert pairs[0][0] == "&lt;s&gt;" and all(len(p) == 2 for p in pairs)
    assert [w for _i, w in pairs[:-1]] == [i for i, _w in pairs[1:]]  # row j writes the input of row j + 1
    assert charts(at)[0]["layout"]["yaxis"]["title"]["text"] == _(ROW_TITLES["written"])


def test_an_attribution_row_names_the_token_read_where_it_is_written(reverse):
    """Attribution's rows: output token t is written at the position that reads row_inputs[t]: the decoder input
    before it (greedy decoding's own steps) for an encoder-decoder, the prompt's last token then the continuation
    for a decoder-only model (its prompt and greedy continuation recomputed here from greedy_decode)."""
    from model import attribute

    model, tok, trace = reverse
    att = attribute(model, tok, TEXT, method="rollout")
    written = [*trace.output_tokens]
    assert att.output_tokens == written
    assert att.row_inputs == ["<s>", *written[:-1]]  # step t reads what step t-1 wrote
    model, tok = load_checkpoint(_demo("reverse_decoder_rope").path)
    prompt = "abc="
    trace = greedy_decode(model, tok, prompt)
    att = attribute(model, tok, prompt, method="rollout")
    read = tok.target.decode(tok.target.encode(prompt))
    assert att.row_inputs[0] == read[-1]  # the prompt's last token writes the first output
    assert att.row_inputs[1:] == att.output_tokens[: len(att.row_inputs) - 1]
    assert att.output_tokens[: len(trace.output_tokens)] == list(trace.output_tokens)
