"""positional_experiment: exact match on fresh examples with and without positions, a typical failure, a verdict."""

import pytest

from model import greedy_decode, load_checkpoint
from model.checkpoints.demos import CHECKPOINTS
from model.interventions import Interventions
from tasks.evaluate import exact_match
from tasks.pe_experiment import Failure, describe_change, positional_experiment, typical_failure, verdict
from tasks.registry import get_task
from tasks.tasks import Example, held_out
from tests.i18n_helpers import msgid, rendered

COLLAPSES = msgid("With {change}, exact match collapses from {before} to {after} on {n} fresh examples.")
DROPS = msgid("With {change}, exact match drops from {before} to {after} on {n} fresh examples.")
HEADS = msgid("{n} heads switched off")  # the plural

pytestmark = pytest.mark.skipif(not (CHECKPOINTS / "reverse").is_dir(), reason="the reverse demo is not shipped here")


@pytest.fixture(scope="module")
def reverse():
    return load_checkpoint(CHECKPOINTS / "reverse")


def test_the_reverse_demo_collapses_without_positions(reverse):
    model, tok = reverse
    result = positional_experiment(model, tok, "reverse", n=200, seed=11, positional="off")
    examples = held_out(get_task("reverse"), 200, 11, exclude=set())
    assert result.exact_match == exact_match(model, tok, examples)  # the same examples, the same count
    assert result.exact_match >= 0.95 and result.exact_match_changed < 0.2
    assert result.interventions == {"positional": "off"} and result.n == 200 and result.task == "reverse"
    assert result.failures == round(200 * (1 - result.exact_match_changed))
    fail = result.failure
    assert fail.expected == fail.source[::-1] != fail.got
    assert fail.source in {e.source for e in examples}
    assert result.verdict == rendered(
        COLLAPSES,
        change=rendered("positions removed"),
        before=f"{result.exact_match:.0%}",
        after=f"{result.exact_match_changed:.0%}",
        n=200,
    )


def test_the_changed_count_is_greedy_decoding_one_at_a_time(reverse):
    model, tok = reverse
    result = positional_experiment(model, tok, get_task("reverse"), n=25, seed=12, positional="shifted", shift=2)
    examples = held_out(get_task("reverse"), 25, 12, exclude=set())
    traces = [greedy_decode(model, tok, e.source, positional="shifted", shift=2) for e in examples]
    hits = [t.text == e.target and t.stop_reason == "eos" for t, e in zip(traces, examples)]
    assert result.exact_match_changed == sum(hits) / 25 < result.exact_match
    wrong = {e.source: t.text for e, t, ok in zip(examples, traces, hits) if not ok}
    assert wrong[result.failure.source].startswith(result.failure.got)  # cut one token past the longest target
    # no change at all: the unchanged model's own failures and a plain verdict
    plain = positional_experiment(model, tok, "reverse", n=25, seed=12, positional=None)
    assert plain.exact_match == plain.exact_match_changed == result.exact_match
    assert plain.verdict == f"Exact match {plain.exact_match:.0%} on 25 fresh examples." and plain.interventions == {}
    # the examples avoid what they are told to avoid
    avoid = {e.source for e in examples[:10]}
    fresh = positional_experiment(model, tok, "reverse", n=25, seed=12, positional=None, exclude=avoid)
    assert fresh.failure is None or fresh.failure.source not in avoid


def test_verdicts_name_the_change_and_the_direction():
    off, shifted = Interventions.make(positional="off"), Interventions.make(positional="shifted", shift=3)
    assert "collapses from 98% to 10%" in verdict(0.98, 0.1, 200, off)
    assert verdict(0.9, 0.8, 50, shifted) == rendered(
        DROPS, change=rendered("positions shifted by {k}", k=3), before="90%", after="80%", n=50
    )
    assert "stays at 89% (unchanged: 90%)" in verdict(0.9, 0.89, 200, shifted)
    assert "rises from 10% to 30%" in verdict(0.1, 0.3, 200, Interventions.make(positional="shuffled"))
    heads = Interventions.make([("cross", 0, 0), ("cross", 1, 0)], positional="off")
    both = rendered("{change}, {other_change}", change=rendered("positions removed"), other_change=rendered(HEADS, n=2))
    assert verdict(0.9, 0.5, 200, heads) == rendered(DROPS, change=both, before="90%", after="50%", n=200)
    one = rendered(DROPS, change=rendered("{n} head switched off", n=1), before="90%", after="50%", n=200)
    assert verdict(0.9, 0.5, 200, Interventions.make([("cross", 0, 0)])) == one


def test_two_changes_are_joined_in_the_language_of_the_verdict():
    from i18n import language_scope

    heads = Interventions.make([("cross", 0, 0)], positional="off")
    with language_scope("zh"):
        words = describe_change(heads)
    assert "，" in words and ", " not in words  # the Chinese comma, not the English one
    assert describe_change(heads).count(", ") == 1


def test_the_typical_failure_has_the_median_length_among_failures():
    examples = [Example(s, s[::-1], ()) for s in ("ab", "abcd", "abcdef", "abcdefgh", "xyz")]
    got = ["ba", "dcba", "fedcbb", "hgfedcbb", "zzz"]
    right = [g == e.target for g, e in zip(got, examples)]
    assert typical_failure(examples, got, right) == Failure("abcdef", "fedcba", "fedcbb")  # lengths 3, 6, 8
    assert typical_failure(examples[:2], got[:2], right[:2]) is None


def test_bad_arguments_are_named(reverse):
    model, tok = reverse
    with pytest.raises(ValueError, match="positional must be None or one of"):
        positional_experiment(model, tok, "reverse", n=5, positional="sideways")
    with pytest.raises(ValueError, match="n must be from 1 to 10,000"):
        positional_experiment(model, tok, "reverse", n=0)
    with pytest.raises(ValueError, match="unknown task"):
        positional_experiment(model, tok, "nothing", n=5)
