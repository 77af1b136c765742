"""The Attention page at long inputs: maps longer than a chart carries (viz/pooling.MAX_CELLS a side), read from the
lazy capture (a map is computed when a view asks for it, in row blocks) and drawn pooled, with a window at full
resolution.

The lazy capture's API: `map(kind, layer, head)` (Tq, Tk), `map_rows(kind, layer, head, rows)`, `summary(kind)`
(per-head (L, H) summaries: first_token, previous_token, diagonal, entropy, mean distance), `shape(kind)` (Tq, Tk),
`n_heads`, `source_tokens`, `target_tokens`. The figures are built here without Streamlit (`one_head`, `head_grid`,
`overview`, `sinks`), so that a test measures what the page sends; `show_view` draws the view the page chose, with
its controls (pooling, the window), which live in the URL: att_pool, att_q, att_k, att_stat.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import streamlit as st

from i18n import N_, _, message_of
from ui.serving.bounded_cache import BoundedCache
from ui.shell.safe_text import md
from ui.shell.url_state import Key, Keys
from viz import attention_figs, overview_figs, pooled_figs, sinks
from viz.pooling import HOWS, MAX_CELLS, Pooled, default_range, fit_range, panel_cells, pool, pool_rows
from viz.tokens import Rows, as_rows

THUMBNAIL_CELLS = overview_figs.THUMBNAIL_CELLS  # the all-layers overview's thumbnails: at most 48 cells a side
POOLED: BoundedCache[Pooled] = BoundedCache("pooled maps", max_entries=1024, max_bytes=64 * 2**20)


def parse_range(raw: str) -> tuple[int, int]:
    """A window's side in a link, "40-103" (inclusive positions) -> (40, 103)."""
    lo, sep, hi = raw.partition("-")
    if not sep:
        raise ValueError(raw)
    return int(lo), int(hi)


def range_text(value: Sequence[int] | None) -> str | None:
    return None if value is None else f"{int(value[0])}-{int(value[1])}"


URL = Keys(
    Key("att_pool", "max", choices=HOWS),
    Key("att_q", cast=parse_range, encode=range_text, resets="input", what=N_("the window's queries")),
    Key("att_k", cast=parse_range, encode=range_text, resets="input", what=N_("the window's keys")),
    Key("att_stat", "first_token", choices=tuple(pooled_figs.SUMMARIES)),
)
POOLING = N_("Drawing every head's map in blocks…")
SUMMARIZING = N_("Summarizing every head's map…")
HOW_LABELS = {"max": N_("max of each block"), "mean": N_("mean of each block")}


def is_long(*lengths: int) -> bool:
    """Whether a map with sides of these lengths is longer than a chart carries (it is then pooled)."""
    return max(lengths, default=0) > MAX_CELLS


def long_capture(session, changes):
    """The session's lazy capture when a map of its input is longer than a chart carries (the Attention page then
    draws pooled views from it); None when every map fits (the eager capture serves). A pass stopped by its worker
    (the deadline, the memory limit, Cancel) or refused by the budget says why, and the page stops there."""
    from model.analysis.budget import BudgetExceeded
    from ui.serving.workers import WorkerStopped

    if not is_long(*map_sides(session)):
        return None
    try:
        return session_lazy(session, changes)
    except (WorkerStopped, BudgetExceeded) as stopped:
        st.warning(md(message_of(stopped)))
        st.stop()


def session_lazy(session, changes):
    """The session's lazy capture, capture(..., lazy=True): what one fused pass keeps (it grows with the tokens, not
    their square), every map computed when a view asks; once per (model key, text, target, interventions), the pass
    in a limited worker with progress and Cancel when it is long (ui/serving/caches.cached_lazy_capture). With the decoder
    reading the model's own output, on the shared decode's ids, as the eager capture."""
    from ui.serving import caches

    model_key, text, target = caches.input_key(session)
    return caches.cached_lazy_capture(model_key, text, target, session.model, session.tokenizer, changes)


def map_sides(session) -> tuple[int, int]:
    """(S, T): the source and decoder positions the session's capture holds, counted without it (from the tokens,
    and the shared greedy decode when the decoder reads the model's own output). A decoder-only model's prompt
    longer than a chart is long whatever it writes: (0, its prompt), and its decode runs with the lazy capture (in
    the worker, for a long pass) instead of here."""
    from model.analysis.budget_input import source_length
    from model.text.bounded import read_bounded
    from ui.serving import caches

    model, tok, (model_key, text, target) = session.model, session.tokenizer, caches.input_key(session)
    cfg = model.config
    S = source_length(tok.source, cfg, text) if cfg.has_encoder else 0
    if not cfg.has_decoder:
        return S, 0
    if not cfg.has_encoder and target is None and (model_key, text) not in caches.DECODES:
        prompt = len(read_bounded(tok.source, text, cfg.max_len).ids)
        if prompt > MAX_CELLS:
            return 0, prompt
    if target is not None:
        written = len(read_bounded(tok.target, target, cfg.max_len).ids)
    else:
        written = len([i for i in caches.own_output(model_key, text, model, tok) if i != tok.target.eos_id])
    prompt = len(read_bounded(tok.source, text, cfg.max_len).ids) if not cfg.has_encoder else 1  # <s> or the prompt
    return S, min(prompt + written, cfg.max_len)


@dataclass(frozen=True)
class MapShape:
    """The (L, H, Tq, Tk) of one kind of attention, where the page reads `weights.shape` of an eager array."""

    shape: tuple[int, int, int, int]


def map_shapes(lazy, config) -> dict[str, MapShape]:
    """kind -> MapShape of a lazy capture, for every kind of attention the model's shape has."""
    layers = {
        "encoder_self": config.n_encoder_layers if config.has_encoder else 0,
        "decoder_self": config.n_decoder_layers if config.has_decoder else 0,
        "cross": config.n_decoder_layers if config.has_encoder and config.has_decoder else 0,
    }
    return {kind: MapShape((n, lazy.n_heads, *lazy.shape(kind))) for kind, n in layers.items() if n}


def rows_reader(lazy, kind: str, layer: int, head: int | str) -> Callable[[slice], np.ndarray]:
    """rows -> that head's rows of the map (head "average": the mean over the layer's heads, one head at a time)."""
    if head != "average":
        return lambda rows: lazy.map_rows(kind, layer, int(head), rows)

    def average(rows: slice) -> np.ndarray:
        total = None
        for h in range(lazy.n_heads):
            part = np.asarray(lazy.map_rows(kind, layer, h, rows), dtype=np.float64)
            total = part if total is None else total + part
        return (total / lazy.n_heads).astype(np.float32)

    return average


def pooled(lazy, kind: str, layer: int, head: int | str, cells: int = MAX_CELLS, key: tuple = ()) -> Pooled:
    """One head's map (or the heads' average) pooled to at most `cells` a side, read in row blocks; kept in POOLED
    under `key` (what the capture depends on: model, input, interventions) when one is given."""
    return pooled_heads(lazy, kind, [(layer, head)], cells, key)[0]


def _pool_one(lazy, kind: str, layer: int, head: int | str, cells: int) -> Pooled:
    Tq, Tk = lazy.shape(kind)
    return pool_rows(rows_reader(lazy, kind, layer, head), Tq, Tk, cells, causal=kind == "decoder_self",
                     window=layer_window(lazy, kind, layer))  # fmt: skip


def pooled_heads(lazy, kind: str, heads: Sequence[tuple[int, int | str]], cells: int, key: tuple = ()) -> list[Pooled]:
    """pooled() of every (layer, head): those not in POOLED computed together, in a limited worker with a progress
    bar and Cancel when their maps cost more than about a second (every head of a long input: minutes), else here."""
    from ui.serving import caches

    keys = [(*key, kind, layer, head, cells) for layer, head in heads]
    found = [POOLED.lookup(k) if key else (False, None) for k in keys]
    values = [value for _, value in found]
    missing = [i for i, (hit, _) in enumerate(found) if not hit]
    if missing:
        maps = sum(lazy.n_heads if heads[i][1] == "average" else 1 for i in missing)

        def build(progress=None) -> list[Pooled]:
            out = []
            for n, i in enumerate(missing):
                out.append(_pool_one(lazy, kind, *heads[i], cells))
                if progress is not None:
                    progress(n + 1, len(missing))
            return out

        made = caches.bounded_run(maps * lazy.map_ops(kind), build, key=(*key, kind, "pooled", len(missing)),
                                  label=POOLING, progress=None)  # fmt: skip
        for i, value in zip(missing, made, strict=True):
            values[i] = value
            if key:
                POOLED.put(keys[i], value)
    return values


def summary(lazy, kind: str, key: tuple = ()) -> dict[str, np.ndarray]:
    """lazy.summary(kind): one pass over every head's map, in a limited worker (progress bar, Cancel) when it costs
    more than about a second (a long input of a deep model: minutes); then kept with the capture."""
    from ui.serving import caches

    if not lazy.summarized(kind):
        ops = lazy.n_layers(kind) * lazy.n_heads * lazy.map_ops(kind)
        values = caches.bounded_run(ops, lazy.summary, kind, key=(*key, kind, "summary"), label=SUMMARIZING)
        if not lazy.summarized(kind):  # computed in a worker: kept here too
            lazy.keep_summary(kind, values)
    return lazy.summary(kind)


def stacked(parts: Sequence[Pooled]) -> Pooled:
    """Pooled maps of equal blocks stacked along a new first axis."""
    first = parts[0]
    return Pooled(np.stack([p.max for p in parts]), np.stack([p.mean for p in parts]), first.q_edges, first.k_edges)


def layer_window(cap, kind: str, layer: int) -> int | None:
    """A local layer's sliding window (Capture.windows), None for a global layer or a model without local layers."""
    windows = getattr(cap, "windows", {}).get(kind)
    return windows[layer] if windows else None


def window_of(lazy, kind: str, q: tuple[int, int], k: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """The window's (queries, keys), inclusive, fitted inside the map and to at most MAX_CELLS a side."""
    Tq, Tk = lazy.shape(kind)
    return fit_range(*q, Tq), fit_range(*k, Tk)


def one_head(lazy, kind: str, layer: int, head: int | str, how: str, q: tuple[int, int], k: tuple[int, int],
             rows: Rows | Sequence[str], k_tokens: Sequence[str], title: str, labels: tuple[str, str],
             key: tuple = (), **size) -> list:  # fmt: skip
    """The one-head view: the whole map pooled, the window outlined on it, and the window at full resolution.
    labels: (query side, key side) names; size: max_height, max_width, tick_px."""
    rows = as_rows(rows)
    q, k = window_of(lazy, kind, q, k)
    whole = pooled(lazy, kind, layer, head, key=key)
    big = pooled_figs.pooled_heatmap(whole, how, rows.tokens, k_tokens, title, *labels, window=(*q, *k), **size)
    near = np.asarray(rows_reader(lazy, kind, layer, head)(slice(q[0], q[1] + 1)))[:, k[0] : k[1] + 1]
    shape = (q[1] - q[0] + 1, k[1] - k[0] + 1)  # a local layer's band masked too (the window of the map)
    mask = (
        attention_figs.window_mask(*shape, layer_window(lazy, kind, layer), q[0], k[0])
        if kind == "decoder_self"
        else None
    )
    zoom = attention_figs.attention_heatmap(
        near, rows.window(q[0], q[1] + 1), k_tokens[k[0] : k[1] + 1],
        _("{title}: queries {q0}–{q1}, keys {k0}–{k1}, every weight").format(
            title=title, q0=q[0], q1=q[1], k0=k[0], k1=k[1]),
        mask=mask, query_label=labels[0], key_label=labels[1], start=(q[0], k[0]), **size,
    )  # fmt: skip
    return [big, zoom]


def head_grid(lazy, kind: str, layer: int, how: str, rows: Rows | Sequence[str], k_tokens: Sequence[str],
              title: str, key: tuple = (), **size) -> list:  # fmt: skip
    """Every head of one layer as a pooled thumbnail: together about MAX_CELLS x MAX_CELLS cells."""
    cells = panel_cells(lazy.n_heads)
    heads = stacked(pooled_heads(lazy, kind, [(layer, h) for h in range(lazy.n_heads)], cells, key))
    return [pooled_figs.pooled_grid(heads, how, as_rows(rows).tokens, k_tokens, title, **size)]


def grid_of(weights: np.ndarray, rows: Rows | Sequence[str], k_tokens: Sequence[str], title: str,
            mask: np.ndarray | None, size: dict):  # fmt: skip
    """All heads of a layer of a short input, (H, Tq, Tk): grid_figure, with the pooling control (att_pool, in the
    URL) when the heads are pooled."""
    how = "max"
    if weights.size > MAX_CELLS**2:
        how = URL.read("att_pool")
        st.radio(_("Pooling"), HOWS, key="att_pool", horizontal=True, format_func=lambda h: _(HOW_LABELS[h]))
        URL.write(att_pool=how)
    return grid_figure(weights, rows, k_tokens, title, mask, how, **size)


def grid_figure(weights: np.ndarray, rows: Rows | Sequence[str], k_tokens: Sequence[str], title: str,
                mask: np.ndarray | None, how: str = "max", **size):  # fmt: skip
    """Every weight of every head (attention_figs.head_grid) when the heads hold at most MAX_CELLS x MAX_CELLS cells
    together, else each head pooled by `how` to a thumbnail (together about as many cells)."""
    n_heads = weights.shape[0]
    if weights.size <= MAX_CELLS**2:
        return attention_figs.head_grid(weights, rows, k_tokens, title, mask=mask, **size)
    heads = pool(weights, panel_cells(n_heads), mask)
    return pooled_figs.pooled_grid(heads, how, as_rows(rows).tokens, k_tokens, title, **size)


def overview(lazy, kind: str, n_layers: int, how: str, stat: str, title: str, key: tuple = ()) -> list:
    """The all-layers view: each head's summary (the one chosen coloured, all in the hover), then every layer x head
    as a pooled thumbnail."""
    summed = pooled_figs.summary_map(summary(lazy, kind, key), stat, _("{title}: each head's summary").format(
        title=title))  # fmt: skip
    cells = min(THUMBNAIL_CELLS, panel_cells(n_layers * lazy.n_heads))
    every = pooled_heads(lazy, kind, [(i, h) for i in range(n_layers) for h in range(lazy.n_heads)], cells, key)
    thumbs = stacked([stacked(every[i * lazy.n_heads : (i + 1) * lazy.n_heads]) for i in range(n_layers)])
    return [summed, overview_figs.pooled_overview(thumbs, how, _("{title}: rows are layers, columns heads").format(
        title=title))]  # fmt: skip


def sink_view(lazy, kind: str, k_tokens: Sequence[str], title: str, key: tuple = ()) -> list:
    """Each head's share of attention on the first token, from the summaries (no map is drawn)."""
    share = np.asarray(summary(lazy, kind, key)["first_token"], dtype=np.float32)
    return [sinks.sink_map(share, k_tokens[0], _("{title}: share of attention on the first token").format(title=title))]


def _window_slider(name: str, label: str, n: int, keys: Keys = URL, default: tuple[int, int] | None = None):
    """A range slider over n positions for one side of the window, its value kept in the URL (keys[name]); the
    range shown: at most MAX_CELLS positions from its start."""
    value = keys.read(name, default or default_range(n), ok=lambda v: len(v) == 2 and 0 <= v[0] <= v[1] < n)
    st.session_state[name] = tuple(value)
    st.slider(label, 0, n - 1, key=name)
    return fit_range(*st.session_state[name], n)


def key_window(keys: Keys, name: str, n: int) -> slice:
    """The keys Inside attention draws: every key of a short input; of a long one (more than MAX_CELLS keys), a
    window of at most MAX_CELLS chosen with a range slider (keys[name], in the URL), first the Attention page's."""
    if n <= MAX_CELLS:
        return slice(0, n)
    seen = st.session_state.get("att_k")  # the Attention page's window of this session, if it had one
    default = fit_range(*seen, n) if isinstance(seen, (tuple, list)) and len(seen) == 2 else None
    lo, hi = _window_slider(name, _("Window: key positions (at most {n})").format(n=MAX_CELLS), n, keys, default)
    st.caption(_("A long input: the charts below show keys {lo}–{hi} of {n}; the weights and entropies are the whole "
                 "row's.").format(lo=lo, hi=hi, n=n))  # fmt: skip
    return slice(lo, hi + 1)


def show_view(lazy, view: str, kind: str, layer: int, head: int | str, n_layers: int, rows: Rows,
              k_tokens: Sequence[str], labels: tuple[str, str], title: str, key: tuple, size: dict) -> None:  # fmt: skip
    """The view `view` of a long input (one, grid, overview, sinks; bertviz is offered for short inputs only), with
    its controls; figures are drawn with ui.shell.presentation.show. key: what the capture depends on (POOLED's key)."""
    from ui.shell.presentation import show

    Tq, Tk = lazy.shape(kind)
    st.caption(
        _(
            "A long input ({q} × {k} positions): maps longer than {cells} positions a side are drawn in blocks, each "
            "block's max or mean; the window below shows every weight of the positions you choose."
        ).format(q=Tq, k=Tk, cells=MAX_CELLS)
        if view == "one"
        else _("A long input ({q} × {k} positions): maps are drawn in blocks, each block's max or mean.").format(
            q=Tq, k=Tk
        )
    )
    how = URL.read("att_pool")
    if view in ("one", "grid", "overview"):
        st.radio(_("Pooling"), HOWS, key="att_pool", horizontal=True, format_func=lambda h: _(HOW_LABELS[h]))
    q = k = stat = None
    if view == "one":
        left, right = st.columns(2)
        with left:
            q = _window_slider("att_q", _("Window: query positions (at most {n})").format(n=MAX_CELLS), Tq)
        with right:
            k = _window_slider("att_k", _("Window: key positions (at most {n})").format(n=MAX_CELLS), Tk)
        figs = one_head(lazy, kind, layer, head, how, q, k, rows, k_tokens, title, labels, key, **size)
    elif view == "grid":
        figs = head_grid(lazy, kind, layer, how, rows, k_tokens, _("{title}, layer {layer}").format(
            title=title, layer=layer), key, **size)  # fmt: skip
    elif view == "overview":
        stats = pooled_figs.present_summaries(summary(lazy, kind, key))
        stat = URL.read("att_stat", choices=stats)
        st.selectbox(_("Summary"), stats, key="att_stat",
                     format_func=lambda s: _(pooled_figs.SUMMARIES[s][0]))  # fmt: skip
        figs = overview(lazy, kind, n_layers, how, stat, title, key)
    elif view == "sinks":
        figs = sink_view(lazy, kind, k_tokens, title, key)
    else:
        st.info(_("bertviz draws every weight of every head: it is offered for inputs of at most {n} positions.").format(
            n=MAX_CELLS))  # fmt: skip
        figs = []
    for i, fig in enumerate(figs):
        show(fig, key=f"att_long_{view}_{i}")
    URL.write(att_pool=how if view in ("one", "grid", "overview") else None, att_q=q, att_k=k, att_stat=stat)
