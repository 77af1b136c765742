"""Issue 34's details, headless: the model's badge in presentation mode (name and positions, escaped, translated),
the card's machine line, and the positional figures' titles and shading that said the wrong thing."""

from __future__ import annotations

import html

import numpy as np
import pytest

from i18n import _, language_scope
from model.network import pe_kinds
from tasks.cards import machine_text
from tests.apptest_helpers import open_page
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import msgid, msgid_starting
from ui.shell.presentation import model_badge
from viz import pe_kinds_figs as figs


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return f"path:{letters_checkpoint(tmp_path_factory.mktemp('badge'), card={'examples': ['cafe']})}"


def _badges(at) -> list[str]:
    return [e.proto.body for e in at.get("html") if 'id="viz-model-badge"' in e.proto.body]


def test_presentation_mode_names_the_model_and_its_positions_on_the_page(ckpt):
    at = open_page("attention", ckpt, text="cafe", present="1")
    (badge,) = _badges(at)
    label = ckpt.rsplit("/", 1)[-1]
    assert f"<b>{label}</b>" in badge and "Sinusoidal (fixed)" in badge
    at.sidebar.toggle(key="present").set_value(False).run()
    assert _badges(at) == []  # the sidebar names the model when it is open


def test_the_badge_escapes_the_name_and_speaks_the_page_language():
    html = model_badge('<img src=x onerror="alert(1)">', "rope")
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html and "RoPE" in html
    with language_scope("zh"):
        assert "位置编码：" in model_badge("fr_en", "sinusoidal")
    assert "positions: mystery" in model_badge("x", "mystery")  # a kind without a title: its name


def test_the_machine_line_says_one_thread_and_is_translated():
    one = machine_text("2-core CPU (AMD EPYC), 1 threads, torch 2.13.0+cpu")
    assert one.template == msgid("{cores}-core CPU ({cpu}), one thread, torch {torch}")
    assert str(one) == one.template.format(cores=2, cpu="AMD EPYC", torch="2.13.0+cpu")
    five = machine_text("16-core CPU (Intel(R) Xeon(R) Processor), 5 threads, torch 2.11.0+cu130")
    assert five.template == "{cores}-core CPU ({cpu}), {threads} threads, torch {torch}"
    assert five.values["cpu"] == "Intel(R) Xeon(R) Processor" and five.values["threads"] == "5"
    assert machine_text("a laptop") == "a laptop"  # someone else's card: as written


def test_rope_pairs_are_labelled_by_the_model_layout():
    theta = pe_kinds.rope_frequencies(8, 10000.0)
    title = lambda layout: figs.rope_frequencies(theta, layout=layout).layout.xaxis.title.text  # noqa: E731
    assert title("interleaved") == figs.ROPE_PAIRS["interleaved"] == msgid("pair i (dimensions 2i, 2i+1)")
    assert title("half") == figs.ROPE_PAIRS["half"] == msgid("pair i (dimensions i, i + d/2)")


def test_t5_buckets_shade_each_stack_exact_range():
    rel, enc = pe_kinds.relative_buckets(40, True, 32, 128)
    dec = pe_kinds.relative_buckets(40, False, 32, 128)[1]
    fig = figs.relative_buckets(rel, enc, dec, 32 // 4, 300, 32 // 2)
    spans = sorted((s.x0, s.x1) for s in fig.layout.shapes)
    assert spans == [(-15.5, 0.5), (-7.5, 7.5)]
    # the shading is where the buckets really are one per distance
    exact_dec = rel[(rel <= 0) & (rel > -16)]
    assert len(set(dec[np.isin(rel, exact_dec)])) == len(exact_dec) and dec[rel == -16] == dec[rel == -17]
    assert len(set(enc[np.abs(rel) < 8])) == 15 and enc[rel == 8] == enc[rel == 9]


def test_alibi_title_matches_its_heads_numbered_from_zero():
    fig = figs.alibi_slopes(np.array([2.0**-1, 2.0**-2, 2.0**-4]))
    assert fig.layout.title.text == "ALiBi slopes 2^(−8(h+1)/H), heads h = 0 … H−1"
    assert list(fig.data[0].x) == [0, 1, 2]  # head 0 has the slope 2^(-8/H)
    from model.network.positional import alibi_slopes

    assert alibi_slopes(8)[0].item() == pytest.approx(2 ** (-8 * (0 + 1) / 8))


def test_the_model_page_says_one_thread_for_a_demo_trained_on_one():
    from model.checkpoints.demos import CHECKPOINTS

    if not (CHECKPOINTS / "reverse").is_dir():
        pytest.skip("the reverse demo is not shipped here")
    at = open_page("model", "demo:reverse")
    text = " ".join(m.value for m in at.markdown)
    assert not at.exception and "one thread" in text and "1 threads" not in text


def test_the_rotation_names_the_dimensions_the_pair_turns():
    path = np.zeros((3, 2))
    interleaved = figs.rope_rotation(path, path, 2, 0.5)
    assert (interleaved.layout.xaxis.title.text, interleaved.layout.yaxis.title.text) == ("dimension 4", "dimension 5")
    half = figs.rope_rotation(path, path, 2, 0.5, dims=(2, 34))
    assert (half.layout.xaxis.title.text, half.layout.yaxis.title.text) == ("dimension 2", "dimension 34")


def test_chinese_y_titles_lose_their_parentheses_in_a_column():
    from ui.shell.presentation import upright_title

    assert upright_title("分数（距离 0 时为 1）") == "分数 · 距离 0 时为 1"
    assert upright_title("θᵢ（每个位置的弧度）") == "θᵢ · 每个位置的弧度"
    assert upright_title("头") == "头" and upright_title("PE(p) · PE(p+k)") == "PE(p) · PE(p+k)"  # a formula's own


def test_a_chinese_page_draws_its_y_titles_without_parentheses(ckpt):
    from tests.apptest_helpers import charts

    with language_scope("zh"):
        at = open_page("attention", ckpt, text="cafe", lang="zh", att_kind="encoder_self")
    titles = [c["layout"]["yaxis"]["title"]["text"] for c in charts(at) if c["layout"].get("yaxis", {}).get("title")]
    assert titles and all("（" not in t for t in titles), titles
    assert any(" · " in t for t in titles)  # "源词元（不写出词元）" as drawn in a column


def test_the_decoding_page_says_why_the_top_choice_stays_near_90_percent(tmp_path):
    from tasks.cards import label_smoothing_note

    note = label_smoothing_note({"recipe": {"label_smoothing": 0.1}})
    assert note.template == msgid_starting("Why the top choice is about {top}") and note.values == {
        "top": "90%",
        "eps": "0.1",
    }
    assert label_smoothing_note({"recipe": {}}) is None and label_smoothing_note({}) is None
    assert label_smoothing_note({"recipe": {"label_smoothing": "lots"}}) is None
    from model.checkpoints.demos import CHECKPOINTS

    if (CHECKPOINTS / "reverse").is_dir():
        import json

        from harness.apptest import shown

        # the value from the checkpoint's own card, read here; the sentence by its catalog key
        eps = json.loads((CHECKPOINTS / "reverse" / "card.json").read_text())["recipe"]["label_smoothing"]
        line = note.template.format(top=f"{1 - eps:.0%}", eps=f"{eps:g}")
        at = open_page("decoding", "demo:reverse", text="abc")
        assert line in [shown(c.value) for c in at.caption], [c.value for c in at.caption]
    # any checkpoint whose card records label smoothing, whatever its name: 0.25 -> "about 75%"
    smoothed = letters_checkpoint(tmp_path, card={"examples": ["cafe"], "recipe": {"label_smoothing": 0.25}})
    at = open_page("decoding", f"path:{smoothed}", text="cafe")
    from harness.apptest import shown

    assert note.template.format(top="75%", eps="0.25") in [shown(c.value) for c in at.caption]
    at = open_page("decoding", f"path:{letters_checkpoint(tmp_path / 'plain')}", text="cafe")  # no smoothing recorded
    assert not any(shown(c.value).startswith(note.template.split("{")[0]) for c in at.caption)


def test_training_without_snapshots_links_the_demo_that_has_them():
    from model.checkpoints.demos import list_demos

    having = [d.name for d in list_demos() if (d.path / "snapshots").is_dir()]  # in the sidebar's order
    if not having:
        pytest.skip("no shipped demo has snapshots here")
    with language_scope("zh"):
        at = open_page("training", "demo:reverse", present="1", lang="zh")
        label = _("Open the {name} demo here").format(name=having[0])
    links = [m.value for m in at.markdown if "](training?" in m.value]
    assert links == [f"[{label}](training?present=1&lang=zh&model=demo%3A{having[0]})"], links
    at = open_page("training", f"demo:{having[0]}")
    assert charts_of(at) and charts_of(at)[0]["layout"]["title"]["text"].startswith("Step 0 ")  # from the start


def _array(z):
    """A plotly JSON array (a typed array {"dtype", "bdata", "shape"}, or nested lists) as numpy."""
    if isinstance(z, dict):
        import base64

        shape = [int(n) for n in str(z.get("shape", "")).split(",") if n.strip()]
        a = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return a.reshape(shape) if shape else a
    return np.asarray(z, dtype=float)


def charts_of(at):
    from tests.apptest_helpers import charts

    return charts(at)


def test_inside_opens_on_the_most_spread_out_row():
    from model.analysis.inside import default_focus

    w = np.zeros((2, 2, 3, 4))
    w[..., 0] = 1.0  # every row one-hot ...
    w[1, 0, 2] = [0.25, 0.25, 0.25, 0.25]  # ... but layer 1, head 0, query 2: spread out
    w[0, 1, 1] = [0.5, 0.5, 0.0, 0.0]
    assert default_focus(w) == (1, 0, 2)
    assert default_focus(np.ones((1, 1, 2, 2)) / 2) == (0, 0, 0)  # ties: the first
    with pytest.raises(ValueError, match="layers, heads, queries, keys"):
        default_focus(np.ones((2, 2)))


def test_where_attention_misses_the_gold_link_the_page_says_so_and_links_attribution():
    from tasks.gold import disagreements

    weights = np.array([[0.1, 0.8, 0.1], [0.7, 0.2, 0.1], [0.0, 0.1, 0.9]])  # rows: target tokens 0, 1, 2
    assert disagreements(weights, [(0, 0), (1, 1), (2, 2)]) == [(0, 1, [0]), (1, 0, [1])]
    assert disagreements(weights, [(1, 0), (0, 1), (2, 2), (2, 9)]) == []  # every row peaks on a gold source
    from model.checkpoints.demos import CHECKPOINTS

    if not (CHECKPOINTS / "fr_en").is_dir():
        pytest.skip("the fr_en demo is not shipped here")
    at = open_page("attention", "demo:fr_en", text="je suis étudiant", present="1", att_layer="1", att_head="average")
    (line,) = [c.value for c in at.caption if "](attribution?" in c.value]
    from urllib.parse import parse_qs

    from harness.apptest import shown
    from ui.shell.explain import ATTRIBUTION_LINK, DISAGREEMENT

    target = line[line.index("](attribution?") + 2 : line.rindex(")")]
    link = parse_qs(target.split("?", 1)[1])
    assert link["model"] == ["demo:fr_en"] and link["text"] == ["je suis étudiant"] and link["present"] == ["1"]
    # the rows where the map's peak misses the gold link, recomputed here from the chart the page drew
    heat, gold = charts_of(at)[0]["data"][:2]
    z = _array(heat["z"])
    index = {label: i for i, label in enumerate(heat["y"])}
    keys = {label: i for i, label in enumerate(heat["x"])}
    golds: dict[int, set[int]] = {}
    for x, y in zip(gold["x"], gold["y"]):
        golds.setdefault(index[y], set()).add(keys[x])
    odd = [r for r in sorted(golds) if int(np.argmax(z[r])) not in golds[r]]
    assert odd and link["attr_tok"] == [str(odd[0])]  # the first such output token's Attribution view
    row = odd[0]
    written = html.unescape(heat["y"][row].split(" → ", 1)[1])  # the row's label: the token it writes
    source = [html.unescape(x.split(": ", 1)[1]) for x in heat["x"]]
    expected = _(DISAGREEMENT).format(
        n=len(odd), m=len(golds), out=written, peak=source[int(np.argmax(z[row]))],
        gold=" ".join(source[g] for g in sorted(golds[row])), link=f"[{_(ATTRIBUTION_LINK)}]({target})",
    )  # fmt: skip
    assert shown(line) == shown(expected)
    assert (written, source[int(np.argmax(z[row]))]) == ("i", "suis")  # the worked example: "i" peaks on "suis"
    at = open_page("attention", "demo:fr_en", text="je suis étudiant", att_layer="0")
    assert not at.exception
