"""The figure download in the real app, in headless Chromium with every outside request blocked: open the control
under the attention map, choose PDF, press Download, and the browser receives the chart as a one-page PDF with its
tokens as text."""

from __future__ import annotations

import io

import pytest

from tests.browser_helpers import Watch, download, letters_checkpoint, wait_idle, wait_text


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("e2e_figure"))


def test_the_chart_downloads_as_a_pdf_drawn_on_click(browser, server, letters):
    import pypdf

    from viz.figure_export import FigureExportError, chromium_path

    try:
        chromium_path()
    except FigureExportError as err:
        pytest.skip(str(err))
    watch = Watch(browser, server.origin)
    try:
        page = watch.page
        watch.goto(server.url(model=f"path:{letters}", text="cafe", att_view="one", att_head="1"))
        wait_text(watch, "Cross-attention (decoder → encoder), layer 2, head 1")
        wait_idle(page)
        page.get_by_role("button", name="Download figure").first.click()
        page.get_by_role("radio", name="PDF", exact=True).first.click()  # the format (a rerun: the button's name)
        wait_idle(page)
        data = download(page, "Download (.pdf)")
        pdf = pypdf.PdfReader(io.BytesIO(data))
        text = " ".join(pdf.pages[0].extract_text().split())
        assert len(pdf.pages) == 1 and "c a f e" in text and "head 1" in text
        watch.assert_clean()
    finally:
        watch.close()
