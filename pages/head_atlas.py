"""Head atlas: what each head does over many inputs (model/analysis/head_atlas.py), each role tested by switching
its top heads off against random heads; a clicked head's scores, typical map and the inputs where it fires most."""

import numpy as np
import streamlit as st

from i18n import _, message_of
from model.analysis.head_scores import ROLES
from ui.serving.workers import WorkerStopped
from ui.shell.figure_download import download_row
from ui.shell.presentation import chart_box, chart_text_px, show
from ui.shell.safe_text import esc, md
from ui.shell.session import require_session
from ui.views.head_atlas_ui import (
    CORPORA,
    KIND_TITLES,
    ROLE_TITLES,
    URL,
    VERDICTS,
    alignment_for,
    atlas_for,
    corpus_choices,
    kind_choices,
)
from viz import attention_figs
from viz.atlas_figs import alignment_grid, head_roles_bar, role_grid

st.title(_("Head atlas"))
session = require_session(valid_input=False)

kinds = kind_choices(session.model, session.card)
kind = URL.read("atl_kind", kinds[0], kinds)
choices = corpus_choices(session.card)
corpus = URL.read("atl_corpus", choices[0], choices)
roles = URL.read("atl_roles", list(ROLES), ROLES)
top, left, right = st.columns([1, 1, 2])
top.selectbox(_("Attention"), kinds, key="atl_kind", format_func=lambda k: _(KIND_TITLES[k]))
URL.write(atl_kind=kind)
if kind == "cross":  # agreement with the gold alignment: one score per head, no roles
    try:
        scores = alignment_for(session)
    except (WorkerStopped, ValueError) as stopped:
        st.warning(md(message_of(stopped)))
        st.stop()
    show(alignment_grid(scores, _("Cross-attention on the gold alignment")), key="atl_cross")
    st.caption(_("Each head's attention on the source tokens the gold alignment links, over its whole attention."))
    st.stop()
left.selectbox(_("Corpus"), choices, key="atl_corpus", format_func=lambda c: _(CORPORA[c]))
right.multiselect(_("Roles"), list(ROLES), key="atl_roles", format_func=lambda r: _(ROLE_TITLES[r]))
URL.write(atl_corpus=corpus, atl_roles=roles)
st.caption(
    _(
        "Induction and duplicate-token scores read random tokens repeated twice; the other roles read the corpus. "
        "A head's score is TransformerLens's: its attention on the role's pattern over its whole attention, the mean "
        "over the inputs; a perfect induction head scores about half (the first copy's rows count too)."
    )
)
if not roles:
    st.info(_("Choose at least one role."))
    st.stop()
try:
    atlas = atlas_for(session, corpus, roles, kind)
except WorkerStopped as stopped:
    st.warning(md(message_of(stopped)))
    st.stop()
except ValueError as err:  # an input the model cannot read: said, never a traceback
    st.error(_("The atlas could not be computed: {why}").format(why=md(message_of(err))))
    st.stop()

titles = [_(ROLE_TITLES[r]) for r in atlas.roles]
L, H = atlas.shape
strongest = atlas.strongest()
relative = np.stack([atlas.relative(r) for r in atlas.roles])
first = atlas.roles[0]
best = np.unravel_index(int(np.argmax(atlas.relative(first))), (L, H))
layer = URL.read("atl_layer", int(best[0]), range(L))
head = URL.read("atl_head", int(best[1]), range(H))


def clicked() -> None:
    """A square of the grid was clicked: that head becomes the one shown."""
    event = st.session_state.get("atl_grid") or {}
    for point in (event.get("selection") or {}).get("points") or []:
        try:  # what the browser sent: checked like any other input
            y, x = int(point["y"]), int(point["x"])
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= y < L and 0 <= x < H:
            st.session_state["atl_layer"], st.session_state["atl_head"] = y, x


show(
    role_grid(strongest, atlas.strength(), relative, titles, (layer, head), _("Each head's strongest role")),
    key="atl_grid",
    on_select=clicked,
    selection_mode="points",
)
st.caption(
    _(
        "Colour: the role a head scores highest in (as a share of a perfect head's score). Opacity: how much the "
        "role's loss rises when that head alone is switched off (faint: not tested alone; a role's first three top "
        "heads are). Click a square to see that head."
    )
)

rows = []
for role, title in zip(atlas.roles, titles):
    test = atlas.effects.get(role)
    if test is None:
        continue
    spread = test.random_effects
    verdict = _(VERDICTS[test.pattern_only])
    rows.append(
        {
            _("role"): title,
            _("top heads"): ", ".join(f"{a}.{b}" for a, b in test.heads),
            _("loss rise, top heads off"): round(test.effect, 4),
            _("random heads off (min – max)"): f"{min(spread):.4f} – {max(spread):.4f}" if spread else "–",
            _("verdict"): verdict,
        }
    )
if rows:
    st.subheader(_("Tested by switching off"))
    st.dataframe(rows, hide_index=True)
    st.caption(
        _(
            "Each role's top heads switched off together, and as many heads drawn at random ({n} draws): the rise "
            "of the loss on the role's own task (induction: the next token of the repeated half). “Pattern only”: "
            "the top heads matter no more than random ones."
        ).format(n=len(next(iter(atlas.effects.values())).random_losses))
    )

st.subheader(_("Layer {layer}, head {head}").format(layer=layer, head=head))
a, b = st.columns(2)
a.selectbox(_("Layer"), list(range(L)), key="atl_layer")
b.selectbox(_("Head"), list(range(H)), key="atl_head")
URL.write(atl_layer=layer, atl_head=head)
left, right = st.columns(2)
show(
    head_roles_bar(titles, relative[:, layer, head], _("Scores per role")),
    key="atl_bar",
    where=left,
)
typical = atlas.typical[layer, head]
n = typical.shape[0]
positions = [str(i) for i in range(n)]
max_height, max_width = chart_box()
show(
    attention_figs.attention_heatmap(
        typical,
        positions,
        positions,
        _("Typical map (mean over the corpus, first {n} positions)").format(n=n),
        max_height=max_height,
        max_width=int(max_width * 0.45),
        tick_px=chart_text_px(),
        snug=True,
    ),  # fmt: skip
    key="atl_typical",
    where=right,
)
role = atlas.roles[int(strongest[layer, head])]
st.markdown(_("**Where it fires most** ({role}):").format(role=esc(_(ROLE_TITLES[role]))))
group = atlas.labels[atlas.group_of(role)]
for index, score in atlas.top_examples(role, layer, head):
    st.markdown(f"- `{score:.2f}` " + esc(" ".join(group[index])))

download_row(
    (_("Download the atlas (.json)"), atlas.json_bytes, "head_atlas.json", "atl_dl_json"),
    (_("Download the scores (.npz)"), atlas.to_npz, "head_atlas.npz", "atl_dl_npz"),
)
