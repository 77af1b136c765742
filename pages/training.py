"""Training: attention forming while a model learns, from the snapshots its run saved (model/checkpoints/snapshots.py).

A slider over the snapshots' steps shows the cross-attention of the sidebar's input at that step (every
snapshot reads the same decoder input, so the rows stay the same positions), with the exact match of that
snapshot; the scores of every snapshot are a curve beside it. "Play through training" shows the same maps as one
animated figure (viz/training_figs.py) that plays the steps in order in the browser.
"""

import logging

import numpy as np
import streamlit as st

from i18n import _, message_of
from model import CheckpointError
from model.analysis.compare import decoder_input_text
from model.checkpoints.demos import list_demos
from model.checkpoints.snapshots import FOLDER as SNAPSHOTS
from model.decoding.strategy_export import comparison_npz, snapshots_csv
from tasks.gold import alignment_share, gold_alignment, gold_example
from ui.serving import caches
from ui.shell.explain import explain
from ui.shell.figure_download import download_file
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.shell.safe_text import esc, md
from ui.shell.session import require_session
from ui.shell.url_state import Key, Keys, flag, intish, page_link
from ui.views.training_snapshots import (
    CURVE_BYTES,
    DamagedSnapshot,
    checkpoint_folder,
    snapshot_capture,
    snapshot_score_title,
    snapshots_of,
    stored_bytes,
)
from viz import attention_figs
from viz.compare_figs import training_curve
from viz.tokens import capture_rows
from viz.training_figs import training_animation

# default and choices: the snapshots' steps, the model's layers and heads
URL = Keys(
    Key("trn_step", cast=int),
    Key("trn_layer", cast=int),
    Key("trn_head", "average", cast=intish),
    Key("trn_play", False, cast=flag, encode=lambda v: "1" if v else None),
)

_LOG = logging.getLogger(__name__)

st.title(_("Training"))
session = require_session()


folder = checkpoint_folder(session.key)
try:
    snaps = snapshots_of(folder) if folder is not None else None
except (CheckpointError, OSError, ValueError) as err:
    st.error(_("This model's training snapshots could not be read: {why}").format(why=md(message_of(err))))
    st.stop()
except Exception:  # an index no check foresaw: the server log keeps it
    _LOG.warning("reading the snapshots of %s failed", session.key, exc_info=True)
    st.error(_("This model's training snapshots could not be read."))
    st.stop()
if not snaps or not snaps.items:
    # the first shipped demo that has snapshots, found by its folders (not by a name): one click to it, the view kept
    having = next((d for d in list_demos() if (d.path / SNAPSHOTS).is_dir()), None)
    st.info(
        _(
            "This model has no training snapshots. A run of "
            "`python -m model.train --task TASK --out FOLDER --snapshots 8` saves them beside its checkpoint."
        )
    )
    if having is not None:
        link = page_link("training", keep=("lang", "present"), model=f"demo:{having.name}")  # not the text
        label = _("Open the {name} demo here").format(name=having.name)
        st.markdown(f"[{label}]({link})")
    st.stop()

text = session.check.text
cfg = session.model.config
kind = "cross" if "cross" in cfg.attention_kinds else cfg.attention_kinds[0]  # a one-stack model: its self-attention
gold = gold_example(session.card, text) if kind == "cross" else None
if kind != "cross":  # one sequence: the text alone
    target, where = None, ""
elif session.target is not None:
    target, where = session.target, _("the target you typed")
elif gold is not None:
    target, where = gold.target, _("the gold target of this input")
else:
    target = decoder_input_text(caches.session_capture(session), session.tokenizer.target.detokenize)
    where = _("the trained model's own output")
pairs = gold_alignment(session.card, text, target)

steps = snaps.steps
step = URL.read("trn_step", steps[0], steps)  # from the start: the lecture watches attention form, step by step
slide, left, right, last = st.columns([2.4, 1, 1.3, 1.8], vertical_alignment="bottom")  # one row of controls
slide.select_slider(_("Training step"), steps, key="trn_step")
play = URL.read("trn_play")
last.toggle(
    _("Play through training"),
    key="trn_play",
    help=_("Every snapshot in one chart, with Play and Pause: the steps follow one another in the browser."),
)
n_layers = cfg.n_encoder_layers if kind == "encoder_self" else cfg.n_decoder_layers
layer = URL.read("trn_layer", n_layers - 1, range(n_layers))
heads = ["average", *range(session.model.config.n_heads)]
head = URL.read("trn_head", choices=heads)
left.selectbox(_("Layer"), list(range(n_layers)), key="trn_layer", format_func=lambda i: _("layer {i}").format(i=i))
right.selectbox(
    _("Head"),
    heads,
    key="trn_head",
    format_func=lambda h: _("average of heads") if h == "average" else _("head {h}").format(h=h),
)
URL.write(trn_step=step, trn_layer=layer, trn_head=head, trn_play=play)


stored = stored_bytes(snaps)
current = snaps.items[steps.index(step)]
# every snapshot reads the same input and decoder input; all of them only when they are small
captures, damaged = None, None
try:
    if stored <= CURVE_BYTES:
        captures = [snapshot_capture(s, text, target) for s in snaps.items]
except DamagedSnapshot as err:  # the curve needs every snapshot: without it, the step chosen alone
    damaged = err
try:
    shown = captures[steps.index(step)] if captures else snapshot_capture(current, text, target)
except DamagedSnapshot as err:
    st.error(str(err))
    st.stop()
if damaged is not None:
    st.warning(str(damaged))


def chosen_map(capture) -> np.ndarray:
    """The (Tq, Tk) attention map (cross-attention, or a one-stack model's self-attention) the controls choose from one
    snapshot's capture: the layer, a head or their average."""
    maps = getattr(capture, kind)[layer]  # (H, Tq, Tk)
    return maps.mean(axis=0) if head == "average" else maps[int(head)]


which = _("average of heads") if head == "average" else _("head {h}").format(h=head)


def step_title(snapshot) -> str:
    if kind != "cross":
        return _("Step {step}: self-attention, layer {layer}, {which}").format(
            step=snapshot.step, layer=layer, which=which
        )
    em = "–" if snapshot.exact_match is None else f"{snapshot.exact_match:.0%}"
    return _("Step {step} (exact match {em}): cross-attention, layer {layer}, {which}").format(
        step=snapshot.step, em=em, layer=layer, which=which
    )


if target is not None:
    st.caption(
        _("Every snapshot reads this input with {where} as the decoder input: “{target}”.").format(
            where=where, target=esc(target)
        )
    )
max_height, max_width = chart_box()
left, right = st.columns([3, 2])
heatmap = dict(
    key_label=_("source") if kind == "cross" else _("key"),
    gold=pairs,
    max_height=max_height,
    max_width=int(max_width * 0.6),
    tick_px=chart_text_px(),
    snug=True,
)
rows = capture_rows(shown, kind)  # rows: the tokens written (the one convention)
keys = shown.source_tokens if kind != "decoder_self" else shown.target_tokens
if play and captures:  # the maps of the captures above, as frames: no other computation
    figure = training_animation(
        [chosen_map(c) for c in captures],
        steps,
        rows,
        keys,
        [step_title(s) for s in snaps.items],
        start=steps.index(step),
        **heatmap,
    )
else:
    figure = attention_figs.attention_heatmap(chosen_map(shown), rows, keys, step_title(current), **heatmap)
show(figure, key="trn_play_heatmap" if play and captures else "trn_heatmap", where=left)
if play and not captures:
    left.caption(_("Playing needs every snapshot run with this input: here only the step chosen is shown."))
exact = [s.exact_match for s in snaps.items]
held_out = [s.alignment[layer] if layer < len(s.alignment) else None for s in snaps.items]
series = {}
if any(v is not None for v in exact):
    series[_("exact match (held-out)")] = exact
if any(v is not None for v in held_out):
    series[_("alignment, layer {layer} (held-out)").format(layer=layer)] = held_out
for name in dict.fromkeys(n for s in snaps.items for n, _v in s.scores):  # a run's own scores (the index names them)
    series[snapshot_score_title(name)] = [dict(s.scores).get(name) for s in snaps.items]
mine = None
if pairs and captures:
    mine = [alignment_share(c.cross, pairs)[layer] for c in captures]
    series[_("alignment of this input, layer {layer}").format(layer=layer)] = mine
show(
    training_curve(steps, series, current=step, title=_("Scores per snapshot"), tick_px=chart_text_px()),
    key="trn_curve",
    where=right,
)
right.caption(
    _(
        "Held-out: {n} fresh examples, the same for every snapshot. Alignment: the share of output tokens whose "
        "head-averaged cross-attention peaks on the source token they come from (the measure of the model cards)."
    ).format(n=snaps.examples or "?")
)
if captures is None and damaged is None:
    right.caption(_("These snapshots are large: only the one shown is run, so this input has no curve here."))
with left:
    explain("decoder_rows", config=session.model.config)  # rows: the tokens written, as on every page

left, right = st.columns(2)
download_file(
    left,
    _("Download the scores per snapshot (.csv)"),
    lambda: snapshots_csv(steps, exact, held_out, mine),
    "snapshots.csv",
    "trn_dl_csv",
)
ran = captures or [shown]
right.download_button(
    _("Download this input's cross-attention at every snapshot (.npz)")
    if captures
    else _("Download this input's cross-attention at this snapshot (.npz)"),
    lambda: comparison_npz(
        {
            kind: np.stack([getattr(c, kind) for c in ran]),
            "steps": np.asarray(steps if captures else [step]),
        },  # (N, L, H, T, S)
        source_tokens=shown.source_tokens,
        target_tokens=shown.target_tokens,
        # row j of cross writes written_tokens[j], read from target_tokens[j] (the last row: the shown snapshot's next token)
        written_tokens=shown.written_tokens,
    ),
    file_name="snapshots_cross.npz",
    mime="application/octet-stream",
    key="trn_dl_npz",
    on_click="ignore",
)
