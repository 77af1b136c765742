"""Every intervention kind, taken from the registry (nothing listed here): its URL, download, keyword and label
forms round-trip, and its hooks change the forward pass through the recording hooks (and only through them)."""

import importlib
import json

import numpy as np
import pytest
import torch

from model import capture
from model.interventions import INTERVENTION_KINDS, NONE, POSITIONAL, Change, Interventions
from model.interventions.base import HEADS, POSITIONS, ROWS
from model.interventions.registry import MODULES
from tests.conftest import make_tiny

NAMES = list(INTERVENTION_KINDS)
ARRAYS = ("encoder_self", "decoder_self", "cross", "source_pe", "target_pe", "log_probs")


def test_the_registry_lists_each_kind_once_by_its_own_name():
    assert NAMES and len(set(NAMES)) == len(NAMES) == len(MODULES)
    for module in MODULES:
        kind = importlib.import_module(f"model.interventions.{module}").KIND
        assert INTERVENTION_KINDS[kind.name] is kind and issubclass(kind, Change)
    positional = [k.positional for k in INTERVENTION_KINDS.values() if k.slot == "positions"]
    assert tuple(positional) == POSITIONAL  # the keyword's values come from the registry


@pytest.fixture(params=NAMES)
def value(request, tiny) -> Interventions:
    return Interventions.of(INTERVENTION_KINDS[request.param].example(tiny))


def test_a_kind_round_trips_through_its_url(value, tiny):
    assert value  # the example changes something
    params = value.to_url("att")
    assert params and set(params) <= set(Interventions.url_keys("att"))
    assert all(isinstance(v, str) for v in params.values())
    assert Interventions.from_url(params, "att", tiny) == (value, False)
    assert Interventions.from_url({}, "att", tiny) == (NONE, False)
    assert Interventions.from_url(params, "other", tiny) == (NONE, False)  # another page's prefix reads nothing


def test_a_kind_round_trips_through_its_download_and_keywords(value):
    record = json.loads(json.dumps(value.describe()))  # what a .json download holds
    assert record and Interventions.from_describe(record) == value
    assert Interventions.make(**record) == value  # the keyword arguments users call (capture(..., ablate=...))


def test_each_kind_has_its_own_label(tiny):
    labels = {name: Interventions.of(kind.example(tiny)).label() for name, kind in INTERVENTION_KINDS.items()}
    assert all(labels.values()) and len(set(labels.values())) == len(labels)
    both = Interventions.of(*(k.example(tiny) for k in INTERVENTION_KINDS.values() if k.slot != "positions"))
    assert both.label().count(",") == len(both.changes) - 1


def test_a_bad_link_is_reported_not_raised(tiny):
    for params in ({"att_pos": "shifted", "att_shift": "x"}, {"att_off": "c9.0"}, {"att_off": "q1.2"}):
        found, dropped = Interventions.from_url(params, "att", tiny)
        assert dropped and found == NONE


def test_two_kinds_of_one_slot_are_refused(tiny):
    slots = {}
    for kind in INTERVENTION_KINDS.values():
        slots.setdefault(kind.slot, []).append(kind)
    shared = [kinds for kinds in slots.values() if len(kinds) > 1]
    assert shared, "the position kinds share a slot"
    for kinds in shared:
        with pytest.raises(ValueError, match="one change per slot"):
            Interventions.of(*(k.example(tiny) for k in kinds))


def _capture(model, tokenizer, changes):
    return capture(model, tokenizer, "hello", target="abc", qkv=True, interventions=changes)


def _differs(a, b) -> bool:
    return any(not np.array_equal(getattr(a, k), getattr(b, k)) for k in ARRAYS)


def test_each_kind_changes_the_pass_through_its_own_hooks(value, tiny, char_tokenizer, monkeypatch):
    plain = _capture(tiny, char_tokenizer, NONE)
    changed = _capture(tiny, char_tokenizer, value)
    assert _differs(plain, changed)
    assert changed.interventions == value.describe()
    assert all(not m._forward_hooks for m in tiny.modules())  # nothing left on the shared model
    # the recording hooks change the pass only by asking the kind: with its hook functions made neutral, nothing changes
    (change,) = value.changes
    for method in ("change_heads", "change_rows", "change_positions"):
        monkeypatch.setattr(type(change), method, getattr(Change, method))
    assert not _differs(plain, _capture(tiny, char_tokenizer, value))


def test_every_hook_point_a_kind_names_is_called(value, char_tokenizer, monkeypatch):
    """HEADS and ROWS on the paper's model, POSITIONS on a rope model (its index probe)."""
    (change,) = value.changes
    kind = type(change)
    for point, method, positional in (
        (HEADS, "change_heads", "sinusoidal"),
        (ROWS, "change_rows", "sinusoidal"),
        (POSITIONS, "change_positions", "rope"),
    ):
        model = make_tiny(char_tokenizer, positional=positional)
        calls = []
        original = getattr(kind, method)

        def spy(self, *args, original=original, calls=calls):
            calls.append(args[0] if isinstance(args[0], str) else None)
            return original(self, *args)

        monkeypatch.setattr(kind, method, spy)
        _capture(model, char_tokenizer, value)
        assert bool(calls) == (point in kind.points), (kind.name, point)
        monkeypatch.setattr(kind, method, original)


def test_heads_off_zeroes_exactly_its_heads(tiny, char_tokenizer):
    heads = INTERVENTION_KINDS["heads_off"].example(tiny)
    cap = _capture(tiny, char_tokenizer, Interventions.of(heads))
    for kind, layer, head in heads.heads:
        assert torch.count_nonzero(torch.as_tensor(cap.head_outputs[kind][layer, head])) == 0
    assert np.abs(cap.head_outputs["encoder_self"][0, 1]).sum() > 0  # another head of the same layer still writes
