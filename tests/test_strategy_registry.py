"""Every decoding strategy, taken from the registry (nothing listed here): each runs through the one loop
(model.decoding.core.run) with its one step limit, takes an Interventions value whole, and the policies agree
where they should (beam width 1 is greedy, a forced prefix is written, sampling at temperature 0 is greedy)."""

import importlib

import pytest
import torch

from model.decoding import STRATEGIES, core, greedy_decode, set_step_cap, step_cap
from model.decoding.strategies import MODULES
from model.interventions import NONE, Interventions
from tests.conftest import make_tiny

NAMES = list(STRATEGIES)


def test_the_registry_lists_each_strategy_once_by_its_own_name():
    assert len(NAMES) >= 4 and len(set(NAMES)) == len(NAMES) == len(MODULES)
    for module in MODULES:
        found = importlib.import_module(f"model.decoding.{module}")
        assert STRATEGIES[found.NAME] is found and callable(found.decode)


@pytest.fixture
def never_ends(char_tokenizer):
    """A tiny model that cannot write </s>: every strategy runs to its step limit."""
    model = make_tiny(char_tokenizer, seed=2)
    with torch.no_grad():
        model.generator.bias[model.config.eos_id] = -1e4
    return model


@pytest.mark.parametrize("name", NAMES)
def test_each_strategy_runs_through_the_one_loop(name, tiny, char_tokenizer, monkeypatch):
    calls = []
    original = core.run

    def spy(model, sources, policy, limit, **kwargs):
        calls.append((type(policy).__name__, limit))
        return original(model, sources, policy, limit, **kwargs)

    monkeypatch.setattr(core, "run", spy)
    trace = STRATEGIES[name].decode(tiny, char_tokenizer, "hello", max_len=5)
    assert len(calls) == 1 and calls[0][1] == 5
    assert 0 < len(trace.output_ids) <= 5


@pytest.mark.parametrize("name", NAMES)
def test_each_strategy_keeps_the_one_step_limit(name, never_ends, char_tokenizer):
    before = step_cap()
    try:
        set_step_cap(3)
        capped = STRATEGIES[name].decode(never_ends, char_tokenizer, "hello")
    finally:
        set_step_cap(before)
    free = STRATEGIES[name].decode(never_ends, char_tokenizer, "hello")
    assert len(capped.output_ids) == 3 and len(free.output_ids) == 6 + 50  # the source plus 50


@pytest.mark.parametrize("name", NAMES)
def test_each_strategy_takes_an_interventions_value_whole(name, tiny, char_tokenizer):
    changes = Interventions.make([("cross", 1, 0)], positional="shifted", shift=2)
    trace = STRATEGIES[name].decode(tiny, char_tokenizer, "hello", interventions=changes, max_len=6)
    assert trace.interventions == changes.describe()
    plain = STRATEGIES[name].decode(tiny, char_tokenizer, "hello", interventions=NONE, max_len=6)
    assert plain.interventions == {}
    with pytest.raises(ValueError, match="the model has 2 cross layers"):
        STRATEGIES[name].decode(tiny, char_tokenizer, "hello", interventions=Interventions.make([("cross", 2, 0)]))


def test_beam_of_width_one_is_greedy(tiny, char_tokenizer):
    for source in ("hello", "abc def", "stressed"):
        greedy = STRATEGIES["greedy"].decode(tiny, char_tokenizer, source)
        beam = STRATEGIES["beam"].decode(tiny, char_tokenizer, source, beam_size=1)
        assert beam.output_ids == greedy.output_ids


def test_a_forced_prefix_is_written_then_greedy_goes_on(never_ends, char_tokenizer):
    free = greedy_decode(never_ends, char_tokenizer, "hello", max_len=6)
    prefix = [i for i in range(4, 8) if i != free.output_ids[0]][:2]
    forced = STRATEGIES["forced"].decode(never_ends, char_tokenizer, "hello", prefix=prefix, max_len=6)
    assert forced.output_ids[:2] == prefix and forced.output_ids != free.output_ids
    assert [s.forced for s in forced.steps] == [True, True, False, False, False, False]
    with pytest.raises(ValueError, match="outside the target vocabulary"):
        STRATEGIES["forced"].decode(never_ends, char_tokenizer, "hello", prefix=[10**6])


def test_sampling_at_temperature_zero_is_greedy_and_a_seed_repeats_its_draw(tiny, char_tokenizer):
    greedy = STRATEGIES["greedy"].decode(tiny, char_tokenizer, "hello")
    cold = STRATEGIES["sampling"].decode(tiny, char_tokenizer, "hello", temperature=0.0)
    assert cold.output_ids == greedy.output_ids
    hot = [STRATEGIES["sampling"].decode(tiny, char_tokenizer, "hello", temperature=5.0, seed=s) for s in (1, 1, 2)]
    assert hot[0].output_ids == hot[1].output_ids and hot[0].output_ids != hot[2].output_ids
