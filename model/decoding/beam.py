"""Beam search on the shared decoding loop: the same step function, cache and step limit as greedy.

A policy of core.run that keeps several hypotheses: each step extends every live hypothesis by one token (one row
of `DecoderSession` per hypothesis),
ranks the 2K best extensions by total log-probability (K = beam_size), and sorts them as fairseq does:
an extension ending with </s> among the K best finishes; the K best others stay live; the rest are
pruned. The cache rows are reordered to follow the live hypotheses' parents. The search stops when
K hypotheses have finished and the worst of the K best finished scores at least as high as every live
hypothesis scores now (the heuristic of Hugging Face's beam search), when none is live, or at the step limit. The best hypothesis is the
finished one with the highest score, score = sum of token log-probabilities / ((5 + length) / 6) **
length_penalty (the penalty of Wu et al. 2016 that the paper uses, length counting </s>); without a
finished one, the best live hypothesis. With beam_size 1 this is greedy decoding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from i18n import N_

from ..interventions import Interventions
from ..text.inputs import device_of, prepare_sequence, prepare_source, require_eval
from ..text.tokenizer import Tokenizer
from . import core
from .core import Move, checked_limit
from .settings import Setting

NAME = "beam"
TITLE = N_("Beam search")  # the decoding page's menu
LINK = "beam"  # how the page's link writes it (dec_strategy=...)
APP = "ui.views.decoding_views.beam"  # its app half: the view the decoding page shows
MAX_BEAM = 8  # the widest beam the page offers (each step keeps 2k rows of every attention map)
SETTINGS = (
    Setting("beam_size", "dec_beam", 4, 1, MAX_BEAM, N_("Beam size"), N_("the beam size")),
    Setting("length_penalty", "dec_lp", 0.6, 0.0, 2.0, N_("Length penalty α"), N_("the length penalty"),
            N_("score = log p / ((5 + length) / 6)^α; the paper uses α = 0.6 with beam size 4"), step=0.1, digits=1),
)  # fmt: skip


def rows(settings: dict) -> int:
    """The hypotheses a search with these settings extends at each step (what its cost is counted in)."""
    return int(settings["beam_size"])


def length_penalty_score(log_prob: float, length: int, length_penalty: float) -> float:
    """log_prob / ((5 + length) / 6) ** length_penalty."""
    return log_prob / ((5 + length) / 6) ** length_penalty


@dataclass
class Hypothesis:
    """One candidate output after a step: y_1 .. y_t+1 and what produced its last token."""

    output_ids: list[int]
    tokens: list[str]
    log_prob: float  # sum of the token log-probabilities
    score: float  # log_prob with the length penalty
    parent: int  # index of the hypothesis it extends in the previous step's `live` (0 at step 0)
    cross: np.ndarray  # (L, H, S) cross-attention of the decoder position that wrote the last token
    decoder_self: np.ndarray  # (L, H, t+1) that position's self-attention over <s> y_1 .. y_t
    rank: int = 0  # its place among the step's 2K best extensions, by log_prob (0: the most probable)


@dataclass
class BeamStep:
    index: int  # t: the hypotheses now hold t+1 tokens
    live: list[Hypothesis]  # kept for the next step, best first
    finished: list[Hypothesis]  # ended with </s> at this step
    pruned: list[Hypothesis]  # among the 2K best extensions, dropped


@dataclass
class BeamTrace:
    """A whole beam search: every step's hypotheses and the best one (decoder-only: the source is the prompt)."""

    source_tokens: list[str]
    source_ids: list[int]
    beam_size: int
    length_penalty: float
    steps: list[BeamStep] = field(default_factory=list)
    best: Hypothesis | None = None
    best_path: list[Hypothesis] = field(default_factory=list)  # the best hypothesis at each of its steps
    stop_reason: str = "max_len"  # "finished" (beam_size hypotheses ended), "eos" (none live) or "max_len"
    truncated: int = 0
    text: str = ""
    start_token: str = "<s>"
    interventions: dict = field(default_factory=dict)  # what was changed while searching (Interventions.describe())

    @property
    def output_ids(self) -> list[int]:
        return list(self.best.output_ids) if self.best else []

    @property
    def output_tokens(self) -> list[str]:
        return list(self.best.tokens) if self.best else []

    @property
    def score(self) -> float:
        return self.best.score if self.best else float("-inf")

    def cross_alignment(self, path: list[Hypothesis] | None = None) -> np.ndarray:
        """(L, H, T, S): row t is the cross-attention that wrote token t of the best hypothesis (or of `path`)."""
        path = self.best_path if path is None else path
        if not path:
            return np.zeros((0, 0, 0, len(self.source_tokens)), dtype=np.float32)
        return np.stack([h.cross for h in path], axis=2)

    def path(self, hyp: Hypothesis) -> list[Hypothesis]:
        """The hypotheses that led to `hyp` (one per step, `hyp` last): follows the parents back to step 0."""
        t = len(hyp.output_ids) - 1
        out = [hyp]
        while t > 0:
            hyp = self.steps[t - 1].live[hyp.parent]
            out.append(hyp)
            t -= 1
        return out[::-1]

    def finished(self) -> list[Hypothesis]:
        """Every hypothesis that ended with </s>, best score first (the best one first when it finished)."""
        done = [h for s in self.steps for h in s.finished]
        return sorted(done, key=lambda h: h.score, reverse=True)

    def tree(self) -> dict[str, np.ndarray | list]:
        """The search as plain arrays for a figure or a table, one entry per hypothesis of every step (N in all):

        step (N,) t; rank (N,) place among the step's 2K best extensions; parent (N,) index of the entry it
        extends (-1 at step 0); status (N,) "live" (kept), "finished" (wrote </s>) or "pruned"; token (N,) its
        last token; tokens (N,) all its tokens (a list each); log_prob (N,); score (N,) with the length
        penalty; best (N,) True on the best hypothesis's path.
        """
        on_best = {id(h) for h in self.best_path}
        names = ("step", "rank", "parent", "status", "token", "tokens", "log_prob", "score", "best")
        out: dict[str, list] = {k: [] for k in names}
        parents: list[int] = []  # entry index of each live hypothesis of the step before, in `live` order
        for step in self.steps:
            live_at = {id(h): i for i, h in enumerate(step.live)}
            entries = [(h, "live") for h in step.live] + [(h, "finished") for h in step.finished]
            entries += [(h, "pruned") for h in step.pruned]
            now = [0] * len(step.live)
            for h, status in sorted(entries, key=lambda e: e[0].rank):
                if status == "live":
                    now[live_at[id(h)]] = len(out["step"])
                values = (step.index, h.rank, parents[h.parent] if step.index else -1, status, h.tokens[-1],
                          list(h.tokens), h.log_prob, h.score, id(h) in on_best)  # fmt: skip
                for key, value in zip(names, values):
                    out[key].append(value)
            parents = now
        arrays = {k: np.asarray(out[k], dtype=d) for k, d in (("step", np.int64), ("rank", np.int64),
                  ("parent", np.int64), ("log_prob", np.float64), ("score", np.float64), ("best", bool))}  # fmt: skip
        return {**arrays, "status": out["status"], "token": out["token"], "tokens": out["tokens"]}


def _rows(recorder, kind: str, layers: int) -> np.ndarray:
    """(R, L, H, Tk): every row's newest query over the keys, from the one map per layer of this step."""
    if (kind, 0) not in recorder.attention:  # a decoder-only model's cross-attention: no keys
        rows, heads = recorder.attention[("decoder_self", 0)][-1].shape[:2]
        return np.zeros((rows, layers, heads, 0), dtype=np.float32)
    maps = torch.stack([recorder.attention[(kind, i)][-1][:, :, -1, :] for i in range(layers)])  # (L, R, H, Tk)
    return maps.transpose(0, 1).float().cpu().numpy()


class BeamPolicy:
    """Beam search as a policy of the one loop (core.run): the session's rows are the live hypotheses, reordered
    to follow their parents at every step; the search's record goes into `trace`."""

    def __init__(self, trace: BeamTrace, vocab, n_layers: int, V: int, device: torch.device):
        self.trace, self.vocab, self.n_layers, self.V = trace, vocab, n_layers, V
        self.finished: list[Hypothesis] = []
        self.live: list[Hypothesis] = []
        self.path_of: dict[int, list[Hypothesis]] = {}  # id(hypothesis) -> its path, for the best one at the end
        self.totals = torch.zeros(1, device=device)  # (R,) each live row's log-probability

    def step(self, t: int, logits: torch.Tensor, rec) -> Move | None:
        trace, vocab, live, beam_size = self.trace, self.vocab, self.live, self.trace.beam_size
        logp = logits.float().log_softmax(-1)  # (R, V)
        cross, dself = _rows(rec, "cross", self.n_layers), _rows(rec, "decoder_self", self.n_layers)
        flat = (self.totals[:, None] + logp).reshape(-1)  # (R * V,)
        possible = max(1, int(torch.isfinite(flat).sum()))  # a forced first token (BART, mBART) leaves one
        values, index = flat.topk(min(2 * beam_size, possible))
        step = BeamStep(t, [], [], [])
        for rank, (value, i) in enumerate(zip(values.tolist(), index.tolist())):
            row, tok = divmod(i, self.V)
            ids = (live[row].output_ids if live else []) + [tok]
            hyp = Hypothesis(ids, vocab.decode(ids), value, length_penalty_score(value, len(ids), trace.length_penalty),
                             row, cross[row], dself[row], rank)  # fmt: skip
            self.path_of[id(hyp)] = (self.path_of[id(live[row])] if live else []) + [hyp]
            if tok == vocab.eos_id and rank < beam_size:
                step.finished.append(hyp)
            elif tok != vocab.eos_id and len(step.live) < beam_size:
                step.live.append(hyp)
            else:
                step.pruned.append(hyp)
        trace.steps.append(step)
        self.finished += step.finished
        self.live = live = step.live
        if not live:
            trace.stop_reason = "eos"
            return None
        kept = sorted((h.score for h in self.finished), reverse=True)[:beam_size]
        if len(kept) == beam_size and kept[-1] >= max(h.score for h in live):
            trace.stop_reason = "finished"
            return None
        device = self.totals.device
        parents = torch.tensor([h.parent for h in live], device=device)
        self.totals = torch.tensor([h.log_prob for h in live], device=device)
        return Move(torch.tensor([h.output_ids[-1] for h in live], device=device), rows=parents)

    def finish(self) -> BeamTrace:
        trace = self.trace
        pool = self.finished or self.live
        trace.best = max(pool, key=lambda h: h.score) if pool else None
        trace.best_path = self.path_of[id(trace.best)] if trace.best else []
        trace.text = self.vocab.detokenize(trace.output_tokens)
        return trace


@torch.no_grad()
def beam_search(
    model: nn.Module,
    tokenizer: Tokenizer,
    source: str,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    max_len: int | None = None,
    ablate: Sequence[tuple[str, int, int]] | None = None,
    positional: str | None = None,
    shift: int = 1,
    seed: int = 0,
    interventions: Interventions | None = None,
) -> BeamTrace:
    """Beam search of `source` (see the module docstring), recording every step's hypotheses.

    interventions, or the keywords ablate, positional, shift, seed as in `greedy_decode`: applied to every
    hypothesis.
    """
    require_eval(model)
    changes = Interventions.given(interventions, ablate=ablate, positional=positional, shift=shift, seed=seed)
    if beam_size < 1:
        raise ValueError("beam_size must be at least 1")
    vocab = tokenizer.target
    src_in = (prepare_source if model.config.has_encoder else prepare_sequence)(model, tokenizer, source)
    trace = BeamTrace(src_in.tokens, src_in.ids, beam_size, length_penalty, truncated=src_in.truncated,
                      start_token=vocab.token(vocab.bos_id), interventions=changes.describe())  # fmt: skip
    limit = checked_limit(model, len(src_in.ids), max_len, changes)
    policy = BeamPolicy(trace, vocab, len(model.decoder.layers), model.config.tgt_vocab_size, device_of(model))
    core.run(model, [src_in.ids], policy, limit, bos_id=vocab.bos_id, interventions=changes, keep=True)
    return policy.finish()


decode = beam_search  # the registry's decode(model, tokenizer, source, *, interventions, max_len, **settings)
