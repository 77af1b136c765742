"""Every page of the running app (`streamlit run app.py`) in headless Chromium, with the internet blocked.

For each page: load it, type an input, change a selection, and check what a person sees: the tick
labels of the charts' SVG, bertviz's drawing inside its iframe, the decoding step, downloads that
numpy and json can read. Every request that leaves the local server is blocked and fails the test,
as do page errors, console errors, failed responses and Python tracebacks on the page.
One screenshot per page goes to test-artifacts/.
"""

from __future__ import annotations

import csv
import io
import json
import re

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.browser_helpers import (
    ROOT,
    WAIT_S,
    AppServer,
    Watch,
    choose,
    download,
    input_box,
    letters_checkpoint,
    pick_segment,
    pick_view,
    plot_data,
    screenshot,
    ticks,
    type_input,
    wait_idle,
    wait_text,
    wait_ticks,
    wait_title,
    wait_url,
    wait_value,
)
from tests.i18n_helpers import rendered

EOS, BOS = "</s>", "<s>"


def source_ticks(text: str) -> list[str]:
    """What the letters model reads: one token per letter, then </s>."""
    return [*text, EOS]


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("e2e_model"))


def test_attention_page(watch, server, letters):
    page = watch.page
    watch.goto(server.url(model=f"path:{letters}", text="cafe"))
    wait_ticks(watch, source_ticks("cafe"), plot=0)  # cross-attention: source tokens across
    # rows: the tokens written (issue 34), the first what the model writes from <s>: its own greedy first token
    from model import greedy_decode, load_checkpoint

    model, tok = load_checkpoint(letters)
    first = greedy_decode(model, tok, "cafe").steps[0].token
    assert ticks(page, "y")[0] == first != BOS

    type_input(page, "bead")
    wait_ticks(watch, source_ticks("bead"))
    wait_idle(page)
    assert input_box(page).input_value() == "bead"
    written = ticks(page, "y")  # the rows: the tokens the model's own greedy output writes, its first step first
    assert written[0] == greedy_decode(model, tok, "bead").steps[0].token and 2 <= len(written) <= 12
    assert "text=bead" in page.url

    page.get_by_text("Encoder self", exact=True).click()
    wait_ticks(watch, source_ticks("bead"), source_ticks("bead"))
    wait_title(watch, "Encoder self-attention, layer 1, average of heads")
    arrays = np.load(io.BytesIO(download(page, "Download attention and PE (.npz)")))
    S, T = 5, len(written)
    assert list(arrays["source_tokens"]) == source_ticks("bead")
    target = list(arrays["target_tokens"])  # the decoder inputs: <s>, then what each row before wrote
    assert target[0] == BOS and target[1:] == written[:-1] and list(arrays["written_tokens"]) == written
    assert arrays["encoder_self"].shape == (2, 2, S, S)  # (layers, heads, S, S) of the letters model
    assert arrays["decoder_self"].shape == (3, 2, T, T) and arrays["cross"].shape == (3, 2, T, S)
    # the heatmap draws what the download holds: the head average of the last encoder layer
    np.testing.assert_allclose(plot_data(page), arrays["encoder_self"][1].mean(axis=0), atol=1e-6)

    choose(page, "Head", "head 1")
    wait_title(watch, "Encoder self-attention, layer 1, head 1")
    np.testing.assert_allclose(plot_data(page), arrays["encoder_self"][1, 1], atol=1e-6)
    assert "att_head=1" in page.url
    screenshot(page, "e2e_attention")

    pick_view(page, "bertviz")
    frame = page.frame_locator('[data-testid="stIFrame"]')
    frame.locator("#attention line").first.wait_for(state="attached", timeout=WAIT_S * 1000)
    assert frame.locator("g#left text").all_text_contents() == source_ticks("bead")
    assert frame.locator("g#right text").all_text_contents() == source_ticks("bead")
    assert frame.locator("#attention line").count() == 2 * S * S  # one line per head and token pair
    assert frame.locator(".attentionBoxes rect").count() == 2 * 2 * S  # a box per head and token, both sides
    assert not frame.locator("#filter").is_visible()  # bertviz's own menus are hidden: the page's choose
    page.get_by_text("Cross (decoder → encoder)", exact=True).click()  # decoder tokens left, source right
    frame = page.frame_locator('[data-testid="stIFrame"]')
    expect(frame.locator("g#left text")).to_have_text(written, timeout=WAIT_S * 1000)  # waits for the redraw
    assert frame.locator("g#left text").all_text_contents() == written  # rows: the tokens written
    assert frame.locator("g#right text").all_text_contents() == source_ticks("bead")
    page.get_by_text("Encoder self", exact=True).click()
    wait_idle(page)
    page.get_by_text("model view", exact=True).click()
    frame = page.frame_locator('[data-testid="stIFrame"]')
    try:
        page.wait_for_function(
            """n => {
            const f = document.querySelector('[data-testid="stIFrame"]');
            const d = f && f.contentDocument;
            return !!d && d.querySelectorAll('svg line').length === n && !d.querySelector('#attention');
        }""",
            arg=2 * 2 * S * S,
            timeout=WAIT_S * 1000,
        )  # encoder layers x heads x S x S thumbnail lines
    except Exception as e:
        raise AssertionError(f"bertviz's model view was not drawn; {watch.problems()}") from e
    assert frame.locator("svg text").all_text_contents() == ["Heads", "0", "1", "Layers", "0", "1"]
    screenshot(page, "e2e_attention_bertviz")
    watch.assert_clean()


def test_positional_page(watch, server, letters):
    page = watch.page
    watch.goto(server.url("positional", model=f"path:{letters}", text="cafe"))
    wait_title(watch, "PE matrix: 100 positions × 16 dimensions, base 10000")  # the model's d_model is the default
    page.get_by_role("slider", name="d_model (dimensions)").focus()
    page.keyboard.press("ArrowRight")
    wait_title(watch, "PE matrix: 100 positions × 32 dimensions, base 10000")
    assert "pe_d=32" in page.url
    assert np.shape(plot_data(page, 0)) == (100, 32)
    screenshot(page, "e2e_positional")

    type_input(page, "bead")
    wait_url(watch, "text=bead")  # that run over before the next click (two quick reruns can reset the widgets)
    pick_view(page, "This model & input")
    wait_ticks(watch, source_ticks("bead"), plot="Source: embedding size")
    assert "pe_view=mine" in page.url

    arrays = np.load(io.BytesIO(download(page, "Download this PE table (.npz)")))
    pos, i = np.arange(100)[:, None], np.arange(16)[None, :]
    angle = pos / 10000.0 ** (2 * i / 32)  # PE[pos, 2i] = sin, PE[pos, 2i + 1] = cos
    expected = np.stack([np.sin(angle), np.cos(angle)], axis=-1).reshape(100, 32)
    np.testing.assert_allclose(arrays["pe"], expected, atol=1e-5)
    screenshot(page, "e2e_positional_model_input")
    watch.assert_clean()


def test_decoding_page(watch, server, letters):
    page = watch.page
    watch.goto(server.url(model=f"path:{letters}", text="cafe"))  # starts on the attention page
    wait_ticks(watch, source_ticks("cafe"))
    type_input(page, "bead")
    wait_ticks(watch, source_ticks("bead"))
    page.get_by_role("link", name="Step-by-step decoding").click()  # the sidebar's input goes along
    step = wait_text(watch, re.compile(r"^Step 1 of \d+"))
    n_steps = int(re.match(r"Step 1 of (\d+)", step.inner_text()).group(1))
    assert 2 <= n_steps <= 12
    wait_ticks(watch, source_ticks("bead"), plot="Cross-attention of the new position")
    wait_ticks(watch, [BOS], plot="Decoder self-attention of the new position")

    page.get_by_role("button", name="Next").click()
    wait_text(watch, f"Step 2 of {n_steps}")
    wait_ticks(watch, 2, plot="Decoder self-attention of the new position")  # <s> and the first output
    assert ticks(page, "x", rendered("Decoder self-attention of the new position"))[0] == BOS
    assert "dec_step=1" in page.url

    choose(page, "Candidates shown", "3")
    wait_ticks(watch, None, plot="Top 3 next tokens")
    assert len(ticks(page, "y", "Top 3 next tokens")) == 3
    wait_text(watch, f"Step 2 of {n_steps}")  # the step survives the change

    trace = json.loads(download(page, re.compile(r"^Download this decoding.*\(\.json\)$")))
    assert trace["source_tokens"] == source_ticks("bead") and len(trace["steps"]) == n_steps
    assert all(len(s["top_tokens"]) == 3 for s in trace["steps"])
    assert np.shape(trace["steps"][1]["cross"])[-1] == 5  # each step's cross rows span the source
    screenshot(page, "e2e_decoding")

    # Beam search (issue 15): the tree of hypotheses, its settings in the link, every hypothesis in a CSV.
    pick_segment(page, "Strategy", "Beam search")
    wait_title(watch, "Beam size 4, length penalty 0.6: kept, finished and pruned hypotheses")
    wait_ticks(watch, None, plot="Each row: the cross-attention that wrote that token")
    assert ticks(page, "x", "Each row: the cross-attention that wrote that token") == source_ticks("bead")
    wait_url(watch, "dec_strategy=beam", "dec_beam=4", "dec_lp=0.6")
    rows = list(csv.DictReader(io.StringIO(download(page, "Download every hypothesis (.csv)").decode())))
    assert rows and {r["status"] for r in rows} <= {"live", "finished", "pruned"} and rows[0]["step"] == "1"
    markers = page.locator(".js-plotly-plot").first.locator(".scatterlayer .point").count()
    assert markers == len(rows)  # one marker per hypothesis (edges and the best path are lines without points)
    screenshot(page, "e2e_decoding_beam")
    pick_segment(page, "Strategy", "Sampling")
    wait_title(watch, "Drawn with temperature 1.0, top-k all, top-p 1.0, seed 0", plot=3)  # after the step's three
    wait_url(watch, "dec_strategy=sample", "dec_seed=0")
    watch.assert_clean()


def test_model_page(watch, server, letters):
    from model import load_checkpoint

    page = watch.page
    watch.goto(server.url("model", model=f"path:{letters}", text="cafe"))
    model, _ = load_checkpoint(letters)
    wait_text(watch, f"{sum(p.numel() for p in model.parameters()):,} parameters")
    type_input(page, "abcdefg")
    wait_url(watch, "text=abcdefg")  # that run over before the next click (two quick reruns can reset the widgets)
    pick_view(page, "Shapes in attention")
    wait_text(watch, "S = 8 source tokens")

    pick_view(page, "Weights")
    wait_ticks(watch, None, plot="Weight statistics per tensor")  # drawn
    assert "model_view=weights" in page.url
    everything = ticks(page, "y", "Weight statistics per tensor")
    assert any(t.startswith("decoder.") for t in everything)
    choose(page, "Part", "encoder")
    page.wait_for_function(
        """() => {
        const p = [...document.querySelectorAll('.js-plotly-plot')].find(
            p => (p.querySelector('.gtitle') || {}).textContent === 'Weight statistics per tensor');
        const t = p ? [...p.querySelectorAll('.ytick text')].map(e => e.textContent) : [];
        return t.length > 0 && t.every(s => s.startsWith('encoder.'));
    }""",
        timeout=WAIT_S * 1000,
    )
    encoder = [n for n, _ in model.named_parameters() if n.startswith("encoder.")]
    assert sorted(ticks(page, "y", rendered("Weight statistics per tensor"))) == sorted(encoder)
    screenshot(page, "e2e_model")
    watch.assert_clean()


def test_bad_input_is_named_and_kept_in_the_browser(watch, server, letters):
    page = watch.page
    watch.goto(server.url(model=f"path:{letters}", text="cafe"))
    wait_ticks(watch, source_ticks("cafe"))
    typed = "ca\u200bfe 🙂"  # a zero-width space and an emoji the model does not know
    type_input(page, typed)
    wait_text(watch, "Removed 1 control or invisible character from the input.")
    wait_text(watch, "Not in the vocabulary, read as <unk>")
    wait_ticks(watch, ["c", "a", "f", "e", "<unk>", "<unk>", EOS])
    wait_idle(page)
    assert input_box(page).input_value() == typed

    type_input(page, "   ")
    wait_text(watch, "The input is empty")
    wait_idle(page)  # the last run's charts go when this run ends
    assert page.locator(".js-plotly-plot").count() == 0
    assert input_box(page).input_value() == "   "
    screenshot(page, "e2e_bad_input")
    watch.assert_clean()

    # The watch itself: a request or a websocket that leaves the server is caught (and would fail a test).
    with page.expect_event("websocket"):
        page.evaluate("""() => { new WebSocket('wss://stream.example.org/s');
                                 return fetch('https://cdn.example.org/lib.js').catch(() => 'blocked'); }""")
    assert "https://cdn.example.org/lib.js" in watch.blocked and "wss://stream.example.org/s" in watch.blocked
    with pytest.raises(AssertionError, match="tried to go online"):
        watch.assert_clean()


def test_a_link_to_a_page_as_the_first_visit_after_a_start(browser, letters, tmp_path):
    """A lecturer starts the app and shares links to pages: the first visitors get those pages whole.

    (Streamlit took the pages/ folder for an old-style multipage app until app.py had run once: a page
    opened by link ran alone, without sidebar or model, for everyone, until someone opened the root.)
    """
    server = AppServer(tmp_path)  # a fresh one: nobody has opened the app yet
    watches = []
    try:
        for page, text in (("model", "cafe"), ("decoding", "cafe"), ("positional", "bead")):
            w = Watch(browser, server.origin)
            watches.append(w)
            w.goto(server.url(page, model=f"path:{letters}", text=text))
            if page == "model":
                wait_text(w, "parameters")
                assert w.page.get_by_text("Page not found").count() == 0
            elif page == "decoding":
                wait_ticks(w, source_ticks(text), plot="Cross-attention of the new position")
            else:
                wait_title(w, "PE matrix: 100 positions × 16 dimensions, base 10000")  # the model's d_model
                pick_view(w.page, "This model & input")
                wait_ticks(w, source_ticks(text), plot="Source: embedding size")
            wait_idle(w.page)  # the run that drew the chart is over
            wait_value(w, input_box(w.page), text, f"the input box of the {page} page")
            nav = w.page.locator('[data-testid="stSidebarNav"]').inner_text().split("\n")
            assert {"Attention", "Positional encoding", "Step-by-step decoding", "Model"} <= set(nav), nav
            assert not {"app", "common", "model info"} & set(nav), nav  # not the folder's files
            w.assert_clean()
    finally:
        for w in watches:
            w.close()
        server.stop()


def test_the_default_start_shows_a_shipped_demo(watch, server):
    if not (ROOT / "checkpoints" / "reverse").is_dir():
        pytest.skip(
            "checkpoints/reverse is not there yet (python -m model.train --task reverse --out checkpoints/reverse)"
        )
    from model import load_checkpoint
    from model.checkpoints.demos import list_demos
    from model.text.inputs import prepare_source
    from viz.tokens import plain_token

    demo = list_demos()[0]  # the app opens the first demo found
    model, tokenizer = load_checkpoint(demo.path)
    example = demo.card["examples"][0]
    expected = [plain_token(t) for t in prepare_source(model, tokenizer, example).tokens]  # as axes show them
    page = watch.page
    watch.goto(server.url())
    wait_ticks(watch, expected)
    wait_idle(page)  # the run that drew the chart is over
    wait_value(watch, page.get_by_role("combobox", name="Model", exact=True), demo.name, "the model box")
    wait_value(watch, input_box(page), example, "the input box")
    screenshot(page, "e2e_default_start")
    watch.assert_clean()


def test_the_default_page_opens_by_its_own_name(watch, server, letters):
    """/attention is the same page as the root: typed or from a link, it never says "Page not found"."""
    watch.goto(server.url("attention", model=f"path:{letters}", text="cafe"))
    wait_ticks(watch, source_ticks("cafe"))
    wait_idle(watch.page)
    assert watch.page.get_by_text("Page not found").count() == 0
    assert watch.page.get_by_role("heading", name="Attention").count() == 1
    watch.page.get_by_role("link", name="Positional encoding").click()
    wait_title(watch, "PE matrix: 100 positions × 16 dimensions, base 10000")
    watch.assert_clean()


def test_inside_attention_page(watch, server, letters):
    page = watch.page
    # the head and query asked for (without them the page opens on its most spread-out row: default_focus)
    watch.goto(server.url("inside", model=f"path:{letters}", text="cafe", target="bead", in_layer="0", in_head="0",
                          in_query="0"))  # fmt: skip
    keys = [f"{i}: {t}" for i, t in enumerate(source_ticks("cafe"))]
    wait_ticks(watch, None, ["q: <s>"], plot="Query and keys")  # the query (axis y) above every source key (y2)
    assert ticks(page, "y2", "Query and keys") == keys
    wait_title(watch, "Query and keys: Cross-attention (decoder → encoder), layer 0, head 0, query 0: <s> → b")

    choose(page, "Head", "head 1")
    wait_title(watch, "Query and keys: Cross-attention (decoder → encoder), layer 0, head 1, query 0: <s> → b")
    wait_idle(page)
    assert "in_head=1" in page.url
    arrays = np.load(io.BytesIO(download(page, "Download Q, K, V of every layer and head (.npz)")))
    q, k = arrays["cross_q"][0, 1, 0], arrays["cross_k"][0, 1]  # layer 0, head 1, query 0
    np.testing.assert_allclose(plot_data(page, "Query and keys", trace=0)[0], q, atol=1e-6)
    np.testing.assert_allclose(plot_data(page, "Query and keys", trace=1), k, atol=1e-6)
    weights = plot_data(page, "Attention weights", field="y")  # the row the attention page shows
    np.testing.assert_allclose(weights, arrays["cross_weights"][0, 1, 0], atol=1e-6)
    scores = k @ q / np.sqrt(q.shape[0])
    np.testing.assert_allclose(weights, np.exp(scores) / np.exp(scores).sum(), atol=1e-5)

    page.get_by_text("Compare: without 1/√d_k").click()
    wait_text(watch, "Lower entropy means a sharper row")
    wait_idle(page)  # the URL is written at the end of the run
    assert "in_noscale=1" in page.url
    screenshot(page, "e2e_inside")
    watch.assert_clean()


def test_a_chart_downloads_as_a_pdf_drawn_on_click(watch, server, letters):
    """The download control under the attention map (ui/shell/figure_download.py): PDF chosen, Download pressed, and the
    browser receives the chart as a one-page PDF with its tokens as text."""
    import pypdf

    from viz.figure_export import FigureExportError, chromium_path

    try:
        chromium_path()
    except FigureExportError as err:
        pytest.skip(str(err))
    page = watch.page
    watch.goto(server.url(model=f"path:{letters}", text="cafe", att_view="one", att_head="1"))
    wait_text(watch, "Cross-attention (decoder → encoder), layer 2, head 1")
    wait_idle(page)
    page.get_by_role("button", name="Download figure").first.click()
    page.get_by_role("radio", name="PDF", exact=True).first.click()  # the format (a rerun: the button's name)
    wait_idle(page)
    pdf = pypdf.PdfReader(io.BytesIO(download(page, "Download (.pdf)")))
    text = " ".join(pdf.pages[0].extract_text().split())
    assert len(pdf.pages) == 1 and "c a f e" in text and "head 1" in text
    watch.assert_clean()
