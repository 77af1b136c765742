"""The Head atlas page's app half: its URL keys, the corpus a choice means, and the atlas computed once per (model,
corpus, roles) in a limited worker with progress and Cancel; a shipped demo's atlas of its default corpus kept on disk
under the checkpoint's digest (ui/serving/disk_cache.py)."""

from __future__ import annotations

from i18n import N_
from model.analysis import head_atlas as ha
from model.analysis.head_scores import ROLES
from ui.serving.bounded_cache import BoundedCache
from ui.serving.disk_cache import checkpoint_cached
from ui.serving.fork_map import fork_map
from ui.serving.workers import run_with_progress
from ui.shell.url_state import Key, Keys

ROLE_TITLES = {
    "previous_token": N_("previous token"),
    "duplicate_token": N_("duplicate token"),
    "induction": N_("induction"),
    "first_token": N_("first token (sink)"),
}
CORPORA = {
    "task": N_("the demo task's examples"),
    "random": N_("random tokens"),
    "input": N_("the input text, one text per line"),
}
VERDICTS = {True: N_("pattern only"), False: N_("matters")}  # a role's switch-off test: within the random spread?
MAX_INPUT_TEXTS = 64  # lines of the sidebar's text read as a corpus
SEED = 0

KIND_TITLES = {
    "encoder_self": N_("encoder self-attention"),
    "decoder_self": N_("decoder self-attention"),
    "cross": N_("cross-attention against the gold alignment"),
}
URL = Keys(
    Key("atl_kind", cast=str, resets="model"),
    Key("atl_corpus", "task", choices=tuple(CORPORA), resets="model"),
    Key("atl_roles", list(ROLES), choices=ROLES, many=True, encode=lambda v: ",".join(v) or "none"),
    Key("atl_layer", cast=int, resets="model"),
    Key("atl_head", cast=int, resets="model"),
)

ATLASES: BoundedCache[ha.Atlas] = BoundedCache("head atlases", max_entries=16, max_bytes=64 * 2**20)
ALIGNMENTS: BoundedCache = BoundedCache("cross-attention alignment atlases", max_entries=16, max_bytes=2**20)


def kind_choices(model, card: dict) -> list[str]:
    """The attention a model's atlas can score: its self-attention stacks (the one reading the text first), and
    cross-attention when its demo task knows the gold alignment."""
    from model.analysis.head_scores import default_kind
    from tasks.registry import TASKS

    first = default_kind(model)
    kinds = [first, *(k for k in model.config.attention_kinds if k not in (first, "cross"))]
    task = TASKS.get(str(card.get("task", ""))) if isinstance(card, dict) else None
    if "cross" in model.config.attention_kinds and task is not None and task.name != "induction":
        kinds.append("cross")
    return kinds


def alignment_for(session):
    """(L, H) cross-attention's agreement with the gold alignment on the demo task's examples (tasks/atlas_corpus.py),
    computed in the worker once, kept on disk for a shipped demo."""
    from tasks.atlas_corpus import cross_alignment

    def compute():
        return run_with_progress(
            cross_alignment, session.model, session.tokenizer, session.card, key=("atlas-cross", session.key),
            label=N_("Computing the head atlas…"),
        )  # fmt: skip

    return ALIGNMENTS.get(session.key, lambda: checkpoint_cached(session.key, "head_atlas_cross", (SEED,), compute))


def corpus_choices(card: dict) -> list[str]:
    """The corpora this model offers: its task's examples only for a demo of a task of this project."""
    from tasks.atlas_corpus import default_corpus

    return [c for c in CORPORA if c != "task" or default_corpus(card, n=1) is not None]


def corpus_texts(corpus: str, card: dict, text: str) -> list[str] | None:
    """The texts a corpus choice reads (None: random tokens)."""
    from tasks.atlas_corpus import default_corpus

    if corpus == "task":
        return default_corpus(card, seed=SEED)
    if corpus == "input":
        lines = [line.strip() for line in text.splitlines() if line.strip()][:MAX_INPUT_TEXTS]
        return lines or [text]
    return None


def compute_atlas(model, tokenizer, texts, roles, kind=None, progress=None) -> ha.Atlas:
    """What the worker runs: the atlas with its switch-off tests, its units on $VIZ_WORKER_CORES processes."""
    return ha.head_atlas(
        model, tokenizer, texts, roles=roles, kind=kind, seed=SEED, progress=progress, runner=fork_map
    )  # fmt: skip


def atlas_for(session, corpus: str, roles: list[str], kind: str | None = None) -> ha.Atlas:
    """The session model's atlas for this corpus and these roles: from memory, from disk (a shipped demo's default
    corpus), else computed in the worker (progress bar and Cancel; WorkerStopped when stopped)."""
    texts = corpus_texts(corpus, session.card, session.check.text)
    roles = [r for r in ROLES if r in roles]
    text_key = session.check.text if corpus == "input" else ""
    key = (session.key, corpus, tuple(roles), text_key, kind)

    def compute() -> ha.Atlas:
        return run_with_progress(
            compute_atlas, session.model, session.tokenizer, texts, roles, kind, progress=True,
            key=("atlas", *key), label=N_("Computing the head atlas…"),
        )  # fmt: skip

    if corpus == "input":
        return ATLASES.get(key, compute)
    params = (corpus, tuple(roles), SEED, kind, ha.VERSION)
    return ATLASES.get(key, lambda: checkpoint_cached(session.key, "head_atlas", params, compute))
