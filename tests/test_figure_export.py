"""Figures as files (viz/figure_export.py, viz/vector_cells.py, viz/figure_views.py): heatmap cells as vector
shapes on tiny arrays, the presets' sizes, and every view written as SVG, PDF and PNG by kaleido with the system
Chromium (one Chromium for the module), each file read back: SVG parsed (tokens as text, no raster), PDF one page
with its fonts embedded and the tokens extractable, PNG at least 1,600 px wide."""

from __future__ import annotations

import io
import re
import struct
import xml.etree.ElementTree as ET

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.colors import sample_colorscale

from i18n import language_scope, translations
from viz import attention_figs
from viz.figure_export import MIN_PNG_PX, PRESETS, FigureExportError, chromium_path, export_size, prepared, render
from viz.figure_views import VIEWS, ViewError, view_figure
from viz.vector_cells import LEVELS, cell_edges, runs_path, vector_heatmaps

SVG = "{http://www.w3.org/2000/svg}"


def rects(path: str) -> list[tuple[float, float, float, float]]:
    """The rectangles of a path made of 'M x0,y0 H x1 V y1 H x0 Z' pieces, as (x0, y0, x1, y1)."""
    found = re.findall(r"M([-\d.e]+),([-\d.e]+)H([-\d.e]+)V([-\d.e]+)H[-\d.e]+Z", path)
    return [tuple(float(v) for v in r) for r in found]


# -- vector cells: pure, on tiny arrays ------------------------------------------------------------------------------


def test_cell_edges_of_categories_and_of_numeric_centres():
    assert list(cell_edges(["a", "b", "c"], 3)) == [-0.5, 0.5, 1.5, 2.5]
    assert list(cell_edges(None, 2)) == [-0.5, 0.5, 1.5]
    assert list(cell_edges([0.0, 2.0, 4.0], 3)) == [-1.0, 1.0, 3.0, 5.0]


def test_runs_of_equal_cells_along_a_row_become_one_rectangle():
    q = np.array([[0, 0, 1], [1, -1, 0]])
    edges = np.arange(4) - 0.5
    assert rects(runs_path(q, 0, edges, edges)) == [(-0.5, -0.5, 1.5, 0.5), (1.5, 0.5, 2.5, 1.5)]
    assert rects(runs_path(q, 1, edges, edges)) == [(1.5, -0.5, 2.5, 0.5), (-0.5, 0.5, 0.5, 1.5)]


def covered_cells(fig) -> dict[tuple[int, int], str]:
    """(row, column) -> the colour every unit cell ends up with, the figure's path shapes painted in order (the first
    one of a map may lie under all its cells; the later ones never overlap)."""
    cells: dict[tuple[int, int], str] = {}
    later: set[tuple[int, int]] = set()
    for n, shape in enumerate(s for s in fig.layout.shapes if s.type == "path"):
        for x0, y0, x1, y1 in rects(shape.path):
            for c in range(int(round(x0 + 0.5)), int(round(x1 + 0.5))):
                for r in range(int(round(y0 + 0.5)), int(round(y1 + 0.5))):
                    if n:
                        assert (r, c) not in later, "a cell drawn twice over the first colour"
                        later.add((r, c))
                    cells[(r, c)] = shape.fillcolor
    return cells


def test_a_masked_attention_map_becomes_shapes_of_its_colours_with_no_heatmap_left():
    weights = np.array([[1.0, 0.0, 0.0], [0.25, 0.75, 0.0], [0.1, 0.3, 0.6]], dtype=np.float32)
    mask = attention_figs.causal_mask(3, 3)
    fig = attention_figs.attention_heatmap(weights, list("abc"), list("xyz"), "t", mask=mask)
    out = vector_heatmaps(fig)
    assert "heatmap" not in {t.type for t in out.data} and any(t.type == "heatmap" for t in fig.data)
    cells = covered_cells(out)
    assert set(cells) == {(r, c) for r in range(3) for c in range(3)}
    blues = [list(s) for s in go.Heatmap(colorscale="Blues").colorscale]
    for (r, c), colour in cells.items():  # the colour scale at the weight, to 1/(LEVELS-1); masked: the background
        expected = sample_colorscale(blues, [round(float(weights[r, c]) * (LEVELS - 1)) / (LEVELS - 1)])[0]
        assert colour == (attention_figs.MASKED_COLOR if mask[r, c] else expected), (r, c)
    stand_in = next(t for t in out.data if t.type == "scatter" and t.marker.coloraxis)  # keeps the colour bar
    assert set(fig.data[0].x) <= set(stand_in.x) and set(fig.data[0].y) <= set(stand_in.y)  # and the categories
    assert out.layout.coloraxis.showscale is not False
    assert len(fig.data) == len(out.data)  # the legend's marks stay


def test_a_heatmap_with_its_own_scale_keeps_its_range_and_colour_bar():
    pe = np.array([[-1.0, 0.5], [0.0, 1.0]])
    fig = go.Figure(go.Heatmap(z=pe, zmin=-1, zmax=1, colorscale="RdBu", colorbar=dict(title=dict(text="v"))))
    out = vector_heatmaps(fig)
    marker = out.data[0].marker
    assert (marker.cmin, marker.cmax, marker.colorbar.title.text) == (-1, 1, "v")
    assert len(covered_cells(out)) == 4


# -- sizes: pure ---------------------------------------------------------------------------------------------------


def test_presets_fix_the_printed_width_and_a_slide_is_16_by_9():
    tall = go.Figure(layout=dict(width=2000, height=4000))
    w, h = export_size(tall, "column")
    assert w == PRESETS["column"].layout_px and h <= PRESETS["column"].max_aspect * w + 1
    assert export_size(tall, "slide")[0] * 9 == export_size(tall, "slide")[1] * 16
    snug = go.Figure(layout=dict(width=300, height=200))
    assert export_size(snug, "page") == (300, 200)  # narrower than the page: as it is (its colour bar beside it)
    for preset in PRESETS:
        fig, opts = prepared(snug, "pdf", preset)
        assert opts["scale"] * PRESETS[preset].layout_px == pytest.approx(PRESETS[preset].width_px)
        fig, opts = prepared(snug, "png", preset)
        assert opts["width"] * opts["scale"] >= MIN_PNG_PX
    with pytest.raises(FigureExportError):
        prepared(snug, "jpg")
    with pytest.raises(FigureExportError):
        export_size(snug, "poster")


# -- every view, every format, drawn by Chromium -------------------------------------------------------------------


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    from harness.browser import letters_checkpoint
    from model import capture, greedy_decode, load_checkpoint

    model, tokenizer = load_checkpoint(letters_checkpoint(tmp_path_factory.mktemp("figures")))
    return capture(model, tokenizer, "cafe"), greedy_decode(model, tokenizer, "cafe")


@pytest.fixture(scope="module")
def kaleido_chromium():
    try:
        chromium_path()
    except FigureExportError as err:
        pytest.skip(str(err))
    yield
    from viz import figure_export

    figure_export.stop()


def svg_texts(data: bytes) -> list[str]:
    root = ET.fromstring(data)
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def pdf_fonts(page) -> list[tuple[str, bool]]:
    """(font name, embedded) of every font the page uses (Type0 fonts: their descendant's descriptor)."""
    out = []
    for font in page["/Resources"]["/Font"].values():
        font = font.get_object()
        described = font["/DescendantFonts"][0].get_object() if "/DescendantFonts" in font else font
        descriptor = described["/FontDescriptor"].get_object()
        out.append((str(font["/BaseFont"]), any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3"))))
    return out


@pytest.mark.parametrize("view", list(VIEWS))
def test_every_view_as_svg_pdf_and_png(records, kaleido_chromium, view):
    import pypdf

    cap, trace = records
    fig = view_figure(view, cap, trace)
    tokens = {"c", "a", "f", "e"}  # the input's letters: on the key axis of every attention view
    svg = render(fig, "svg", "page")
    texts = svg_texts(svg)
    root = ET.fromstring(svg)
    assert not list(root.iter(f"{SVG}image"))  # vector cells, no embedded picture
    if view in ("one", "grid", "decoding"):
        assert tokens <= set(texts), texts
        assert sum(1 for p in root.iter(f"{SVG}path") if "H" in p.get("d", "") and "V" in p.get("d", "")) >= 2
    pdf = pypdf.PdfReader(io.BytesIO(render(fig, "pdf", "column")))
    assert len(pdf.pages) == 1
    assert float(pdf.pages[0].mediabox.width) <= PRESETS["column"].width_in * 72 + 1  # points: within a column
    fonts = pdf_fonts(pdf.pages[0])
    assert fonts and all(embedded for _name, embedded in fonts), fonts
    text = pdf.pages[0].extract_text()
    if view in ("one", "grid", "decoding"):
        assert "c a f e" in " ".join(text.split()), text  # the key tokens, in their order
    png = render(fig, "png", "slide")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= MIN_PNG_PX and width * 9 == height * 16


def test_a_chinese_figure_embeds_a_cjk_font_and_its_text_is_extractable(records, kaleido_chromium):
    import pypdf

    cap, trace = records
    with language_scope("zh"):
        fig = view_figure("one", cap, trace, head=0)
        title = translations("zh").gettext("head {h}").format(h=0)
    assert title != "head 0"  # the catalog has it
    page = pypdf.PdfReader(io.BytesIO(render(fig, "pdf", "page"))).pages[0]
    assert any("WenQuanYi" in name or "CJK" in name for name, _ in pdf_fonts(page)), pdf_fonts(page)
    assert all(embedded for _name, embedded in pdf_fonts(page))
    assert title.replace(" ", "") in "".join(page.extract_text().split())  # the extractor spaces CJK glyphs


def test_a_layer_or_head_the_model_lacks_is_named(records):
    cap, trace = records
    with pytest.raises(ViewError, match="layer 9"):
        view_figure("one", cap, trace, layer=9)
    with pytest.raises(ViewError, match="head 5"):
        view_figure("one", cap, trace, head=5)
    with pytest.raises(ViewError, match="unknown view"):
        view_figure("sideways", cap, trace)


def test_a_decoder_only_models_steps_reach_the_prompt_and_the_tokens_written_before():
    from model import capture, greedy_decode, load_checkpoint
    from model.checkpoints.demos import list_demos

    demo = {d.name: d for d in list_demos()}["reverse_decoder_rope"]
    model, tokenizer = load_checkpoint(demo.path)
    text = demo.examples[0]
    trace = greedy_decode(model, tokenizer, text)
    fig = view_figure("decoding", capture(model, tokenizer, text), trace, head=0)
    z = np.asarray(fig.data[0].z, dtype=np.float64)
    prompt, steps = len(trace.source_tokens), len(trace.steps)
    assert z.shape == (steps, prompt + steps - 1)
    for t, step in enumerate(trace.steps):  # step t saw the prompt and the t tokens it had written
        assert np.isnan(z[t, prompt + t :]).all() and np.allclose(z[t, : prompt + t], step.decoder_self[-1, 0])
    assert list(fig.data[0].x)[-1].endswith(trace.output_tokens[-2])  # the last key: the last token fed back


def test_without_chromium_the_export_says_so_and_never_downloads_one(monkeypatch, tmp_path):
    from viz import figure_export

    monkeypatch.delenv("BROWSER_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no chromium on it
    with pytest.raises(FigureExportError, match="no Chromium"):
        chromium_path()
    renderer = figure_export._Renderer()  # a fresh one: the module's may have a browser already
    with pytest.raises(FigureExportError, match="no Chromium"):
        renderer.draw(go.Figure(), dict(format="svg", width=100, height=100, scale=1))
    renderer.stop()
