"""Step-by-step decoding: what the decoder sees and looks at for every token it writes.

The strategy menu, its settings and what the page shows for it come from the strategies' registry (library half:
model/decoding/NAME.py; app half: ui/views/decoding_views/NAME.py); this page names none of them."""

import streamlit as st

from i18n import _
from ui.shell.session import require_session
from ui.shell.shapes import NO_DECODER, requires
from ui.views import decoding_strategy as strategies
from ui.views import interventions_ui as heads_ui

st.title(_("Step-by-step decoding"))
session = require_session()
requires(session.model.config.has_decoder, NO_DECODER)  # an encoder alone writes nothing
strategy = strategies.choose(session.model.config.tgt_vocab_size)
changes = heads_ui.head_switch("dec", session)  # heads switched off (dec_off in the link), for every strategy
strategy.view(session, changes)
