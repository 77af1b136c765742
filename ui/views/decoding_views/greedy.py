"""Greedy decoding on the decoding page: the step viewer, where a reader may continue from another candidate."""

from __future__ import annotations

from i18n import N_
from ui.serving import caches
from ui.shell.explain import explain_row
from ui.views import decoding_steps as steps

EXPLANATION = (
    N_("Greedy decoding"),
    N_(
        "The decoder starts from `<s>`, and at each step writes the single most probable next token, appends it "
        "to its input, and repeats until it writes `</s>` (or reaches the length limit). Earlier positions' keys "
        "and values are kept (a cache), so each step computes only the newest position."
    ),
    (r"y_{t+1}=\arg\max_y\; P(y \mid y_{\le t},\, x)",),
)


def view(session, strategy, changes) -> None:
    prefix = steps.forced_prefix(session.model.config.tgt_vocab_size)
    trace = caches.cached_trace(session.key, session.check.text, prefix, steps.shown(), session.model,
                                session.tokenizer, changes)  # fmt: skip
    playing, effect = steps.step_view(session, trace, changes, override=True, prefix=prefix)
    steps.label_smoothing(session)
    explain_row(EXPLANATION, "specials", config=session.model.config)
    steps.alignment_view(session, trace, changes)
    steps.finish(session, changes, playing, effect)
