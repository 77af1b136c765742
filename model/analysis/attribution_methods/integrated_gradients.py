"""Integrated gradients: Σ_d (x - x')_sd ∫_0^1 ∂ log p(y_t)(x' + α(x - x')) / ∂x_sd dα (Captum IntegratedGradients,
Gauss-Legendre with `steps` points per piece of the path, passes._integrated); x' the baseline: every source token's
embedding replaced by the "pad" (default), "unk" or "mask" token's (where the vocabulary has a mask token), or
"zero" embeddings. Completeness: a row sums to
log p(y_t | x) - log p(y_t | x') within 1% with the default steps."""

from __future__ import annotations

from i18n import M_, N_

from ..budget import OVER_OPS, BudgetExceeded, Plan, backward_bytes, forward_ops, gradient_rows, shorter_input
from . import Choice
from .passes import MIN_PIECE, gradients, has_special, special_id

NAME = "integrated_gradients"
TITLE = N_("Integrated gradients")
EXPLANATION = N_(
    "**Integrated gradients** (Sundararajan et al. 2017, Captum): the gradient averaged along the straight path "
    "from a baseline (below) to the {reads}'s embeddings, times their difference. A row sums to the change in the "
    "log-probability of the {written} from the baseline to the input (completeness; the path is cut into more "
    "pieces until it holds within 0.4%)."
)
BASELINES = {
    "zero": N_("zero embeddings"),
    "pad": N_("the <pad> token everywhere"),
    "unk": N_("the <unk> token everywhere"),
    "mask": N_("the mask token everywhere"),
}
STEPS = {8: "8", 16: "16", 32: "32", 64: "64", 128: "128"}
SETTINGS = (
    Choice("baseline", "attr_base", "pad", BASELINES, N_("Baseline of integrated gradients"), offered=has_special),
    Choice("steps", "attr_steps", 32, STEPS, N_("Points per piece of the path")),
)
CHEAP = False  # a backward pass per point of the path, the path cut into pieces until complete: seconds
ADAPTIVE = True  # its halving loop takes what the budget leaves: planned after the other methods (attribution.plans)
MAX_PIECES_PER_ROW = 2 * round(1 / MIN_PIECE) - 1  # halving down to MIN_PIECE of the path: at most 511 pieces a row


def compute(model, tokenizer, source, target, prep, changes, options, batch_size, progress):
    baseline, steps = options["baseline"], options["steps"]
    base_id = None if baseline == "zero" else special_id(tokenizer, baseline)
    scores, logp, expected = gradients(
        model, prep, True, base_id, steps, changes, batch_size, progress, options.get("plan")
    )
    return scores, {"baseline": baseline, "steps": steps}, {"log_probs": logp, "expected_sums": expected}


def piece_ops(cfg, S: int, T: int, steps: int) -> int:
    """One piece of the path for one output row: `steps` points forward and backward (3 forward passes' worth each)
    and the two ends' forward passes that check the piece."""
    return (3 * steps + 2) * forward_ops(cfg, S, T)


def plan(cfg, S: int, T: int, settings: dict, budget) -> Plan:
    """Rows of one backward pass (what autograd keeps, budget.gradient_rows) and pieces of the path in all: as many
    as the operations budget pays for, at most MAX_PIECES_PER_ROW a row. BudgetExceeded when not even one piece a
    row fits, saying what does: the most points per piece among the page's choices (STEPS), else a shorter input."""
    steps = int(settings.get("steps", SETTINGS[1].default))
    rows = gradient_rows(cfg, S, T, budget)
    piece = piece_ops(cfg, S, T, steps)
    pieces = min(budget.ops // max(1, piece), T * MAX_PIECES_PER_ROW)
    if pieces < T:
        fitting = [k for k in STEPS if T * piece_ops(cfg, S, T, k) <= budget.ops]
        if fitting:
            fits = M_("{k} points per piece of the path fit this input.", k=max(fitting))
        else:
            least = min(STEPS)
            fits = shorter_input(S, T, lambda s, t: t * piece_ops(cfg, s, t, least) <= budget.ops)
        raise BudgetExceeded(M_(OVER_OPS, what=M_(WITH_STEPS, steps=steps), need=-(-T * piece // 10**9),
                                ops=budget.ops // 10**9, fits=fits))  # fmt: skip
    rows = min(rows, steps * T)
    return Plan(rows=rows, pieces=int(pieces), ops=int(pieces * piece), bytes=rows * backward_bytes(cfg, S, T))


WITH_STEPS = N_("Integrated gradients with {steps} points per piece")
