"""The download control beside every chart (ui/shell/presentation.show): the chart as an SVG, PDF or PNG file for a paper
or a slide (viz/figure_export.py), at a preset size.

A small popover holds the format, the size and one download button. The file is drawn only when the button is
clicked (Streamlit calls the button's data function then, about a second or three with Chromium): a page run
draws nothing.
"""

from __future__ import annotations

import streamlit as st

from i18n import _
from viz.figure_export import FORMATS, PRESETS, FigureExportError, chromium_path

MIME = {"npz": "application/octet-stream", "json": "application/json", "csv": "text/csv", "html": "text/html"}
KEY_SUFFIX = "_figdl"  # every widget of the control: the chart's key + this + what it is (tests find them by it)


def file_bytes(fig, fmt: str, preset: str, width: int | None) -> bytes:
    """The chart's file (the button's data, called on click). width: the figure's own width before the page sized
    it for the browser (presentation mode hands the width to the browser)."""
    import plotly.graph_objects as go

    from viz.figure_export import render

    out = go.Figure(fig)
    out.layout.width = width
    try:
        return render(out, fmt, preset)
    except FigureExportError as err:  # no Chromium on this server: the file says so, nothing breaks
        return f"{err}\n".encode()


def download_file(where, label: str, data, file_name: str, key: str, **options) -> None:
    """One download button in `where` (st or a column): `data` (bytes, text, or a callable made only when the button
    is pressed, on its own thread), its type from `file_name`'s extension; pressing it does not rerun the page."""
    mime = MIME[file_name.rsplit(".", 1)[-1]]
    where.download_button(label, data, file_name=file_name, mime=mime, key=key, on_click="ignore", **options)


def download_row(*files: tuple[str, object, str, str]) -> None:
    """Download buttons side by side, one column each: (label, data, file_name, key) per button."""
    for where, (label, data, file_name, key) in zip(st.columns(len(files)), files):
        download_file(where, label, data, file_name, key)


def download_control(fig, key: str, where=None, width: int | None = None) -> None:
    """The popover under a chart: format, size, and the download (drawn on click)."""
    box = (where or st).popover(_("Download figure"), icon=":material/download:", key=f"{key}{KEY_SUFFIX}")
    fmt = box.segmented_control(
        _("Format"), list(FORMATS), default="svg", key=f"{key}{KEY_SUFFIX}_format", format_func=str.upper,
        required=True,
    )  # fmt: skip
    preset = box.selectbox(
        _("Size"), list(PRESETS), key=f"{key}{KEY_SUFFIX}_preset", format_func=lambda p: _(PRESETS[p].title)
    )
    try:
        chromium_path()
        missing = False
    except FigureExportError:  # a server without Chromium: the control says so instead of a broken download
        box.caption(_("Figures are drawn with Chromium, which this server does not have."))
        missing = True
    box.download_button(
        _("Download ({ext})").format(ext=f".{fmt}"),
        lambda: file_bytes(fig, fmt, preset, width),
        file_name=f"{key}.{fmt}",
        mime=FORMATS[fmt],
        key=f"{key}{KEY_SUFFIX}_button",
        on_click="ignore",
        icon=":material/download:",
        disabled=missing,
    )
