"""Lecture pack page: every view of the current model for a list of inputs, as one HTML file that needs no server."""

import streamlit as st

from i18n import _, language, message_of
from pack.export import folder_pack
from pack.live import PACK_REFUSED
from pack.page import lecture_pack_html
from pack.records import MAX_CHARS, MAX_INPUTS, bounded_inputs, pack_records
from tasks.cards import pack_checks
from ui.serving import caches
from ui.shell.safe_text import md
from ui.shell.session import require_session
from ui.shell.shapes import words
from ui.shell.url_state import Key, Keys

st.title(_("Lecture pack"))
session = require_session(valid_input=False)
st.markdown(
    _(
        "One HTML file with every view of this model for the inputs below: the attention of every layer and head "
        "({kinds}), the positional encoding, and step-by-step greedy decoding with a step "
        "slider. It opens in any browser with no server and no network: copy it to a USB stick and the room has it. "
        "It also carries the model itself, its own graph run by onnxruntime in the page (for models of up to about 7 MB "
        "of weights: every shipped demo): a student types any input into the pack and the page decodes it and draws "
        "every view for it."
    ).format(kinds=_(words(session.model.config).kinds))
)


@st.cache_data(max_entries=4, show_spinner=False)
def pack_html(model_key: str, texts: tuple[str, ...], lang: str, _records) -> str:
    """The pack's HTML for one model, list of inputs and language (its text follows the page's): a few MB, so few
    entries, shared by every session."""
    return lecture_pack_html(_records)


def build(texts: tuple[str, ...]) -> tuple[str, str]:
    """Run the inputs through the app's own caches (the decoding page's too), with a progress bar; the HTML, and why
    the pack does not carry the model ("" when it does)."""
    bar = st.progress(0.0, text=_("Running the model on {n} inputs…").format(n=len(texts)))

    def run(text: str):  # a decoder-only model's capture reads prompt + continuation; an encoder alone writes nothing
        writes = session.model.config.has_decoder
        return (
            caches.cached_capture(session.key, text, None, session.model, session.tokenizer),
            caches.cached_trace(session.key, text, (), 5, session.model, session.tokenizer) if writes else None,
        )

    report = lambda done, total: bar.progress(  # noqa: E731
        done / (total + 1), text=_("Ran {done} of {total} inputs…").format(done=done, total=total)
    )
    records = pack_records(
        session.model, session.tokenizer, texts, session.label, report, run, checks=pack_checks(session.card)
    )
    bar.progress(len(texts) / (len(texts) + 1), text=_("Writing the HTML…"))
    page = pack_html(session.key, texts, language(), records)
    bar.empty()
    return page, _(records.live_note) if records.live is None else ""


# The list comes from a link (pack_inputs) on a session's first visit; otherwise it is prefilled with the current
# input and the model's examples, once per model (what the user typed is kept).
MAX_BOX = MAX_INPUTS * (MAX_CHARS + 1)
URL = Keys(Key("pack_inputs", cast=lambda raw: raw[:MAX_BOX], resets="model"))
URL.read(
    "pack_inputs", default="\n".join(dict.fromkeys(t.strip() for t in [session.text, *session.examples] if t.strip()))
)
raw = st.text_area(
    _("Inputs, one per line (at most {n}, each at most {chars} characters)").format(n=MAX_INPUTS, chars=MAX_CHARS),
    key="pack_inputs",
    height=180,
    max_chars=MAX_BOX,
)
URL.write(pack_inputs=raw)
texts, notes = bounded_inputs(raw.splitlines())
for note in notes:
    st.warning(md(note))

if st.button(_("Build the lecture pack"), key="pack_build", type="primary", disabled=not texts):
    st.session_state["pack_request"] = (session.key, tuple(texts))
request = st.session_state.get("pack_request")
if request and request[0] == session.key:
    try:
        page, no_model = build(request[1])
    except ValueError as err:  # an input the model cannot read at all
        st.error(_("Could not build the pack: {error}").format(error=md(message_of(err))))
    else:
        st.success(_("{n} inputs · {size} MB").format(n=len(request[1]), size=f"{len(page.encode('utf-8')) / 1e6:.1f}"))
        st.download_button(
            _("Download the lecture pack (.html)"),
            page,
            file_name="lecture_pack.html",
            mime="text/html",
            key="pack_download",
            type="primary",
            on_click="ignore",
        )
        if no_model:
            st.info(_(PACK_REFUSED).format(why=no_model))
            if folder_pack(session.model, True):  # too large for one file, not for a folder beside it
                st.info(
                    _(
                        "A folder pack carries this model: index.html with its float16 weights in files beside it. "
                        "This page writes one file only; on your own machine, run `{command}` with the model's "
                        "folder, then open the folder's index.html."
                    ).format(command="transformer-viz pack --model FOLDER --out pack.html")
                )
        if request[1] != tuple(texts):
            st.caption(_("The inputs changed since this pack was built: build it again to include them."))
elif not texts:
    st.info(_("Type at least one input."))
