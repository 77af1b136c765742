"""Occlusion: log p(y_t) - log p(y_t with source token s replaced by `replacement`: "unk", "pad" or "mask", the
vocabulary's mask token where it has one: BERT's [MASK], BART's <mask>), the decoder
input held fixed; the reference of the agreement table."""

from __future__ import annotations

from i18n import M_, N_

from ..budget import forward_ops, input_plan, pass_bytes
from . import Choice
from .passes import LOGIT_BUDGET, has_special, occlusion, special_id

NAME = "occlusion"
TITLE = N_("Occlusion")
EXPLANATION = N_(
    "**Occlusion**: how much the log-probability of the {written} drops when this one {read} is replaced (by the "
    "token chosen below), {held}. What the model actually uses: the reference of the agreement table."
)
SETTINGS = (
    Choice(
        "replacement", "attr_occ", "unk", {"unk": N_("<unk>"), "pad": N_("<pad>"), "mask": N_("the mask token")},
        N_("Occlusion replaces a token by"), offered=has_special,
    ),
)  # fmt: skip
CHEAP = True


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    rid = special_id(tokenizer, options["replacement"])
    scores, logp = occlusion(model, prep, rid, changes, batch_size, progress)
    return scores, {"replacement": tokenizer.source.token(rid)}, {"log_probs": logp}


BATCH = 64  # most rows of one pass (model.analysis.attribution.attribute's batch_size)


def need(cfg, S: int, T: int) -> tuple[int, int]:
    """(bytes, operations): S + 1 passes (the input and each token replaced), batched as passes.occlusion does
    (at most BATCH rows, their logits within LOGIT_BUDGET); the (S + 1, T) log-probabilities."""
    rows = max(1, min(BATCH, S + 1, LOGIT_BUDGET // max(1, T * cfg.tgt_vocab_size)))
    return rows * pass_bytes(cfg, S, T) + 8 * (S + 1) * T, (S + 1) * forward_ops(cfg, S, T)


plan = input_plan(M_(TITLE), need)  # BudgetExceeded saying what fits (a shorter input)
