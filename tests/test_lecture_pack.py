"""The lecture pack: the HTML builder on tiny arrays, the records, the command, and the app page."""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from plotly.offline import get_plotlyjs

from i18n import _
from model import Capture, Step, Trace
from model.analysis import pe_analysis as pea
from model.network.position_kinds.registry import kind as positional_kind
from pack.page import lecture_pack_html
from pack.records import MAX_CHARS, PackInput, PackPE, PackRecords, bounded_inputs, pack_records
from tests.apptest_helpers import open_page
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import msgid, msgid_starting, rendered
from viz.tokens import display_token

NO_PE = msgid_starting("This model adds no positional encoding: the embeddings alone")
NOTHING_ADDED = _(msgid_starting("This model adds nothing to its embeddings: each head")).split(":")[
    0
]  # the kinds' start

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = "</script><script>alert(1)</script>"
L_ENC, L_DEC, H, D = 3, 2, 3, 8  # asymmetric layer counts and three heads catch axis mix-ups


def softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def fake_input(text: str, src: list[str], out: list[str], seed: int) -> PackInput:
    """A Capture and a Trace made of random attention (no model): out are the written tokens, ending with </s>."""
    rng = np.random.default_rng(seed)
    S, T = len(src), len(out)  # T decoder inputs: <s> + out[:-1]
    tgt = ["<s>"] + out[:-1]
    causal = np.triu(np.ones((T, T), bool), 1)
    dec = rng.normal(size=(L_DEC, H, T, T))
    dec[..., causal] = -np.inf
    cap = Capture(
        source_tokens=src,
        target_tokens=tgt,
        predicted_tokens=out,
        source_ids=np.arange(S),
        target_ids=np.arange(T),
        encoder_self=softmax(rng.normal(size=(L_ENC, H, S, S))),
        decoder_self=softmax(dec),
        cross=softmax(rng.normal(size=(L_DEC, H, T, S))),
        source_pe=pea.pe_table(S, D).astype(np.float32),
        target_pe=pea.pe_table(T, D).astype(np.float32),
        source_embeddings=rng.normal(size=(S, D)).astype(np.float32),
        target_embeddings=rng.normal(size=(T, D)).astype(np.float32),
        generated=True,
    )
    steps = []
    for t, token in enumerate(out):
        probs = np.sort(rng.random(3))[::-1].astype(np.float32)
        steps.append(
            Step(
                index=t,
                token=token,
                token_id=10 + t,
                prob=float(probs[0]),
                forced=False,
                top_ids=np.array([10 + t, 1, 2]),
                top_tokens=[token, "x", "y"],
                top_probs=probs,
                decoder_self=softmax(rng.normal(size=(L_DEC, H, t + 1))),
                cross=softmax(rng.normal(size=(L_DEC, H, S))),
            )
        )
    trace = Trace(src, list(range(S)), steps, "eos", text=" ".join(out[:-1]))
    return PackInput(text, cap, trace, ["a warning"])


def fake_records(n_inputs: int = 2) -> PackRecords:
    inputs = [
        fake_input("the cat", ["the", "cat", HOSTILE, "</s>"], ["le", "chat", "</s>"], 0),
        fake_input("a & b", ["a", "&", "b", "</s>"], ["x", "y", "z", "w", "</s>"], 1),
    ][:n_inputs]
    table = pea.pe_table(20, D)
    dots = pea.offset_dot_products(table, [0, 5], 10)
    pe = PackPE(table, "sinusoidal", "interleaved", 10000.0, pea.pe_wavelengths(D), [0, 1, 4], [0, 5], dots)
    return PackRecords(
        "tiny <model>",
        1234,
        {"n_encoder_layers": L_ENC, "n_decoder_layers": L_DEC, "n_heads": H, "d_model": D},
        inputs,
        pe,
    )


def pack_data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="pack-data">(.*?)</script>', page, re.DOTALL)
    assert found, "no pack data in the page"
    return json.loads(found.group(1))


def weights(b64: str, shape) -> np.ndarray:
    """The pack's uint16 encoding back to float weights (65535: NaN)."""
    steps = np.frombuffer(base64.b64decode(b64), dtype="<u2").reshape(shape)
    return np.where(steps == 65535, np.nan, steps / 65534)


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each script."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script, self._text = True, []

    def handle_data(self, data):
        if self._in_script:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._in_script:
            self.scripts.append("".join(self._text))
            self._in_script = False


@pytest.fixture(scope="module")
def records():
    return fake_records()


@pytest.fixture(scope="module")
def page(records):
    return lecture_pack_html(records)


def test_the_pack_holds_every_layer_and_head_of_every_kind(records, page):
    data = pack_data(page)
    assert len(data["inputs"]) == 2
    for item, inp in zip(data["inputs"], records.inputs):
        for kind, layers in (("encoder_self", L_ENC), ("decoder_self", L_DEC), ("cross", L_DEC)):
            att = item["attention"][kind]
            expected = getattr(inp.capture, kind)
            assert att["shape"][:2] == [layers, H + 1]
            z = weights(att["z"], att["shape"])
            shown = np.nan_to_num(z)  # decoder self: masked cells are NaN (drawn grey)
            np.testing.assert_allclose(shown[:, :H], expected, atol=1e-5)  # every layer and head
            np.testing.assert_allclose(shown[:, H], expected.mean(axis=1), atol=1e-5)  # the head average
            if kind == "decoder_self":
                T = expected.shape[-1]
                assert np.isnan(z[..., np.triu(np.ones((T, T), bool), 1)]).all()
                assert not np.isnan(z[..., np.tril(np.ones((T, T), bool))]).any()
    # one layer selector per kind and input, with every layer; head selectors with every head and the average
    tags = Tags()
    tags.feed(page)
    selects = re.findall(r'<select class="(layer|head)">(.*?)</select>', page)
    layer_counts = sorted(len(re.findall("<option", opts)) for cls, opts in selects if cls == "layer")
    assert layer_counts == sorted([L_ENC, L_DEC, L_DEC] * 2)
    assert all(len(re.findall("<option", opts)) == H + 1 for cls, opts in selects if cls == "head")


def test_each_decoding_step_has_its_rows_and_candidates(records, page):
    dec = pack_data(page)["inputs"][1]["decoding"]
    trace = records.inputs[1].trace
    T, S = len(trace.steps), len(trace.source_tokens)
    assert dec["n"] == T
    cross, self_rows = weights(dec["cross"], (T, L_DEC * H, S)), weights(dec["self"], (T, L_DEC * H, T))
    for t, step in enumerate(trace.steps):
        np.testing.assert_allclose(cross[t], step.cross.reshape(L_DEC * H, S), atol=1e-5)
        np.testing.assert_allclose(self_rows[t, :, : t + 1], step.decoder_self.reshape(L_DEC * H, t + 1), atol=1e-5)
        assert np.isnan(self_rows[t, :, t + 1 :]).all()  # keys not yet written
        assert dec["top"][t]["y"][0] == f"1. {display_token(step.token)}" and dec["text"][t]["token"] == step.token


def test_the_pack_loads_nothing_from_the_network_and_escapes_tokens(page):
    tags = Tags()
    tags.feed(page)
    for tag, attrs in tags.tags:
        assert tag not in ("iframe", "img", "link", "object", "embed"), tag
        assert "src" not in attrs, (tag, attrs)
        assert attrs.get("href", "#").startswith("#"), (tag, attrs)  # links only within the page
    plotly_js = get_plotlyjs()
    assert page.count(plotly_js) == 1  # inlined once
    rest = page.replace(plotly_js, "")
    assert "http://" not in rest and "https://" not in rest and "@import" not in rest and "url(" not in rest
    assert HOSTILE not in page and "alert(1)</script>" not in page  # token text never ends a script
    assert html.escape("tiny <model>") in page
    assert len(tags.scripts) == 3  # plotly.js, the data, the pack's script: all inline


def test_the_pack_size_is_plotly_plus_little(page):
    extra = len(page.encode()) - len(get_plotlyjs().encode())
    assert 0 < extra < 400_000, extra  # two tiny inputs: figures, data and script only
    one = lecture_pack_html(fake_records(1))
    assert len(one) < len(page)  # a second input adds to the file


def test_a_pack_needs_an_input():
    with pytest.raises(ValueError, match="lecture pack needs"):
        lecture_pack_html(PackRecords("m", 1, {}, [], fake_records().pe))


def test_bounded_inputs_drop_blanks_and_duplicates_and_cut():
    texts, notes = bounded_inputs(
        [" a ", "", "b", "a", "x" * (MAX_CHARS + 5)] + [f"t{i}" for i in range(30)], max_inputs=5
    )
    assert texts == ["a", "b", "x" * MAX_CHARS, "t0", "t1"]
    assert len(notes) == 2 and "first 5" in notes[0]


def test_pack_records_run_each_input_and_refuse_unreadable_ones(tmp_path):
    from model import load_checkpoint

    model, tok = load_checkpoint(letters_checkpoint(tmp_path))
    seen = []
    records = pack_records(model, tok, ["cafe", "bad"], "letters", progress=lambda d, t: seen.append((d, t)))
    assert seen == [(1, 2), (2, 2)] and [i.text for i in records.inputs] == ["cafe", "bad"]
    assert records.inputs[0].capture.source_tokens == list("cafe") + ["</s>"]
    assert records.inputs[0].capture.encoder_self.shape[:2] == (2, 2) and records.pe.table.shape == (12, 16)
    with pytest.raises(ValueError, match="input 2"):
        pack_records(model, tok, ["cafe", "xyz"])


def test_the_command_writes_a_pack_for_a_demo(tmp_path):
    out = tmp_path / "pack.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.lecture_pack",
            "--model",
            "reverse",
            "--input",
            "stressed",
            "--input",
            "abc",
            "--out",
            str(out),
            "--title",
            "Week 3 <seq2seq>",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "2 inputs" in done.stdout
    page = out.read_text(encoding="utf-8")
    data = pack_data(page)
    assert len(data["inputs"]) == 2 and "Input 1: stressed" in page and "Input 2: abc" in page
    assert "<h1>Week 3 &lt;seq2seq&gt;: reverse</h1>" in page and "Lecture pack" not in page  # the title, escaped
    assert all(item["decoding"]["n"] >= 1 for item in data["inputs"])
    # the model starts opening right after the box, before the static sections and plotly are read and drawn
    opening, static, plotly = (
        page.index("window.PackOpening ="),
        page.index('<div id="static">'),
        page.index(get_plotlyjs()[:500]),
    )
    assert page.index('id="pack-model"') < opening < static < plotly < page.index('id="pack-data"')


def test_the_command_packs_another_implementations_state_dict_with_its_heads_and_vocabulary(tmp_path, capsys):
    """An Annotated Transformer state_dict names neither its heads nor its words: given as the import page asks."""
    import json

    import torch

    from harness.reference.annotated import ann_make_model
    from scripts.lecture_pack import main

    torch.save(ann_make_model(9, 7, N=1, d_model=12, d_ff=16, h=3, max_len=20).state_dict(), tmp_path / "ann.pt")
    specials = ["<s>", "</s>", "<blank>", "<unk>"]
    words = {"source": specials + "ein Hund bellt laut .".split(), "target": specials + "a dog .".split()}
    (tmp_path / "vocab.json").write_text(json.dumps(words))
    out, args = tmp_path / "pack.html", ["--model", str(tmp_path / "ann.pt"), "--input", "ein Hund"]
    assert main([*args, "--out", str(out)]) == 1 and not out.exists()  # the heads are not in the file
    assert main([*args, "--n-heads", "3", "--vocab", str(tmp_path / "vocab.json"), "--out", str(out)]) == 0
    page = out.read_text(encoding="utf-8")
    keys = pack_data(page)["inputs"][0]["attention"]["encoder_self"]["k"]  # as the hover shows them: escaped
    assert 'data-testid="pack-input"' in page and keys == ["&lt;s&gt;", "ein", "Hund", "&lt;/s&gt;"]


def test_the_command_makes_the_folder_it_writes_into_and_names_a_place_it_cannot_write(tmp_path, capsys):
    from scripts.lecture_pack import main

    out = tmp_path / "week3" / "slides" / "pack.html"  # folders that do not exist yet
    done = subprocess.run(
        [sys.executable, "-m", "cli.pack", "--model", "reverse", "--input", "abc", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(pack_data(out.read_text(encoding="utf-8"))["inputs"]) == 1
    (tmp_path / "a-file").write_text("")
    assert main(["--model", "reverse", "--input", "abc", "--out", str(tmp_path / "a-file" / "pack.html")]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith("error: ")  # a reason, not a traceback


def test_the_command_names_a_missing_model(tmp_path, capsys):
    from scripts.lecture_pack import main

    assert main(["--model", str(tmp_path / "none"), "--out", str(tmp_path / "x.html")]) == 1
    assert "no checkpoint" in capsys.readouterr().err and not (tmp_path / "x.html").exists()


def test_the_page_builds_a_pack_to_download(tmp_path, monkeypatch):
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    given = []
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        given.append((path_or_data, mimetype, filename))
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    at = open_page("lecture_pack", f"path:{letters_checkpoint(tmp_path)}", timeout=120)
    assert not at.exception, at.exception
    box = at.text_area(key="pack_inputs")
    assert box.value == "abcdefgh\ncafe\nhead"  # the current input, then the card's other examples
    box.set_value("cafe\nbead\ncafe").run()
    assert not at.get("download_button")
    at.button(key="pack_build").click().run(timeout=120)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert [b.proto.label for b in at.get("download_button")] == [rendered("Download the lecture pack (.html)")]
    packs = [g for g in given if g[2] == "lecture_pack.html"]
    assert packs and packs[-1][1] == "text/html"
    page = packs[-1][0].decode("utf-8") if isinstance(packs[-1][0], bytes) else packs[-1][0]
    assert [m for m in re.findall(r"Input \d: (\w+)", page)][:2] == ["cafe", "bead"]
    assert len(pack_data(page)["inputs"]) == 2  # the duplicate line counted once


def test_the_page_points_to_the_folder_pack_for_a_model_too_large_for_one_file(tmp_path, monkeypatch):
    """A model above the one-file budget: the downloaded pack runs no model, and the page names the command that
    writes the folder pack which carries it (the server builds no folder)."""
    import pack.export as pack_export

    monkeypatch.setattr(pack_export, "MAX_BYTES", 1000)  # the letters model (an encoder-decoder) is then too large
    at = open_page("lecture_pack", f"path:{letters_checkpoint(tmp_path)}", timeout=120)
    at.text_area(key="pack_inputs").set_value("cafe").run()
    at.button(key="pack_build").click().run(timeout=120)
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    infos = [i.value for i in at.info]
    assert len(infos) == 2 and "transformer-viz pack --model FOLDER --out pack.html" in infos[1]
    monkeypatch.setattr(pack_export, "MAX_BYTES", 7_000_000)
    at.button(key="pack_build").click().run(timeout=120)  # within the budget: the pack runs it, nothing to point to
    assert [i.value for i in at.info] == []


def test_the_page_says_when_an_input_cannot_be_read(tmp_path):
    at = open_page("lecture_pack", f"path:{letters_checkpoint(tmp_path)}", timeout=120)
    at.text_area(key="pack_inputs").set_value("cafe\nxyz").run()
    at.button(key="pack_build").click().run(timeout=120)
    assert not at.exception
    assert "input 2" in " ".join(e.value for e in at.error)
    assert at.text_area(key="pack_inputs").value == "cafe\nxyz"  # what the user typed stays


@pytest.mark.parametrize(
    "module, banned",
    [("pack.page", ("torch", "streamlit")), ("pack.records", ("plotly", "streamlit"))],
)
def test_the_builder_and_the_records_keep_the_boundaries(module, banned):
    code = f"import sys, {module}; print(sorted(m for m in {banned!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr


def test_a_model_without_positions_gets_a_sentence_instead_of_pe_figures(page):
    records = fake_records(1)
    records.pe = PackPE(np.zeros((20, D)), "none", "interleaved", 10000.0, None, [0, 1, 4], [0, 5], np.zeros((2, 11)))
    none = lecture_pack_html(records)
    assert html.escape(rendered(NO_PE), quote=False) in none and "learned" not in none
    assert not {"pe-matrix", "pe-offsets"} & set(pack_data(none)["figures"])
    assert {"pe-matrix", "pe-offsets"} <= set(pack_data(page)["figures"])  # the sinusoidal one has them


@pytest.mark.parametrize("kind", ["rope", "alibi", "relative"])
def test_a_model_with_positions_inside_attention_says_so_instead_of_a_zero_table(tmp_path, kind):
    from model import Tokenizer, TransformerConfig, Vocab, build_model

    vocab = Vocab.build("abcdefgh", level="char")
    config = TransformerConfig.preset("tiny", src_vocab_size=12, tgt_vocab_size=12, n_heads=2, positional=kind)
    records = pack_records(build_model(config, seed=0), Tokenizer(vocab, vocab), ["cafe"], "kinds")
    text = lecture_pack_html(records)
    section = text[text.index('<section id="pe">') :]
    section = section[: section.index("</section>")]
    assert NOTHING_ADDED in section and "pe-matrix" not in section
    assert {"rope": "RoPE", "alibi": "ALiBi", "relative": "T5"}[kind] in section
    # each input's positional part (and so the typed input's, cloned from the first) says the same, draws no zero rows
    part = text[text.index('<h3 id="in0-pe">') : text.index('<h3 id="in0-decoding">')]
    assert html.escape(_(positional_kind(kind).PACK_TEXT)) in part and 'href="#pe"' in part
    assert "data-figure" not in part and "sinusoids" not in part
    assert not {"in0-pe-rows", "in0-pe-source", "in0-pe-target"} & set(pack_data(text)["figures"])


def test_the_command_writes_a_model_above_the_one_file_budget_as_a_folder(tmp_path, monkeypatch):
    """An encoder-decoder whose graphs exceed the one-file budget (here: a budget of 0): --out pack.html writes
    pack/index.html and its float16 weights beside it, which the page loads with <script src>."""
    from cli.pack import main
    from pack import export as pack_export

    monkeypatch.setattr(pack_export, "MAX_BYTES", 0)
    assert (
        main(["--model", "translate", "--input", "the cat sees the dog .", "--out", str(tmp_path / "pack.html")]) == 0
    )
    folder = tmp_path / "pack"
    assert sorted(p.name for p in folder.iterdir()) == ["index.html", "weights-00.js"]
    page = (folder / "index.html").read_text(encoding="utf-8")
    assert '<script src="weights-00.js"></script>' in page and not (tmp_path / "pack.html").exists()
    assert (
        (folder / "weights-00.js").read_text().startswith("(window.PackWeights = window.PackWeights || []).push([0, ")
    )


def test_a_folder_packs_page_says_in_its_language_which_weight_files_did_not_load():
    """The page of a folder pack names the weight files it did not find in the pack's language (pack_net.js fills in
    the template; tests/test_pack_parity_browser.py opens such a page without its files)."""
    from i18n import _, language_scope
    from pack.live import CHUNK, MISSING_WEIGHTS, public_spec

    spec = {"weights": {"location": "weights.bin", "bytes": CHUNK + 1, "data": b"\0" * (CHUNK + 1)}}
    for lang in ("en", "zh"):
        with language_scope(lang):
            weights = public_spec(spec)["weights"]
            assert weights["missing"] == _(msgid(MISSING_WEIGHTS)) and weights["files"] == [
                "weights-00.js",
                "weights-01.js",
            ]
            assert "data" not in weights and ("{n}" in weights["missing"] and "{files}" in weights["missing"])
            said = weights["missing"]
    assert said != MISSING_WEIGHTS  # the Chinese catalog's, not the English id
