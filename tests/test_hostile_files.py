"""A stranger's checkpoint folder, built to hurt: each hostile file is refused before it costs (by its size and
structure, before any parser builds it), or bounded, with a message whose id says why.

Built once per module in a temporary folder: a GPT-2 and a Llama folder (tiny, from tests/hf_one_stack.py), configs
of 20 and 60 MB, a 50 MB tokenizer.json, a tokenizer whose pre-tokenizer backtracks, every RoPE scaling spelling
transformers reads, and a decoder that never ends."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from model import CheckpointError, load_checkpoint
from model.checkpoints import safe_io
from model.checkpoints.formats import hf_common
from model.checkpoints.tokenizer_budget import TOO_LARGE
from model.text import bounded
from tests.hf_one_stack import BUILDERS
from tests.i18n_helpers import msgid, msgid_starting

pytestmark = pytest.mark.filterwarnings("ignore")

MB = 2**20
LOADS = json.loads  # the test's own parse, kept before nothing_parsed replaces json.loads
PANIC_REGEX = "(a|aa)+$"  # tokenizers' Oniguruma gives up (a Rust panic) on 40 or more a's then a mismatch


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A whole GPT-2 folder, and a Llama folder holding only its config.json (as transformers writes it): the RoPE
    check comes before any other file is read."""
    import transformers

    root = tmp_path_factory.mktemp("hostile-files")
    llama = root / "llama-config"
    llama.mkdir()
    transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=64,
                             rope_parameters={"rope_type": "default", "rope_theta": 500.0}).to_json_file(
        llama / "config.json")  # fmt: skip
    return {"gpt2": BUILDERS["gpt2"](root).folder, "llama": llama}


@pytest.fixture
def nothing_parsed(monkeypatch):
    """Any JSON parse or tokenizers parse of a whole file fails the test: the refusal must come before."""

    def refuse(*args, **kwargs):
        raise AssertionError("a hostile file was parsed")

    def small_only(text, *args, **kwargs):  # the folder's other files (a few KB) are parsed as before
        if len(text) > 64 * 2**10:
            refuse()
        return LOADS(text, *args, **kwargs)

    monkeypatch.setattr(safe_io.json, "loads", small_only)
    monkeypatch.setattr("tokenizers.Tokenizer.from_str", refuse)


def padded_config(folder, megabytes: float) -> None:
    """config.json: the real config plus a list of `{}` up to `megabytes` (the issue's 60 MB config: 21 M of them)."""
    data = LOADS((folder / "config.json").read_text())
    head = json.dumps(data)[:-1].encode() + b', "padding": ['
    n = int(megabytes * MB - len(head)) // 4
    (folder / "config.json").write_bytes(head + b"{}, " * n + b"{}]}")


def message(err: pytest.ExceptionInfo):
    return err.value.args[0]


@pytest.mark.parametrize("megabytes", [20, 60])
def test_a_config_of_many_megabytes_is_refused_from_its_size(copy, nothing_parsed, megabytes):
    folder = copy("gpt2")
    padded_config(folder, megabytes)
    assert (folder / "config.json").stat().st_size >= megabytes * MB - 4
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template == msgid("{name} is {size}, above the limit of {limit} for this kind of file")
    assert msg.values["name"] == "config.json" and msg.values["limit"] == safe_io.size_text(
        safe_io.SMALL_JSON_MAX_BYTES
    )


def test_a_config_within_the_size_but_of_too_many_values_is_refused_from_its_count(copy, nothing_parsed):
    folder = copy("llama")
    padded_config(folder, 0.9)  # about 236,000 `{}`: under 1 MB, far over what a config holds
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template.startswith("{origin} holds about {n} JSON values")
    assert msg.values["n"] > safe_io.SMALL_JSON_MAX_VALUES and msg.values["max"] == safe_io.SMALL_JSON_MAX_VALUES


def test_the_count_before_parsing_agrees_with_the_parsed_values():
    """check_shape's count is an upper bound of the values json.loads builds (exact without empty containers, once
    the strings' commas and brackets are left out), and its depth is the parsed depth: compared with a walk of the
    parsed result."""
    doc = {"a,[": [1, 2, {"b": "]]]", "c": [[0], {"z": 1}]}], "d\\": 'x"y', "e": None}

    def walk(node):  # values and depth of the parsed JSON
        if isinstance(node, dict):
            inner = [walk(v) for v in node.values()]
        elif isinstance(node, list):
            inner = [walk(v) for v in node]
        else:
            return 1, 0
        return 1 + sum(n for n, _ in inner), 1 + max((d for _, d in inner), default=0)

    data = json.dumps(doc).encode()
    values, depth = walk(doc)
    assert safe_io.check_shape(data, "x", max_values=values) == values  # within the limit: the exact count
    with pytest.raises(CheckpointError):
        safe_io.check_shape(data, "x", max_values=values - 1)
    with pytest.raises(CheckpointError) as err:
        safe_io.check_shape(data, "x", None, max_depth=depth - 1)
    assert message(err).template == msgid_starting("{origin} nests deeper than {max} levels")
    safe_io.check_shape(data, "x", None, max_depth=depth)


@pytest.fixture(scope="module")
def huge_tokenizer_json(tmp_path_factory):
    """A 50 MB tokenizer.json of 2.4 million vocabulary entries (written as bytes, never built as a dict)."""
    path = tmp_path_factory.mktemp("huge-tokenizer") / "tokenizer.json"
    n = 2_450_000
    head = b'{"version": "1.0", "added_tokens": [], "model": {"type": "WordLevel", "unk_token": "t0", "vocab": {'
    with open(path, "wb") as fh:
        fh.write(head)
        step = 200_000
        for start in range(0, n, step):
            fh.write(b"".join(b'"t%07d": %d, ' % (i, i) for i in range(start, min(n, start + step))))
        fh.write(b'"end": %d}}}' % n)
    return path


def test_a_50_mb_tokenizer_json_is_refused_by_the_tokenizer_budget_before_parsing(copy, nothing_parsed,
                                                                                   huge_tokenizer_json):  # fmt: skip
    folder = copy("gpt2")
    shutil.copy(huge_tokenizer_json, folder / "tokenizer.json")
    assert (folder / "tokenizer.json").stat().st_size > 48 * MB
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template == TOO_LARGE and msg.values["files"] == "tokenizer.json"


def test_a_tokenizer_json_with_more_entries_than_the_embeddings_is_refused_before_parsing(copy, monkeypatch):
    folder = copy("gpt2")
    data = json.loads((folder / "tokenizer.json").read_text())
    size = json.loads((folder / "config.json").read_text())["vocab_size"]
    extra = 8 * size + 5000  # more entries than MEMBERS_PER_ID per embedding allow
    data["model"]["vocab"].update({f"zz{i}": i for i in range(extra)})
    (folder / "tokenizer.json").write_text(json.dumps(data))

    def refuse(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr("tokenizers.Tokenizer.from_str", refuse)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template == msgid_starting("{origin} holds about {n} entries, more than a tokenizer")
    assert msg.values["n"] >= extra and msg.values["size"] == size


def backtracking_tokenizer(folder, regex: str = PANIC_REGEX) -> None:
    data = json.loads((folder / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}
    (folder / "tokenizer.json").write_text(json.dumps(data))


def test_the_panicking_regex_really_panics_in_the_tokenizers_library(built):
    """The reproduction: a Split on (a|aa)+$ and 60 a's then b end in a BaseException (pyo3's PanicException)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(built["gpt2"] / "tokenizer.json"))
    data = json.loads(tok.to_str())
    data["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": PANIC_REGEX}, "behavior": "Isolated",
                             "invert": False}  # fmt: skip
    tok = Tokenizer.from_str(json.dumps(data))
    with pytest.raises(BaseException) as err:
        tok.encode("a" * 60 + "b")
    assert not isinstance(err.value, Exception)  # past every `except Exception`


def test_a_tokenizer_whose_pre_tokenizer_panics_is_refused_at_load(copy):
    folder = copy("gpt2")
    backtracking_tokenizer(folder)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template == bounded.PROBE_FAILED and msg.values["what"] == "U+0061 x 60"


def test_a_tokenizer_slower_than_its_budget_on_a_probe_is_refused_at_load(copy, monkeypatch):
    folder = copy("gpt2")
    backtracking_tokenizer(folder, "(a|aa)+x")  # no panic, but backtracking on every run of a's
    monkeypatch.setattr(bounded, "PROBE_SECONDS", 0.0)  # any probe time is over a zero budget
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template == bounded.PROBE_SLOW and msg.values["budget"] == "0"


def test_a_panic_while_encoding_a_visitors_text_is_a_message(copy, monkeypatch):
    """A tokenizer that passed the probes but panics on a text: check_text answers with an error message, and the
    vocabulary's encode raises a ValueError (never a BaseException past the page's handlers)."""
    from model.text.inputs import check_text

    folder = copy("gpt2")
    backtracking_tokenizer(folder)
    monkeypatch.setattr(bounded, "check_probes", lambda *a, **k: None)  # as if the probes had missed it
    _, tok = load_checkpoint(folder)
    check = check_text("a" * 60 + "b", tok.source, 40)
    assert [e.template for e in check.errors] == [bounded.TOKENIZER_FAILED]
    with pytest.raises(bounded.TokenizerFailed):
        tok.source.encode("a" * 60 + "b")
    assert check_text("a b c", tok.source, 40).errors == []


def test_encoding_past_its_time_limit_stops_with_a_message(copy, monkeypatch):
    from model.text.inputs import check_text

    _, tok = load_checkpoint(copy("gpt2"))
    monkeypatch.setattr(bounded, "ENCODE_SECONDS", -1.0)  # already past the deadline after the first piece
    check = check_text("some text " * 100, tok.source, 40)
    assert [e.template for e in check.errors] == [bounded.TOKENIZER_SLOW]


# Every spelling of a RoPE scaling that transformers reads (rope_scaling with "type" or "rope_type", rope_parameters
# with a rope_type other than default, default with scaling keys, per layer type), and how it should be named.
ROPE_SPELLINGS = [
    ({"rope_scaling": {"type": "linear", "factor": 2.0}}, "linear"),
    ({"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, "dynamic"),
    ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}}, "yarn"),
    (
        {
            "rope_scaling": {
                "type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            }
        },
        "llama3",
    ),  # fmt: skip
    ({"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 500.0}}, "linear"),
    (
        {
            "rope_parameters": {
                "rope_type": "longrope",
                "short_factor": [1.0] * 2,
                "long_factor": [2.0] * 2,
                "original_max_position_embeddings": 32,
            }
        },
        "longrope",
    ),  # fmt: skip
    ({"rope_parameters": {"type": "dynamic", "factor": 2.0}}, "dynamic"),
    # a scaling in rope_scaling wins over a plain rope_parameters, as in transformers
    ({"rope_scaling": {"type": "linear", "factor": 2.0}, "rope_parameters": {"rope_type": "default"}}, "linear"),
    ({"rope_parameters": {"full_attention": {"rope_type": "yarn", "factor": 2.0}}}, "yarn"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 500.0, "factor": 4.0}}, None),
    ({"rope_scaling": {"type": "default", "factor": 4.0}}, None),
]


@pytest.mark.parametrize("changes, scaling", ROPE_SPELLINGS)
def test_every_rope_scaling_spelling_is_refused_by_name(copy, changes, scaling):
    folder = copy("llama")
    data = json.loads((folder / "config.json").read_text())
    data.update(changes)
    (folder / "config.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    parts = [p for p in message(err).values["problems"].parts if hasattr(p, "template")]
    if scaling is None:  # default carrying scaling keys
        assert [p.template for p in parts] == [hf_common.ROPE_KEYS_REFUSED] and "factor" in parts[0].values["keys"]
    else:
        assert [p.template for p in parts] == [hf_common.ROPE_SCALING_REFUSED]
        assert parts[0].values["scaling"] == scaling


@pytest.mark.parametrize("changes, scaling", [s for s in ROPE_SPELLINGS if "full_attention" not in str(s)])
def test_the_refused_spellings_are_those_transformers_reads_as_scaled(built, changes, scaling):
    """The reference: transformers' own reading of each spelling is a scaling (rope_type not default) or a default
    with keys beyond the plain ones; a plain config reads as default with nothing else."""
    import transformers

    def read(extra):
        base = json.loads((built["llama"] / "config.json").read_text())
        base.pop("rope_parameters", None)
        return transformers.LlamaConfig(**{**base, **json.loads(json.dumps(extra))}).rope_parameters

    params = read(changes)
    plain_keys = {"rope_type", "type", "rope_theta", "partial_rotary_factor"}
    assert params["rope_type"] != "default" or set(params) - plain_keys
    if scaling is not None:
        assert params["rope_type"] == scaling
    plain = read({"rope_parameters": {"rope_type": "default", "rope_theta": 500.0}})
    assert plain["rope_type"] == "default" and set(plain) <= plain_keys


def test_a_decoder_that_never_ends_stops_at_the_step_limit_within_its_counted_memory(monkeypatch):
    """A decoder-only model decoding past every end token (stop_at_eos=False: a model that never writes </s>) stops at
    the step limit, and what the recorder holds at its peak (the first pass's whole maps) is what first_pass_maps
    counts, inside decode_bytes."""
    from model.analysis.budget import F32, decode_bytes, first_pass_maps, steps_for
    from model.decoding import trace as trace_module
    from model.decoding.core import greedy_choice
    from model.network.config import TransformerConfig
    from model.network.transformer import build_model
    from model.text.tokenizer import IdVocab, Tokenizer

    cfg = TransformerConfig(shape="decoder-only", d_model=16, n_heads=2, d_ff=32, n_encoder_layers=0,
                            n_decoder_layers=2, src_vocab_size=50, tgt_vocab_size=50, max_len=128,
                            positional="learned", dropout=0.0)  # fmt: skip
    model = build_model(cfg, seed=0)
    vocab = IdVocab(50, 0, 1, 2, 3)
    held = []
    real = trace_module._last_rows

    def measuring(recorder, kind, layers, heads=0):
        if kind == "decoder_self":
            held.append(sum(t.numel() for maps in recorder.attention.values() for t in maps))
        return real(recorder, kind, layers, heads)

    monkeypatch.setattr(trace_module, "_last_rows", measuring)
    S = 40
    text = " ".join(str(5 + i) for i in range(S))
    trace = trace_module.decode_trace(model, Tokenizer(vocab, vocab), text, greedy_choice, stop_at_eos=False)
    assert len(trace.steps) == steps_for(cfg, S) == len(held)
    assert held[0] == first_pass_maps(cfg, S) == cfg.n_decoder_layers * cfg.n_heads * S * S
    assert max(held) == held[0]  # each later step holds one row per head and layer
    kept = sum(s.decoder_self.size for s in trace.steps)
    cache = 2 * cfg.n_decoder_layers * (S + len(trace.steps)) * cfg.d_model
    assert F32 * (held[0] + kept + cache) <= decode_bytes(cfg, S, steps_for(cfg, S))
    assert torch.is_grad_enabled()  # decoding left the process as it found it


def test_a_visitors_checkpoint_is_inspected_in_a_limited_worker(copy, monkeypatch):
    """The app reads a visitor's checkpoint first in a child process (ui/serving/workers.py): the record comes back, a
    refusal comes back as the same CheckpointError, and the reading itself ran in another process."""
    import os

    from ui.shell import model_picker

    folder = copy("gpt2")
    info = model_picker._inspect(str(folder), 1.0)
    assert info.format == "gpt2" and info.d_model == 32
    padded_config(folder, 60)
    with pytest.raises(CheckpointError) as err:
        model_picker._inspect(str(folder), 2.0)
    assert message(err).values["name"] == "config.json"
    monkeypatch.setattr(model_picker, "inspect_checkpoint", lambda path: os.getpid())
    assert model_picker._inspect(str(folder), 3.0) != os.getpid()


def test_a_refused_upload_keeps_its_message_not_its_traceback(tmp_path):
    """What a refused request keeps: the refusal's message, never the exception that was raised (its traceback's
    frames hold the upload's bytes and what was parsed from them)."""
    import gc
    import weakref

    from ui.serving.uploads import RefusedUpload, UploadStore

    store = UploadStore(budget=2**20, root=tmp_path / "uploads")

    class Held(bytearray):  # weakly referenceable bytes, as the upload data a frame holds
        pass

    def refuse_after_parsing():
        data = Held(b"x" * 1000)
        try:
            raise CheckpointError("refused")
        except CheckpointError as err:
            store.refuse("d1", err)
            return weakref.ref(data)

    held = refuse_after_parsing()
    gc.collect()
    assert held() is None  # the kept refusal did not keep the frame's data alive
    for _ in range(2):
        with pytest.raises(RefusedUpload) as err:
            store.path("d1", "x.zip", b"")
        assert str(err.value) == "refused"
    assert store._refused["d1"].__traceback__ is None


def test_a_normalizer_rule_on_a_character_outside_the_old_probe_is_refused_at_load(copy):
    """A Replace normalizer that rewrites U+A66E as 2,000 z's: the load-time scan of the Basic Multilingual Plane
    finds it (its block makes too many tokens, then the character alone does)."""
    from model.text.bounded import EXPANSION_REFUSED, PROBE

    assert "\ua66e" not in PROBE
    folder = copy("gpt2")
    data = json.loads((folder / "tokenizer.json").read_text())
    data["normalizer"] = {"type": "Replace", "pattern": {"String": "\ua66e"}, "content": "z" * 2000}
    (folder / "tokenizer.json").write_text(json.dumps(data))
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(folder)
    msg = message(err)
    assert msg.template == EXPANSION_REFUSED and msg.values["char"] == "\ua66e" and msg.values["n"] >= 1000
