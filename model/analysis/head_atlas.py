"""The head atlas: every head's score for every role over a corpus (model/analysis/head_scores.py), its typical map,
the inputs where it fires most, and each role tested by switching its top heads off (head_switch_off.py).

    atlas = head_atlas(model, tokenizer, texts)          # texts: the corpus (None: random tokens)
    atlas.scores("induction")                            # (L, H)
    atlas.to_json(), atlas.to_npz()

The corpus roles (previous_token, first_token) read the texts; induction and duplicate_token read seeded random
sequences repeated twice. The inputs are cut into shards of SHARD inputs; each shard is one `run_shard` call, and
`merge` joins them in order. The local run is those calls one after the other; a cluster run (cli/atlas.py, Ray)
makes the same calls as tasks, so both merge the same records into the same atlas. The switch-off tests need the
merged scores and run after the merge, one unit of work per input (item_losses: every row of its groups's tests in one
batched pass), summed in the inputs' order.

Who runs the units is a `runner(fn, units)` that yields (index, fn(unit)) for every unit, in any order: `in_order`
here (one after the other), several processes in the app's worker (ui/serving/workers.py `fork_map`); every unit is
computed by the same function whichever runs it, and joined in the units' order, so the atlas is the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from torch import nn

from ..text.tokenizer import Tokenizer
from .head_scores import REPEATED, ROLES, Item, check_kind, maps_shape, per_text_scores, random_sequences
from .head_switch_off import SINGLES, SwitchOff, item_losses, mean_losses, plan_rows, read_rows, top_heads

SHARD = 16  # inputs per shard
MAP_SIZE = 24  # a head's typical map: the mean of the first MAP_SIZE x MAP_SIZE cells over the corpus
EFFECT_ITEMS = 16  # inputs of a group's switch-off tests, at most
EFFECT_TOKENS = 512  # tokens of a group's switch-off tests (whole inputs, at least one)
DRAWS = 5  # random head sets per switch-off test
EXAMPLES = 3  # inputs kept per head and role: where it fires most
VERSION = 2  # what an atlas holds and how its tests are drawn (the disk cache keys on it)


Runner = Callable[[Callable[[Any], Any], Sequence[Any]], Iterable[tuple[int, Any]]]


def in_order(fn: Callable[[Any], Any], units: Sequence[Any]) -> Iterable[tuple[int, Any]]:
    """The local runner: (index, fn(unit)) for each unit, one after the other in this process."""
    for i, unit in enumerate(units):
        yield i, fn(unit)


@dataclass(frozen=True)
class Job:
    """One shard: these roles scored on these inputs (group: "corpus" or "repeated")."""

    group: str
    roles: tuple[str, ...]
    items: tuple  # texts, or tuples of ids
    start: int  # index of the first input in its group


@dataclass
class ShardResult:
    group: str
    start: int
    scores: dict[str, np.ndarray]  # role -> (n, L, H)
    perfect: dict[str, np.ndarray]  # role -> (n,)
    labels: list[list[str]]  # each input's tokens
    map_sum: np.ndarray  # (L, H, M, M) float64, sum over the shard's inputs of each map's first M x M cells
    map_count: np.ndarray  # (M, M) how many inputs reach each cell


def plan(
    model: nn.Module,
    tokenizer: Tokenizer,
    texts: Sequence[Item] | None,
    roles: Sequence[str] = ROLES,
    seed: int = 0,
    shard: int = SHARD,
) -> list[Job]:
    """The shards of an atlas, in order: the corpus roles on the texts (random tokens when None), the repeated roles
    on random sequences repeated twice."""
    bad = [r for r in roles if r not in ROLES]
    if bad or not roles:
        raise ValueError(f"roles must be some of {', '.join(ROLES)}")
    corpus_roles = tuple(r for r in ROLES if r in roles and r not in REPEATED)
    repeated_roles = tuple(r for r in ROLES if r in roles and r in REPEATED)
    jobs = []
    groups = []
    if corpus_roles:
        items = list(texts) if texts is not None else random_sequences(model, tokenizer, seed=seed, repeated=False)
        if not items:
            raise ValueError("the atlas needs at least one text")
        groups.append(("corpus", corpus_roles, items))
    if repeated_roles:
        groups.append(("repeated", repeated_roles, random_sequences(model, tokenizer, seed=seed, repeated=True)))
    for group, group_roles, items in groups:
        items = [i if isinstance(i, str) else tuple(int(x) for x in i) for i in items]
        for start in range(0, len(items), shard):
            jobs.append(Job(group, group_roles, tuple(items[start : start + shard]), start))
    return jobs


def run_shard(model: nn.Module, tokenizer: Tokenizer, job: Job, kind: str | None = None) -> ShardResult:
    """One shard's per-input scores, labels and map sums (the unit of work of a local or a cluster run)."""
    kind = check_kind(model, kind)
    L, H = maps_shape(model, kind)
    M = MAP_SIZE
    map_sum, map_count = np.zeros((L, H, M, M)), np.zeros((M, M))

    def add(maps: np.ndarray) -> None:
        n = min(M, maps.shape[-2], maps.shape[-1])
        map_sum[:, :, :n, :n] += maps[:, :, :n, :n]
        map_count[:n, :n] += 1

    scores, perfect, ids = per_text_scores(model, tokenizer, job.roles, job.items, kind, on_maps=add)
    labels = [tokenizer.target.decode(i) for i in ids]
    return ShardResult(job.group, job.start, scores, perfect, labels, map_sum, map_count)


@dataclass
class Atlas:
    """Every head of one self-attention kind over a corpus. N: inputs of a role's group; L, H: layers, heads."""

    kind: str
    roles: list[str]
    per_text: dict[str, np.ndarray]  # role -> (N, L, H) each input's score
    perfect: dict[str, float]  # role -> a perfect head's mean score on the same inputs
    labels: dict[str, list[list[str]]]  # group -> each input's tokens
    typical: np.ndarray  # (L, H, M, M) the mean map over the corpus group's inputs (cells some input reaches)
    effects: dict[str, SwitchOff] = field(default_factory=dict)  # role -> its switch-off test
    seed: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return self.typical.shape[0], self.typical.shape[1]

    def scores(self, role: str) -> np.ndarray:
        """(L, H) the mean over the role's inputs: head_scores(...) of the same inputs."""
        return self.per_text[role].mean(axis=0)

    def relative(self, role: str) -> np.ndarray:
        """(L, H) the scores as a share of a perfect head's."""
        return self.scores(role) / max(self.perfect[role], 1e-12)

    def strongest(self) -> np.ndarray:
        """(L, H) index into roles of each head's strongest role (relative to a perfect head)."""
        return np.stack([self.relative(r) for r in self.roles]).argmax(axis=0)

    def strength(self) -> np.ndarray:
        """(L, H) each head's switch-off effect for its strongest role when it is one of that role's top heads
        tested alone (the first SINGLES), as a share of the largest such effect; 0 elsewhere (not tested alone)."""
        out = np.zeros(self.shape)
        best = self.strongest()
        for r, role in enumerate(self.roles):
            test = self.effects.get(role)
            for (layer, head), effect in zip(test.heads, test.head_effects) if test else ():
                if best[layer, head] == r:
                    out[layer, head] = max(0.0, effect)
        return out / out.max() if out.max() > 0 else out

    def group_of(self, role: str) -> str:
        return "repeated" if role in REPEATED else "corpus"

    def top_examples(self, role: str, layer: int, head: int, n: int = EXAMPLES) -> list[tuple[int, float]]:
        """(input index, score) of the n inputs where this head scores highest for `role`."""
        values = self.per_text[role][:, layer, head]
        order = np.argsort(-values, kind="stable")[:n]
        return [(int(i), float(values[i])) for i in order]

    def to_json(self) -> dict:
        return {
            "version": VERSION,
            "kind": self.kind,
            "roles": list(self.roles),
            "seed": self.seed,
            "layers": self.shape[0],
            "heads": self.shape[1],
            "scores": {r: self.scores(r).tolist() for r in self.roles},
            "perfect": dict(self.perfect),
            "per_text": {r: self.per_text[r].tolist() for r in self.roles},
            "labels": self.labels,
            "typical": self.typical.tolist(),
            "switch_off": {r: e.to_json() for r, e in self.effects.items()},
        }

    def json_bytes(self) -> bytes:
        return json.dumps(self.to_json(), ensure_ascii=False).encode("utf-8")

    def to_npz(self) -> bytes:
        import io

        arrays = {f"scores_{r}": self.scores(r) for r in self.roles}
        arrays |= {f"per_text_{r}": self.per_text[r] for r in self.roles}
        arrays["typical"] = self.typical
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays, roles=np.asarray(self.roles))
        return buf.getvalue()


def merge(results: Sequence[ShardResult], kind: str, roles: Sequence[str], seed: int = 0) -> Atlas:
    """The atlas of shard results (in any order: sorted by group, then start)."""
    order = sorted(results, key=lambda r: (r.group != "corpus", r.start))
    per_text: dict[str, list[np.ndarray]] = {}
    perfect: dict[str, list[np.ndarray]] = {}
    labels: dict[str, list[list[str]]] = {}
    typical_groups = {r.group for r in order}
    typical_group = "corpus" if "corpus" in typical_groups else "repeated"
    map_sum, map_count = None, None
    for r in order:
        labels.setdefault(r.group, []).extend(r.labels)
        for role, values in r.scores.items():
            per_text.setdefault(role, []).append(values)
            perfect.setdefault(role, []).append(r.perfect[role])
        if r.group == typical_group:
            map_sum = r.map_sum.copy() if map_sum is None else map_sum + r.map_sum
            map_count = r.map_count.copy() if map_count is None else map_count + r.map_count
    typical = map_sum / np.maximum(map_count, 1)
    kept = [role for role in ROLES if role in roles]
    return Atlas(
        kind=kind,
        roles=kept,
        per_text={role: np.concatenate(per_text[role]) for role in kept},
        perfect={role: float(np.concatenate(perfect[role]).mean()) for role in kept},
        labels=labels,
        typical=typical,
        seed=seed,
    )


def items_of(jobs: Sequence[Job], group: str) -> list[Item]:
    return [item for job in jobs if job.group == group for item in job.items]


def effect_items(items: Sequence[Item], labels: Sequence[Sequence[str]], tokens: int = EFFECT_TOKENS) -> list[Item]:
    """The first inputs of a group, as many as fit in `tokens` tokens (their labels' lengths; at least one, at most
    EFFECT_ITEMS): what its switch-off tests read."""
    out, used = [], 0
    for item, label in zip(items[:EFFECT_ITEMS], labels):
        if out and used + len(label) > tokens:
            break
        out.append(item)
        used += len(label)
    return out


def add_switch_off(
    atlas: Atlas,
    model: nn.Module,
    tokenizer: Tokenizer,
    jobs: Sequence[Job],
    k: int | None = None,
    draws: int = DRAWS,
    tokens: int = EFFECT_TOKENS,
    progress: Callable[[int, int], None] | None = None,
    runner: Runner = in_order,
) -> Atlas:
    """Each role's switch-off test (top k heads, default one in sixteen heads and at least one, against `draws`
    random sets of heads that are no role's top heads) on the first inputs of its group (effect_items: about
    `tokens` tokens), the roles of a group in one batched pass per input (a unit of `runner`); the atlas with
    atlas.effects filled. progress(done, total) counts inputs."""
    L, H = atlas.shape
    k = max(1, (L * H) // 16) if k is None else k
    avoid = sorted({h for role in atlas.roles for h in top_heads(atlas.scores(role), k)})
    groups = [g for g in ("corpus", "repeated") if any(atlas.group_of(r) == g for r in atlas.roles)]
    rows, units = {}, []
    for group in groups:
        scores = {role: atlas.scores(role) for role in atlas.roles if atlas.group_of(role) == group}
        rows[group] = plan_rows(scores, k, draws, atlas.seed, SINGLES, avoid)
        units += [(group, item) for item in effect_items(items_of(jobs, group), atlas.labels[group], tokens)]

    def losses(unit: tuple[str, Item]) -> tuple:
        group, item = unit
        return item_losses(model, tokenizer, item, atlas.kind, rows[group][0], group == "repeated")

    per_item: list = [None] * len(units)
    for done, (i, answer) in enumerate(runner(losses, units), 1):
        per_item[i] = answer
        if progress is not None:
            progress(done, len(units))
    for group in groups:
        loss, acc = mean_losses([a for a, (g, _) in zip(per_item, units) if g == group])
        atlas.effects |= read_rows(rows[group][1], loss, acc)
    atlas.effects = {role: atlas.effects[role] for role in atlas.roles if role in atlas.effects}
    return atlas


def effect_count(jobs: Sequence[Job], labels: dict[str, list[list[str]]], tokens: int = EFFECT_TOKENS) -> int:
    """How many inputs add_switch_off reads (its units)."""
    groups = {job.group for job in jobs}
    return sum(len(effect_items(items_of(jobs, g), labels.get(g, []), tokens)) for g in groups)


def head_atlas(
    model: nn.Module,
    tokenizer: Tokenizer,
    texts: Sequence[Item] | None = None,
    roles: Sequence[str] = ROLES,
    kind: str | None = None,
    seed: int = 0,
    switch_off_tests: bool = True,
    progress: Callable[[int, int], None] | None = None,
    runner: Runner = in_order,
) -> Atlas:
    """The atlas of one kind (default: the stack that reads the text), its shards and then its switch-off inputs run
    by `runner` (in_order: here, one after the other); progress (done, total) counts shards, then the switch-off
    tests' inputs."""
    kind = check_kind(model, kind)
    jobs = plan(model, tokenizer, texts, roles, seed)
    results: list = [None] * len(jobs)
    total = len(jobs)
    most = EFFECT_ITEMS * len({job.group for job in jobs}) if switch_off_tests else 0  # tests' inputs, at most
    for done, (i, result) in enumerate(runner(lambda job: run_shard(model, tokenizer, job, kind), jobs), 1):
        results[i] = result
        if progress is not None:
            progress(done, total + most)
    atlas = merge(results, kind, roles, seed)
    if switch_off_tests:
        tests = effect_count(jobs, atlas.labels)
        step = (lambda d, t: progress(total + d, total + tests)) if progress is not None else None
        add_switch_off(atlas, model, tokenizer, jobs, progress=step, runner=runner)
    return atlas
