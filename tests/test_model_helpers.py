import io
import json
import re

import numpy as np

from model import capture, greedy_decode
from model.analysis.export import capture_json, capture_npz, trace_json
from model.analysis.inspect import attention_shape_walk, parameter_counts, positional_tables, weight_stats
from model.text.inputs import check_text
from model.text.tokenizer import Vocab
from tests.i18n_helpers import matching, msgid, msgid_starting

CUT = msgid_starting("The {what} has {n} tokens but this model reads at most {room}: cut after")


def test_parameter_counts_cover_every_parameter_once(tiny):
    counts = parameter_counts(tiny)
    assert sum(counts.values()) == sum(p.numel() for p in tiny.parameters())
    assert {"src_embed", "encoder.layers.0", "decoder.layers.1", "generator"} <= set(counts)
    assert len(weight_stats(tiny)) == len(list(tiny.parameters()))


def test_shape_walk_uses_the_real_numbers():
    walk = attention_shape_walk(d_model=64, n_heads=4, n_queries=7, n_keys=9)
    shapes = {s.formula: s.shape for s in walk}
    assert shapes["Q_h K_h^T / sqrt(d_k)"] == (1, 4, 7, 9)
    assert shapes["Q_h (view + transpose)"] == (1, 4, 7, 16)
    assert walk[-1].shape == (1, 7, 64)


def test_positional_tables(tiny):
    tables = positional_tables(tiny)
    assert tables["source"].shape == (64, 24)
    np.testing.assert_allclose(tables["target"], tiny.tgt_pe.table.numpy())


def test_exports_round_trip(tiny, char_tokenizer):
    cap = capture(tiny, char_tokenizer, "abc", target="de")
    data = np.load(io.BytesIO(capture_npz(cap)))
    np.testing.assert_allclose(data["cross"], cap.cross)
    assert list(data["source_tokens"]) == cap.source_tokens
    js = json.loads(capture_json(cap))
    assert js["shapes"]["cross"] == list(cap.cross.shape)
    np.testing.assert_allclose(np.array(js["encoder_self"]), cap.encoder_self, atol=1e-5)
    trace = greedy_decode(tiny, char_tokenizer, "abc", max_len=3, stop_at_eos=False)
    tj = json.loads(trace_json(trace))
    assert [s["token"] for s in tj["steps"]] == trace.output_tokens
    np.testing.assert_allclose(np.array(tj["steps"][2]["decoder_self"]), trace.steps[2].decoder_self, atol=1e-5)


def test_check_text_names_each_problem():
    v = Vocab.build("abc", level="char")
    assert [e.template for e in check_text("   ", v, 5).errors] == [
        msgid("The {what} is empty: type some text, or pick an example.")
    ]
    only_unknown = check_text("xyz", v, 5)
    assert (
        only_unknown.errors[0].template == msgid_starting("None of the {what}'s symbols")
        and "“x”" in only_unknown.errors[0]
    )
    some = check_text("abz", v, 5)
    assert not some.errors and "“z”" in some.warnings[0] and some.unknown == ["z"]
    long = check_text("abcabcab", v, 5)
    assert not long.errors and re.search(matching(CUT, n=8, room=5, dropped=3), long.warnings[0])
    pasted = check_text("a\x07b\u200bc", v, 5)
    assert pasted.text == "abc" and "Removed 2 control" in pasted.warnings[0]
    assert check_text("abc", v, 5) == check_text("abc", v, 5) and not check_text("abc", v, 5).warnings


def test_pe_json_round_trips():
    from model.analysis import pe_analysis as pea
    from model.analysis.export import pe_json

    pe = pea.pe_table(5, 4)
    data = json.loads(pe_json(pe=pe))
    assert data["pe"]["shape"] == [5, 4]
    np.testing.assert_allclose(np.array(data["pe"]["values"]), pe, atol=1e-6)


def test_trained_range_warning_names_the_range_and_the_length():
    from model.text.tokenizer import Vocab
    from model.text.trained_range import TRAINED_RANGE, TRAINED_RANGE_MORE, trained_range_warning

    chars = Vocab.build("abc", level="char")
    card = {"input_tokens": {"min": 2, "max": 4, "unit": "characters"}}
    assert trained_range_warning(card, "abc", chars) is None
    assert trained_range_warning(card, "ab", chars) is None and trained_range_warning(card, "abca", chars) is None
    long = trained_range_warning(card, "abcab", chars)
    assert long.template == TRAINED_RANGE and long.values["n"] == 5
    assert (long.values["low"], long.values["high"], long.values["unit"].template) == (2, 4, "characters")
    assert trained_range_warning(card, "a", chars).values["n"] == 1
    assert trained_range_warning({}, "abcabcabc", chars) is None  # a card without the range: nothing to say
    # the prefix check_text read of a longer text: past the range, "more than" its count; within it, nothing (the
    # model reads no more than that prefix)
    more = trained_range_warning(card, "abcab", chars, complete=False)
    assert more.template == TRAINED_RANGE_MORE and more.values["n"] == 5
    assert trained_range_warning(card, "abc", chars, complete=False) is None
    words = Vocab.build(["the", "cat"], level="word")
    card = {"input_tokens": {"min": 2, "max": 3, "unit": "words"}}
    assert trained_range_warning(card, "the cat the cat", words).values["n"] == 4


def test_every_shipped_demo_card_states_its_trained_range():
    from model.checkpoints.demos import list_demos
    from model.checkpoints.loading import load_checkpoint
    from model.text.trained_range import trained_range_warning

    demos = list_demos()
    assert demos
    for demo in demos:
        bounds = demo.card["input_tokens"]
        assert 1 <= bounds["min"] <= bounds["max"] < 128
        _, tok = load_checkpoint(demo.path)
        for example in demo.examples:  # the card's own examples are inside the range
            assert trained_range_warning(demo.card, example, tok.source) is None, (demo.name, example)


def test_the_demo_list_follows_its_folder(tmp_path):
    """list_demos reads the cards once, and again when a demo is added, removed or its card edited."""
    import json
    import os

    from model.checkpoints.demos import list_demos

    def demo(name: str, description: str) -> None:
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "config.json").write_text("{}")
        (tmp_path / name / "card.json").write_text(json.dumps({"description": description}))

    demo("b", "first")
    assert [(d.name, d.description) for d in list_demos(tmp_path)] == [("b", "first")]
    demo("a", "second")
    assert [d.name for d in list_demos(tmp_path)] == ["a", "b"]
    demo("b", "edited")
    card = tmp_path / "b" / "card.json"
    os.utime(card, ns=(card.stat().st_atime_ns, card.stat().st_mtime_ns + 10**9))  # a later time, however coarse
    assert [d.description for d in list_demos(tmp_path) if d.name == "b"] == ["edited"]
    (tmp_path / "a" / "config.json").unlink()
    (tmp_path / "a" / "card.json").unlink()
    (tmp_path / "a").rmdir()
    assert [d.name for d in list_demos(tmp_path)] == ["b"]
