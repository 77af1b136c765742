"""Occlusion: log p(y_t) - log p(y_t with source token s replaced by `replacement`: "unk" or "pad"), the decoder
input held fixed; the reference of the agreement table."""

from __future__ import annotations

from i18n import N_

from . import Choice
from .passes import occlusion, special_id

NAME = "occlusion"
TITLE = N_("Occlusion")
EXPLANATION = N_(
    "**Occlusion**: how much the output token's log-probability drops when this one source token is replaced "
    "(by the token chosen below), the decoder input held fixed. What the model actually uses: the reference "
    "of the agreement table."
)
SETTINGS = (
    Choice(
        "replacement", "attr_occ", "unk", {"unk": N_("<unk>"), "pad": N_("<pad>")}, N_("Occlusion replaces a token by")
    ),
)
CHEAP = True


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    rid = special_id(tokenizer, options["replacement"])
    scores, logp = occlusion(model, prep, rid, changes, batch_size, progress)
    return scores, {"replacement": tokenizer.source.token(rid)}, {"log_probs": logp}
