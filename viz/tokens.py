"""Token strings as people should see them on axes and in hover text, and tick layouts that stay readable.

Plotly reads <...> in labels as markup (so "</s>" would vanish): every shown token is HTML-escaped.
A space is shown as "·" (a middle dot): the usual "␣" reads as "u" at tick sizes on a projector.
"""

from __future__ import annotations

import functools
import html
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from i18n import N_, _

_VISIBLE = {" ": "·", "\t": "⇥", "\n": "⏎", "": "∅"}
SPACE = _VISIBLE[" "]
PLAIN_CHARS = 16  # characters of a token shown on an axis or in a caption (longer ones end in "…")
HOVER_CHARS = 40  # characters of a token shown in hover text
LABEL = "{i}: {token}"  # a unique category label (plotly merges equal labels, so the index stays)
ROW = "{input} → {token}"  # a decoder row: the decoder input it reads, then the token it writes

TICK_PX = 14  # tick label size: readable at 1366 px on a projector (never smaller)
TICK_COLOR = "#222222"  # on white: 15.9:1 contrast (WCAG asks 7:1 for AAA); Streamlit's default grey is ~3.7:1
TEXT_COLOR = "#222222"
MIN_TICK_GAP_PX = 20  # centre-to-centre distance: a 14 px label's box is about 18 px high
LABEL_BOX_PX = 18  # that box: it grows with the label's size, the 2 px between two labels does not (tick_gap)
CHAR_PX = 8.5  # average width of one character of a 14 px sans-serif label
# Every chart's text (plotly draws with the browser's fonts): Streamlit's own font first, then common CJK fonts so
# that Chinese titles and labels never show as empty boxes (Linux: fonts-noto-cjk or fonts-wqy-microhei; Windows
# and macOS have one of the others).
FONT_FAMILY = (
    '"Source Sans", "Source Sans Pro", Arial, "Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Micro Hei", '
    '"Microsoft YaHei", "PingFang SC", sans-serif'
)
# The layout keywords that give a figure FONT_FAMILY everywhere: Streamlit's chart theme names its own font for
# titles and hover labels, which a figure's font alone would not override.
FONTS = dict(font_family=FONT_FAMILY, title_font_family=FONT_FAMILY, hoverlabel_font_family=FONT_FAMILY)


def plain_token(token: str, max_chars: int = PLAIN_CHARS) -> str:
    """Whitespace made visible and very long tokens shortened: for text widgets and markdown code spans."""
    shown = _VISIBLE.get(token, token)
    return shown if len(shown) <= max_chars else shown[: max_chars - 1] + "…"


def display_token(token: str, max_chars: int = PLAIN_CHARS) -> str:
    """plain_token, HTML-escaped: for plotly labels and hover text."""
    return html.escape(plain_token(token, max_chars), quote=False)


def display_tokens(tokens: Sequence[str], max_chars: int = PLAIN_CHARS) -> list[str]:
    return [display_token(t, max_chars) for t in tokens]


def hover_token(token: str, max_chars: int = HOVER_CHARS) -> str:
    """A token for hover text: like display_token, but a space is named ("space"), not drawn as a symbol."""
    return _("space") if token == " " else display_token(token, max_chars)


def indexed(tokens: Sequence[str], start: int = 0) -> list[str]:
    """Unique labels 'i: token': plotly merges equal category labels, so repeated tokens need their index (counted
    from `start`: the tokens of a window of a longer input)."""
    return [LABEL.format(i=i, token=display_token(t)) for i, t in enumerate(tokens, start)]


# -- the one row convention ------------------------------------------------------------------------
# Every page, the lecture pack and the downloads label a decoder row with the token it WRITES: row j reads decoder
# input j and writes the next token (Capture.written_tokens: the decoder input shifted by one, the last row the
# model's own next token); the hover names the decoder input that wrote it ("<s> → la"). Encoder rows stay source
# tokens: an encoder writes nothing, and its axis title says so.
ROW_TITLES = {  # the y axis's title for each kind of rows (marked only; translated by Rows.title)
    "written": N_("output tokens written"),  # the hover names each row's decoder input: "<s> → la"
    "source": N_("source tokens (nothing written)"),  # as short as the other titles: a short map's axis holds it
    "text": N_("text tokens"),  # an encoder-only model's rows: the text it reads (it has no source)
}


@dataclass(frozen=True)
class Rows:
    """The rows of an attention map (or of any chart over decoder positions), as the app labels them.

    tokens: what each row is labelled with: the token it writes (decoder rows) or the source token (encoder rows).
    inputs: the decoder input each row reads, the same length (None: encoder rows, or rows given as a plain list).
    kind: "written", "source", "text" or None (a plain list of query tokens: the caller's own axis title).
    """

    tokens: list[str]
    inputs: list[str] | None = None
    kind: str | None = None

    def __post_init__(self) -> None:
        if self.inputs is not None and len(self.inputs) != len(self.tokens):
            raise ValueError(f"{len(self.tokens)} rows but {len(self.inputs)} decoder inputs")

    def __len__(self) -> int:
        return len(self.tokens)

    def hover(self, i: int, max_chars: int = HOVER_CHARS) -> str:
        """Row i for hover text: "<s> → la" (the decoder input, then the token it writes), or the token alone."""
        token = hover_token(self.tokens[i], max_chars)
        return token if self.inputs is None else ROW.format(input=hover_token(self.inputs[i], max_chars), token=token)

    def text(self, i: int) -> str:
        """Row i as plain text (a select box, a caption): "<s> → la", or the token alone."""
        token = plain_token(self.tokens[i])
        return token if self.inputs is None else ROW.format(input=plain_token(self.inputs[i]), token=token)

    def hovers(self, max_chars: int = HOVER_CHARS) -> list[str]:
        return [self.hover(i, max_chars) for i in range(len(self.tokens))]

    def labels(self, max_chars: int = HOVER_CHARS, start: int = 0) -> list[str]:
        """Unique category labels "i: <s> → la" (plotly merges equal labels, so the index stays); positions count
        from `start` (rows of a window of a longer map)."""
        return [LABEL.format(i=i, token=h) for i, h in enumerate(self.hovers(max_chars), start)]

    def window(self, lo: int, hi: int) -> Rows:
        """Rows lo .. hi - 1 (a window of a longer map), as Rows of the same kind."""
        return Rows(self.tokens[lo:hi], None if self.inputs is None else self.inputs[lo:hi], self.kind)

    def title(self) -> str | None:
        """The y axis's title, translated (None for a plain list: the caller names its rows)."""
        return _(ROW_TITLES[self.kind]) if self.kind else None


def written_rows(written: Sequence[str], inputs: Sequence[str]) -> Rows:
    """Decoder rows: row j writes written[j], read from decoder input inputs[j]."""
    return Rows(list(written), list(inputs), "written")


def output_rows(outputs: Sequence[str], first_input: str) -> Rows:
    """The rows of a decoding (one per token written): output j was written from the previous output (the first
    from `first_input`, <s> or a prompt's last token)."""
    return written_rows(outputs, [first_input, *outputs[:-1]])


def source_rows(tokens: Sequence[str]) -> Rows:
    """Encoder rows: the source tokens (nothing is written there)."""
    return Rows(list(tokens), None, "source")


def capture_rows(capture, kind: str) -> Rows:
    """The rows of a Capture's attention `kind` (encoder_self, decoder_self or cross), by the one convention:
    decoder rows are capture.written_tokens, read from capture.target_tokens; encoder rows the source tokens (an
    encoder-only model's, which writes no target: its text's tokens)."""
    if kind == "encoder_self":
        return Rows(list(capture.source_tokens), None, "source" if len(capture.target_tokens) else "text")
    return written_rows(capture.written_tokens, capture.target_tokens)


def as_rows(rows: Rows | Sequence[str]) -> Rows:
    """A figure builder's rows: a Rows as it is, a plain list of query tokens as rows of its own title."""
    return rows if isinstance(rows, Rows) else Rows(list(rows))


def tick_font_size(n: int) -> int:
    """Tick label size for n tokens: always TICK_PX. Long inputs get fewer labels (token_ticks), not smaller ones."""
    return TICK_PX


@dataclass(frozen=True)
class Ticks:
    """Which positions of a categorical token axis carry a label, the labels, and their angle."""

    vals: list[int]
    text: list[str]
    angle: int  # 0: horizontal; -90: vertical (only when horizontal labels would overlap)
    step: int  # every step-th token is labelled
    size: int = TICK_PX  # font size in px

    def axis(self) -> dict:
        """Keyword arguments for fig.update_xaxes / update_yaxes."""
        return dict(
            tickmode="array",
            tickvals=self.vals,
            ticktext=self.text,
            tickangle=self.angle,
            tickfont=dict(size=self.size, color=TICK_COLOR),
        )


def _is_wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


# label_px's character classes: px at 14 px of a narrow, a wide (CJK), a broad (upper-case, mwMW@) and any other one
NARROW_CHARS, BROAD_CHARS = "il.,:;|!'/()[]ftjr ", "mwMW@"
NARROW_PX, WIDE_PX, BROAD_PX, AVERAGE_PX = 4.0, 14.0, 10.5, 7.8


def label_px(text: str, size: int = TICK_PX) -> float:
    """Rough width in px of a label `size` px high: narrow, average and wide characters of a sans-serif font."""
    at_14 = sum(
        NARROW_PX
        if ch in NARROW_CHARS
        else WIDE_PX
        if _is_wide(ch)
        else BROAD_PX
        if ch in BROAD_CHARS or ch.isupper()
        else AVERAGE_PX
        for ch in text
    )
    return at_14 * size / 14


def _code_point_ranges(member) -> list[int]:
    """[first, last, first, last, ...]: the code points c for which member(chr(c)), as inclusive ranges."""
    out: list[int] = []
    start = None
    for cp in range(0x110000):
        if member(chr(cp)):
            start = cp if start is None else start
        elif start is not None:
            out += [start, cp - 1]
            start = None
    return out + ([start, 0x10FFFF] if start is not None else [])


@functools.cache
def label_classes() -> dict:
    """label_px as data, for a page that lays out labels as the app does (the lecture pack's typed input, pack_live.js):
    its widths, its narrow and broad characters, and the wide and upper-case ones as code point ranges of this Python's
    unicodedata (what _is_wide and str.isupper read); token_ticks' gap; plain_token's visible whitespace and lengths;
    and the one row convention's labels (Rows: LABEL, ROW)."""
    return {
        "tick_px": TICK_PX,
        "min_gap": MIN_TICK_GAP_PX,
        "label_box": LABEL_BOX_PX,
        "char_px": CHAR_PX,
        "narrow": NARROW_CHARS,
        "broad": BROAD_CHARS,
        "px": {"narrow": NARROW_PX, "wide": WIDE_PX, "broad": BROAD_PX, "average": AVERAGE_PX},
        "wide": _code_point_ranges(_is_wide),
        "upper": _code_point_ranges(str.isupper),
        "visible": dict(_VISIBLE),
        "plain_chars": PLAIN_CHARS,
        "hover_chars": HOVER_CHARS,
        "label": LABEL,
        "row": ROW,
    }


_WIDE = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef"  # CJK characters and their punctuation: one em each
_NO_LINE_START = set("，。、；：！？）》」』】,.;:!?)")  # stays at the end of the line before (never starts one)
_NO_LINE_END = set("（《「『【(")  # goes down with the character after it (never ends a line)
_UNITS = re.compile(rf"[{_WIDE}]|[^\s{_WIDE}]+|\s+")


def wrap_px(text: str, max_px: float, size: int = TICK_PX) -> list[str]:
    """`text` in lines of at most `max_px` (label_px at `size`), broken at spaces and between Chinese characters;
    closing punctuation never starts a line (the character before it moves down with it) and opening punctuation
    never ends one; a single word wider than
    max_px keeps a line of its own."""
    lines: list[list[tuple[str, str]]] = [[]]  # each line: (space before, unit)
    space = ""
    for unit in _UNITS.findall(text):
        if unit.isspace():
            space = " "
            continue
        line = lines[-1]
        if (
            not line
            or all(u in _NO_LINE_END for _, u in line)
            or label_px(_joined(line + [(space, unit)]), size) <= max_px
        ):
            line.append((space, unit))
        elif (unit in _NO_LINE_START or line[-1][1] in _NO_LINE_END) and len(line) > 1:
            moved = [line.pop()] if unit in _NO_LINE_START else []
            while line and line[-1][1] in _NO_LINE_END:  # an opening mark goes down with what follows it
                moved.insert(0, line.pop())
            down = [("", moved[0][1]), *moved[1:], (space, unit)] if moved else [("", unit)]
            if line:
                lines.append(down)
            else:  # nothing was left above: the line is what moved (wider than max_px, as a single long word)
                lines[-1] = down
        else:
            lines.append([("", unit)])
        space = ""
    return [_joined(line) for line in lines]


def _joined(line: list[tuple[str, str]]) -> str:
    return "".join(space + unit for space, unit in line).strip()


def tick_gap(size: int, horizontal: bool = True) -> float:
    """The centre-to-centre distance two labels of `size` px need. Side by side (an x axis, before token_ticks checks
    their widths): their box (LABEL_BOX_PX at TICK_PX, in proportion to the size) and the same 2 px between them.
    One above the other (a y axis): at least MIN_TICK_GAP_PX, and a line of text set solid beyond that (the size:
    the glyphs of one label never reach the next's), so that a projector's 19 px labels name every row of 19.6 px
    (a decoder-only demo's 17 rows on one 768 px screen)."""
    if not horizontal:
        return max(MIN_TICK_GAP_PX, size)
    return MIN_TICK_GAP_PX + LABEL_BOX_PX * (size - TICK_PX) / TICK_PX


def token_ticks(tokens: Sequence[str], px_per_token: float, horizontal: bool = True, size: int = TICK_PX) -> Ticks:
    """Readable ticks for a token axis whose tokens are px_per_token apart on screen.

    Labels are TICK_PX high and never shrink: when tokens are closer than MIN_TICK_GAP_PX, only every
    step-th token is labelled (the hover still names every cell). On the x axis (horizontal=True) labels
    stay horizontal when neighbours fit side by side. When they do not: an axis of mostly single characters
    labels fewer tokens (single characters are never rotated); one of words turns its labels to -90 degrees,
    one line of text each, which never overlap once the step is kept.
    """
    n = len(tokens)
    gap = tick_gap(size, horizontal)
    step = max(1, math.ceil(gap / max(px_per_token, 1e-6))) if n else 1
    widths = [label_px(plain_token(t), size) for t in tokens]
    singles = sum(len(plain_token(t)) == 1 for t in tokens)

    def fits(step: int) -> bool:
        shown = widths[::step]
        return all((a + b) / 2 + 3 <= px_per_token * step for a, b in zip(shown, shown[1:], strict=False))

    angle = 0
    if horizontal and n and not fits(step):
        if 2 * singles >= n:
            while step < n and not fits(step):
                step += 1
        else:
            angle = -90
    vals = list(range(0, n, step))
    return Ticks(vals, [display_token(tokens[i]) for i in vals], angle, step, size)


def readable_layout(layout: dict, tick_px: int = TICK_PX) -> dict:
    """`readable` for a layout still being built as a plain dict (its axes are the "xaxis..." and "yaxis..." keys
    it holds): changed in place and returned, for a figure then made in one go."""
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")):
            font = axis.setdefault("tickfont", {})
            font.update(color=TICK_COLOR, size=max(tick_px, font.get("size") or 0))
            axis.setdefault("title", {}).setdefault("font", {}).update(color=TEXT_COLOR, size=tick_px)
    layout.setdefault("title", {}).setdefault("font", {}).update(color=TEXT_COLOR, size=tick_px + 3)
    layout.setdefault("legend", {}).setdefault("font", {}).update(color=TEXT_COLOR, size=tick_px)
    # FONT_FAMILY everywhere (CJK included): Streamlit's chart theme names its own font for titles and hover labels
    layout.setdefault("font", {})["family"] = FONT_FAMILY
    layout["title"]["font"]["family"] = FONT_FAMILY
    layout.setdefault("hoverlabel", {}).setdefault("font", {})["family"] = FONT_FAMILY
    return layout


def readable(fig, tick_px: int = TICK_PX):
    """Dark text at least tick_px high on every axis, title and legend of a figure (Streamlit's theme draws
    ticks grey, about 3.7:1 on white), in FONT_FAMILY; sizes already larger stay. Returns the figure.

    One layout update for every axis at once: an update per property and axis (plotly validates and walks the
    figure's paths each time) cost a grid of heads more than the rest of its page."""
    changes: dict = {}
    for axis in (*fig.select_xaxes(), *fig.select_yaxes()):
        changes[axis.plotly_name] = dict(tickfont=dict(size=axis.tickfont.size), title={})
    return fig.update_layout(readable_layout(changes, tick_px))


def ensure_readable(fig, tick_px: int = TICK_PX):
    """`readable` for a finished figure, cheaply: only the axes, colour bars, legend and annotations whose text is not
    yet dark and at least tick_px high are changed (most builders already made theirs so). Returns the figure.

    Read from the layout's plain JSON and changed in one update: `readable` walks every axis through plotly's
    objects, which cost a 48-panel overview more than building it."""
    layout = fig.layout.to_plotly_json()

    def small(font: dict | None) -> bool:
        return not font or (font.get("size") or 0) < tick_px or not font.get("color")

    changes: dict = {}
    for name, axis in layout.items():
        if not name.startswith(("xaxis", "yaxis")):
            continue
        fix: dict = {}
        if axis.get("showticklabels") is not False and small(axis.get("tickfont")):
            fix["tickfont"] = dict(size=max(tick_px, (axis.get("tickfont") or {}).get("size") or 0), color=TICK_COLOR)
        title = axis.get("title") or {}
        if title.get("text") and small(title.get("font")):
            fix["title"] = dict(
                font=dict(size=max(tick_px, (title.get("font") or {}).get("size") or 0), color=TEXT_COLOR)
            )
        if axis.get("type") == "log" and axis.get("dtick") is None and axis.get("showticklabels") is not False:
            fix["dtick"] = 1  # powers of ten only: plotly labels the 2s and 5s between them at 3/4 of the size
        if fix:
            changes[name] = fix
    for name, axis in layout.items():
        if name.startswith("coloraxis"):
            bar = _readable_colorbar(axis.get("colorbar") or {}, tick_px, small)
            if bar:
                changes[name] = dict(colorbar=bar)
    if any(getattr(trace, "text", None) is not None for trace in fig.data):
        # text drawn on bars shrinks to fit its bar (the top-k's 11 px percentages): never below the tick size
        if ((layout.get("uniformtext") or {}).get("minsize") or 0) < tick_px:
            changes["uniformtext"] = dict(minsize=tick_px, mode="show")
    if small((layout.get("legend") or {}).get("font")):
        changes["legend"] = dict(font=dict(size=tick_px, color=TEXT_COLOR))
    title = layout.get("title") or {}
    if title.get("text") and small(title.get("font")):
        changes["title"] = dict(font=dict(size=tick_px + 3, color=TEXT_COLOR))
    notes = layout.get("annotations") or []
    if any(small(note.get("font")) for note in notes):
        changes["annotations"] = [
            {**note, "font": {**(note.get("font") or {}), "size": max(tick_px, (note.get("font") or {}).get("size") or 0),
                              "color": (note.get("font") or {}).get("color") or TEXT_COLOR}}
            if small(note.get("font")) else note
            for note in notes
        ]  # fmt: skip
    if (layout.get("font") or {}).get("family") != FONT_FAMILY:
        changes.update(FONTS)
    if changes:
        fig.update_layout(changes)
    for trace in fig.data:  # a trace's own colour bar (traces on a shared colour axis have none)
        if "colorbar" in trace and trace.coloraxis is None and trace.showscale is not False:
            bar = _readable_colorbar(trace.colorbar.to_plotly_json(), tick_px, small)
            if bar:
                trace.colorbar.update(bar)
        marker = getattr(trace, "marker", None)  # a scatter's markers coloured by a value: their colour bar
        if marker is not None and "colorbar" in marker and marker.showscale and marker.coloraxis is None:
            bar = _readable_colorbar(marker.colorbar.to_plotly_json(), tick_px, small)
            if bar:
                marker.colorbar.update(bar)
        if trace.type == "heatmap" and trace.text is not None and (trace.textfont.size or 0) < tick_px:
            trace.textfont.size = tick_px  # numbers in the cells (their colour: plotly's contrast with each cell)
        if trace.type == "bar" and trace.text is not None and small(trace.outsidetextfont.to_plotly_json()):
            # text beside a bar is drawn in the template's grey unless told (text inside stays white on the bar)
            trace.outsidetextfont = dict(size=max(tick_px, trace.outsidetextfont.size or 0), color=TEXT_COLOR)
    return fig


DEFAULT_HEIGHT_PX = 450  # plotly's height for a figure that names none


def thin_row_labels(fig, size: int = TICK_PX):
    """Every y axis that names its rows (ticks given as an array, whole rows a fixed number apart), drawn in fewer
    pixels than two labels of `size` need one above the other (tick_gap): only every step-th of its labels is kept,
    as token_ticks does (the hover still names every row). For a figure made shorter or given larger text than its
    builder planned (presentation mode's height cap and 18 px text). The plot's height is the figure's less its top
    margin and room for an x axis's labels and title at the bottom. Returns the figure."""
    layout = fig.layout.to_plotly_json()
    margin = layout.get("margin") or {}
    top = margin["t"] if margin.get("t") is not None else 100
    bottom = max(margin["b"] if margin.get("b") is not None else 80, 2 * size + 16)
    plot_px = (layout.get("height") or DEFAULT_HEIGHT_PX) - top - bottom
    changes: dict = {}
    for name, axis in layout.items():
        if not name.startswith("yaxis"):
            continue
        vals, text = axis.get("tickvals"), axis.get("ticktext")
        if axis.get("tickmode") != "array" or axis.get("showticklabels") is False or not vals or text is None:
            continue
        if len(vals) < 2 or not all(isinstance(v, int | float) and float(v).is_integer() for v in vals):
            continue  # one label, or labels of categories (names, not rows)
        spacing = vals[1] - vals[0]
        if spacing < 1 or any(b - a != spacing for a, b in zip(vals, vals[1:], strict=False)):
            continue
        shown = axis.get("range")
        rows = abs(shown[1] - shown[0]) if shown else vals[-1] - vals[0] + spacing
        low, high = axis.get("domain") or (0, 1)
        apart = plot_px * (high - low) / max(rows, 1) * spacing  # px between two labels
        need = tick_gap(size, horizontal=False)
        if apart < need:
            step = math.ceil(need / max(apart, 1e-6))
            changes[name] = dict(tickvals=list(vals[::step]), ticktext=list(text[::step]))
    if changes:
        fig.update_layout(changes)
    return fig


def _readable_colorbar(bar: dict, tick_px: int, small) -> dict:
    """The changes that make a colour bar's tick labels and title dark and at least tick_px high ({} if none)."""
    fix: dict = {}
    if small(bar.get("tickfont")):
        fix["tickfont"] = dict(size=max(tick_px, (bar.get("tickfont") or {}).get("size") or 0), color=TICK_COLOR)
    title = bar.get("title") or {}
    if title.get("text") and small(title.get("font")):
        fix["title"] = dict(font=dict(size=max(tick_px, (title.get("font") or {}).get("size") or 0), color=TEXT_COLOR))
    return fix
