"""Bad input, systematically: every page through AppTest with hundreds of generated inputs and selections.

Inputs: empty, whitespace, very long, mixed scripts, emoji, control and zero-width characters, unknown
symbols, valid text, and mixtures of these, typed into both sidebar boxes (source and target).
Selections: the widgets at their extremes (2 and 1024 positions, d_model 1024, base 2 and 1e9, every
layer, head, step and button), and nonsense in every URL parameter a page reads, as a shared link
brings it (layers and heads out of range or not numbers, lengths 0 and 100000, bases 0, -5, nan and
inf, steps -3 and 10**9, garbage decoding prefixes, top-k 0, models that do not exist).
Properties, for every example: no uncaught exception; the boxes keep exactly what was typed (or what
the link carried); the page shows a message naming each problem of the input, and no message about
problems it does not have; a valid input gets its figures, with its tokens on the axes; the selection
shown is valid, and a valid one is honoured.

Typing: one AppTest per page serves all of that page's examples (boxes and widgets set, page rerun),
as one person would use it. Links: a fresh AppTest per example, since a page reads the URL once.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from model.text.inputs import count_limit
from tests.apptest_helpers import PAGES, TITLES, chart_titles, charts, open_page, shown
from tests.browser_helpers import letters_checkpoint
from tests.i18n_helpers import matching, msgid, msgid_starting, rendered

LOAD_FAILED = msgid("Could not load this model: {message}")
UNKNOWN_MODEL = msgid_starting("The link names a model this app does not know")
TYPE_PATH = msgid("Type the path of a checkpoint folder or .pt file inside {folders}.")

LETTERS = "abcdefgh"  # the letters model's whole vocabulary (char level)
ROOM = 11  # max_len 12 minus the </s>
N_ENC, N_DEC, N_HEADS = 2, 3, 2
EXAMPLES = 80  # typed inputs per page (each example is a run of the page: the suite's time is counted)
LINK_EXAMPLES = 16  # links per page (each opens a fresh AppTest)

# -- inputs --------------------------------------------------------------------------------------------------

OTHER_SCRIPTS = "ЖжЯяДд αβγΩλ 中文字漢 日本語かなカナ 한국어 עברית العربية हिन्दी ไทย ğüşçöÉÀ ﬁ ǅ"
EMOJI = ["🙂", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🧪", "🫠", "1️⃣", "🏳️‍🌈"]
CONTROL = [
    "\x00",
    "\x01",
    "\x07",
    "\x1b",
    "\x7f",
    "\x85",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\u202e",
    "\u00ad",
    "\U000e0001",
    "\ue000",
    "\U0010fffd",
]  # the last two are private use: invisible here too
WHITESPACE = " \t\n\r\x0b\x0c\x1c\x1f\u00a0\u2003\u2028\u2029\u3000"
UNKNOWN = "!@#$%^&*()[]{}<>/\\|~`'\"0123456789ABCDEFGHxyz€§¿"
any_char = st.characters(exclude_categories=["Cs"])  # lone surrogates cannot come from a browser

valid = st.text(alphabet=LETTERS, min_size=1, max_size=ROOM)
piece = st.one_of(
    valid,
    st.text(alphabet=WHITESPACE, min_size=1, max_size=8),
    st.text(alphabet=UNKNOWN, min_size=1, max_size=12),
    st.text(alphabet=st.sampled_from(CONTROL) | st.characters(categories=["Cc", "Cf"]), min_size=1, max_size=6),
    st.lists(st.sampled_from(EMOJI), min_size=1, max_size=4).map("".join),
    st.text(alphabet=OTHER_SCRIPTS, min_size=1, max_size=12),
    st.text(alphabet=any_char, min_size=1, max_size=10),
)
texts = st.one_of(
    st.just(""),
    st.text(alphabet=WHITESPACE, max_size=30),  # whitespace only
    valid,
    st.text(alphabet=LETTERS, min_size=ROOM + 1, max_size=400),  # very long
    st.tuples(st.text(alphabet=LETTERS + " ", min_size=1, max_size=20), st.integers(5, 500)).map(
        lambda p: p[0] * p[1]
    ),  # up to 10,000 characters
    st.tuples(piece, st.integers(20, 300)).map(lambda p: p[0] * p[1]),
    st.text(alphabet=LETTERS + " ", min_size=ROOM + 1, max_size=100),
    st.text(alphabet=UNKNOWN + OTHER_SCRIPTS, min_size=1, max_size=30),  # nothing the model knows
    st.text(alphabet=st.sampled_from(CONTROL), min_size=1, max_size=5),  # control characters only
    st.lists(piece, min_size=1, max_size=5).map("".join),  # mixtures
    st.tuples(valid, piece, valid).map("".join),  # text the model reads, with something odd inside
    st.text(alphabet=any_char, max_size=60),
)
targets = st.one_of(st.just(""), valid, texts)  # the target box is mostly left empty


def symbols_of(text: str) -> list[str]:
    """What the model reads, by the rules the app promises: control and format characters (Unicode category C)
    removed, whitespace runs read as one space, every other character one symbol (a char-level model)."""
    kept = "".join(ch for ch in text if ch.isspace() or not unicodedata.category(ch).startswith("C"))
    return list(" ".join(kept.split()))


def source_ticks(text: str) -> list[str]:
    """The key axis of the attention heatmap: known letters, <unk> for the rest, cut to fit, then </s> (escaped)."""
    return [s if s in LETTERS else "&lt;unk&gt;" for s in symbols_of(text)][:ROOM] + ["&lt;/s&gt;"]


def expected_messages(text: str, what: str) -> set[str | tuple[str, ...]]:
    """The problems a person must be told about (the letters model knows a-h only, reads at most 11 tokens); a tuple:
    one of its messages."""
    removed = sum(1 for ch in text if not ch.isspace() and unicodedata.category(ch).startswith("C"))
    symbols = symbols_of(text)
    found = set()
    if removed:
        found.add(f"Removed {removed} control or invisible character{'s' if removed != 1 else ''} from the {what}.")
    if not symbols:
        return found | {f"The {what} is empty"}
    known = [s for s in symbols if s in LETTERS]
    if not known:
        found.add(f"None of the {what}'s symbols are in this model's vocabulary")
    elif len(known) < len(symbols):
        found.add("Not in the vocabulary, read as <unk>")
    if len(symbols) > count_limit(ROOM):  # counting stops there (issue 30): the work is bounded by the model
        # ... unless the text ends in the piece where the count passed the limit: then it is read whole and counted
        # exactly (model/text/bounded.read_bounded)
        exact = f"The {what} has {len(symbols)} tokens but this model reads at most {ROOM}"
        found.add((f"The {what} has more than ", exact))
    elif len(symbols) > ROOM:
        found.add(f"The {what} has {len(symbols)} tokens but this model reads at most {ROOM}")
    return found


# What any message about the input or target starts with: a shown message must be one of the expected ones.
MESSAGE_KINDS = re.compile(
    r"^(Removed \d+ control|The (input|target) is empty|None of the (input|target)'s symbols|"
    r"Not in the vocabulary|The (input|target) has (more than )?\d+ tokens)"
)


# -- selections, as a link brings them -----------------------------------------------------------------------

NOT_NUMBERS = ["", "abc", "nan", "1.5", "1e3", " ", "0x1", "1_0", str(10**30), "-" + str(10**30)]
LINK_SELECTIONS = {
    "attention": st.fixed_dictionaries(
        {
            "att_kind": st.sampled_from(["encoder_self", "decoder_self", "cross", "bogus", "", "Cross", " cross"]),
            "att_layer": st.sampled_from(["-1", "0", "1", "2", "3", "999", *NOT_NUMBERS]),
            "att_head": st.sampled_from(["average", "0", "1", "2", "-1", "Average", *NOT_NUMBERS]),
        }
    ),
    "positional": st.fixed_dictionaries(
        {
            "pe_d": st.sampled_from(["16", "32", "64", "7", "-16", "0", "100000", *NOT_NUMBERS]),
            "pe_len": st.sampled_from(["0", "1", "2", "3", "-5", "60", "1024", "1025", "100000", *NOT_NUMBERS]),
            "pe_base": st.sampled_from(
                ["0", "-5", "nan", "inf", "-inf", "1e308", "1.5", "2", "100", "1e9", "1e10", "abc", ""]
            ),
        }
    ),
    "decoding": st.fixed_dictionaries(
        {
            "dec_step": st.sampled_from(["-3", "0", "1", "5", "11", "12", str(10**9), *NOT_NUMBERS]),
            "dec_prefix": st.one_of(
                st.sampled_from(["", "garbage", "1,2,x", str(10**30), "-1", ",,,", "4," * 50, " 5 , 6 ", "2", "1"]),
                st.lists(st.integers(-3, 15), max_size=14).map(lambda ids: ",".join(map(str, ids))),
            ),
            "dec_topk": st.sampled_from(["0", "3", "5", "10", "11", "-1", *NOT_NUMBERS]),
            "dec_layer": st.sampled_from(["-1", "0", "2", "3", "99", *NOT_NUMBERS]),
        }
    ),
}  # the model page reads no selection from the URL


def as_int(raw: str) -> int | None:
    """A URL value that is plainly a whole number (digits, optional minus), else None."""
    return int(raw) if re.fullmatch(r"-?\d+", raw) else None


def as_float(raw: str) -> float | None:
    try:
        return float(raw)
    except ValueError:
        return None


# -- the test ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return f"path:{letters_checkpoint(tmp_path_factory.mktemp('fuzz'))}"


@pytest.fixture(scope="module")
def apps(ckpt):
    """One AppTest per page, opened on first use and kept for all of that page's examples."""
    opened = {}

    def get(page):
        if page not in opened:
            view = {"model_view": "shapes"} if page == "model" else {}  # the model view that reads the input
            opened[page] = open_page(page, ckpt, text="cafe", **view)
            assert not opened[page].exception, opened[page].exception
        return opened[page]

    return get


def shown_messages(at) -> list[str]:
    return [shown(m.value) for m in [*at.error, *at.warning]]


def check_attention(at, sel: dict, text: str, target: str) -> None:
    titles = {
        "encoder_self": "Encoder self-attention",
        "decoder_self": "Decoder self-attention (causal)",
        "cross": "Cross-attention (decoder → encoder)",
    }
    match = re.fullmatch(r"(.+), layer (\d+), (average of heads|head (\d+))", chart_titles(at)[0])
    assert match, chart_titles(at)[0]
    kind = {v: k for k, v in titles.items()}[match.group(1)]
    layer, head = int(match.group(2)), match.group(4)
    assert kind == (sel["att_kind"] if sel["att_kind"] in titles else "cross")
    n_layers = N_ENC if kind == "encoder_self" else N_DEC
    assert 0 <= layer < n_layers
    wanted = as_int(sel["att_layer"])
    if wanted is not None:  # a plain number: honoured when in range, else the last layer
        assert layer == (wanted if 0 <= wanted < n_layers else n_layers - 1)
    wanted_head = as_int(sel["att_head"])
    if wanted_head is not None:  # a plain number: honoured when in range, else the average
        assert head == (str(wanted_head) if 0 <= wanted_head < N_HEADS else None)
    elif sel["att_head"] in ("average", "abc", "", "nan"):
        assert head is None
    assert at.query_params["att_kind"] == kind and at.query_params["att_layer"] == str(layer)
    axes = charts(at)[0]["layout"]
    if kind != "decoder_self":  # the source on the key axis (and the query axis of encoder self-attention)
        assert axes["xaxis"]["ticktext"] == source_ticks(text)
    if kind == "encoder_self":
        assert axes["yaxis"]["ticktext"] == source_ticks(text)
    elif target.strip():  # teacher forcing: rows write the target's tokens (cut to fit), then the model's next one
        assert axes["yaxis"]["ticktext"][:-1] == source_ticks(target)[:-1]


def check_positional(at, sel: dict, text: str = "", target: str = "") -> None:
    match = re.fullmatch(r"PE matrix: (\d+) positions × (\d+) dimensions, base (\S+)", chart_titles(at)[0])
    assert match, chart_titles(at)[0]
    length, d_model, base = int(match.group(1)), int(match.group(2)), float(match.group(3))
    assert 2 <= length <= 1024 and d_model in (16, 32, 64, 128, 256, 512, 1024) and 2 <= base <= 1e9
    wanted_len = as_int(sel["pe_len"])
    if wanted_len is not None:  # a number out of range is clipped into it
        assert length == min(max(wanted_len, 2), 1024)
    wanted_d = as_int(sel["pe_d"])
    assert d_model == (wanted_d if wanted_d in (16, 32, 64) else 16)  # else the model's d_model
    wanted_base = as_float(sel["pe_base"])
    if wanted_base is not None and 2 <= wanted_base <= 1e9:
        assert base == pytest.approx(wanted_base, rel=1e-5)
    else:
        assert base == 10000


def check_decoding(at, sel: dict, text: str, target: str) -> None:
    match = re.match(r"\*\*Step (\d+) of (\d+)\*\*", at.markdown[0].value)
    assert match, at.markdown[0].value
    step, n_steps = int(match.group(1)), int(match.group(2))
    assert 1 <= step <= n_steps <= ROOM + 1
    wanted = as_int(sel["dec_step"])
    if wanted is not None:  # a plain number: honoured when there is such a step, else the first
        assert step == (wanted + 1 if 0 <= wanted < n_steps else 1)
    wanted_k = as_int(sel["dec_topk"])
    shown_k = [t for t in chart_titles(at) if re.fullmatch(r"Top \d+ next tokens", t)]
    assert shown_k and shown_k[0] in {"Top 3 next tokens", "Top 5 next tokens", "Top 10 next tokens"}
    if wanted_k is not None:
        assert shown_k[0] == f"Top {wanted_k if wanted_k in (3, 5, 10) else 5} next tokens"
    layer = re.search(r"layer (\d+)$", chart_titles(at)[-1])
    assert layer and 0 <= int(layer.group(1)) < N_DEC


def check_model(at, sel: dict, text: str, target: str) -> None:
    n_source = min(len(symbols_of(text)), ROOM) + 1
    walk = [m.value for m in at.markdown if m.value.startswith("For the current input:")]
    assert walk and f"S = {n_source} source tokens" in walk[0], walk
    n_target = re.search(r"T = (\d+) decoder tokens", walk[0]).group(1)
    if target.strip():
        assert int(n_target) == min(len(symbols_of(target)), ROOM) + 1
    n_q, n_k = {
        "encoder self": (n_source, n_source),
        "decoder self": (n_target, n_target),
        "cross": (n_target, n_source),
    }[sel["model_shape_kind"]]
    table = at.dataframe[-1].value
    scores = dict(zip(table["formula"], table["shape"]))["Q_h K_h^T / sqrt(d_k)"]
    assert scores == f"1 × {N_HEADS} × {n_q} × {n_k}"


def check_messages(at, text: str, target: str) -> bool:
    """Both boxes keep what they hold, each problem is named and no other claimed; returns whether the input is usable."""
    assert not at.exception, at.exception
    assert at.sidebar.text_area(key="text").value == text  # nothing typed is lost
    assert at.sidebar.text_input(key="target").value == target
    expected = expected_messages(text, "input")
    if target.strip():
        expected |= expected_messages(target, "target")
    shown = shown_messages(at)

    def said(e, m: str) -> bool:  # message m says e (a tuple: one of its messages)
        return any(a in m for a in (e if isinstance(e, tuple) else (e,)))

    for message in expected:
        assert any(said(message, m) for m in shown), f"{message!r} not among {shown}"
    for m in shown:
        assert not MESSAGE_KINDS.match(m) or any(said(e, m) for e in expected), f"unexpected message {m!r}"
    first = [e[0] if isinstance(e, tuple) else e for e in expected]
    usable = not any(e.startswith(("The input is", "The target is", "None of")) for e in first)
    event("usable input" if usable else "refused input")
    for e in first:
        event(re.sub(r"\d+", "N", e))
    assert bool(at.error) != usable, [e.value for e in at.error]
    if usable:
        assert len(charts(at)) >= MIN_CHARTS[page_of(at)]
    else:
        assert len(charts(at)) == CHARTS_WITHOUT_INPUT[page_of(at)]
    return usable


def page_of(at) -> str:
    return {v: k for k, v in TITLES.items()}[at.title[0].value]


# One view is built per run: the attention page's one heatmap, the PE matrix, decoding's four, the model's shapes table
MIN_CHARTS = {"attention": 1, "positional": 1, "decoding": 4, "model": 0}  # with a usable input
CHARTS_WITHOUT_INPUT = {"attention": 0, "positional": 1, "decoding": 0, "model": 0}
SETTINGS = dict(
    deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

# -- typing, with the widgets at their extremes ---------------------------------------------------------------

MOVES = {
    "attention": st.fixed_dictionaries(
        {
            "att_kind": st.sampled_from(["encoder_self", "decoder_self", "cross"]),
            "att_layer": st.integers(0, 10),
            "att_head": st.integers(0, 10),
        }
    ),
    "positional": st.fixed_dictionaries(
        {
            "pe_len": st.sampled_from([2, 3, 50, 1024]),
            "pe_d": st.sampled_from([16, 16, 16, 32, 64, 1024]),  # 1024 is slow
            "pe_base": st.sampled_from([2.0, 10000.0, 1e9]),
        }
    ),
    "decoding": st.fixed_dictionaries(
        {
            "press": st.sampled_from(["dec_first", "dec_prev", "dec_next", "dec_last", None]),
            "dec_step": st.one_of(st.none(), st.integers(0, 20)),
            "dec_topk": st.sampled_from([3, 5, 10]),
        }
    ),
    "model": st.fixed_dictionaries(
        {
            "model_part": st.sampled_from(["all", "encoder", "decoder", "embeddings and generator"]),
            "model_shape_kind": st.sampled_from(["encoder self", "decoder self", "cross"]),
        }
    ),
}


def move_widgets(at, page: str, moves: dict) -> dict:
    """Set the page's widgets that the last run drew; returns what was set."""
    done = {}

    def has(kind, key):
        return any(getattr(w, "key", None) == key for w in getattr(at, kind))

    if page == "attention" and has("radio", "att_kind"):
        done["att_kind"] = moves["att_kind"]
        n_layers = N_ENC if moves["att_kind"] == "encoder_self" else N_DEC  # the layer menu after the kind changes
        done["att_layer"] = moves["att_layer"] % n_layers
        done["att_head"] = ["average", *range(N_HEADS)][moves["att_head"] % (N_HEADS + 1)]
        if at.radio(key="att_kind").value == moves["att_kind"]:  # same kind: the menus stay, set them too
            at.selectbox(key="att_layer").set_value(done["att_layer"])
            at.selectbox(key="att_head").set_value(done["att_head"])
        else:
            del done["att_layer"], done["att_head"]
        at.radio(key="att_kind").set_value(moves["att_kind"])
    elif page == "positional":
        at.slider(key="pe_len").set_value(moves["pe_len"])
        at.select_slider(key="pe_d").set_value(moves["pe_d"])
        at.number_input(key="pe_base").set_value(moves["pe_base"])
        done.update(moves)
    elif page == "decoding" and has("button", "dec_next"):
        if moves["press"] and not at.button(key=moves["press"]).disabled:
            at.button(key=moves["press"]).click()
        elif moves["dec_step"] is not None and has("select_slider", "dec_step"):  # absent with one step
            slider = at.select_slider(key="dec_step")
            slider.set_value(min(moves["dec_step"], len(slider.options) - 1))  # options show steps from 1
        at.selectbox(key="dec_topk").set_value(moves["dec_topk"])
        done["dec_topk"] = moves["dec_topk"]
    elif page == "model":
        if has("selectbox", "model_part"):  # the weights view
            at.selectbox(key="model_part").set_value(moves["model_part"])
        if has("radio", "model_shape_kind"):
            at.radio(key="model_shape_kind").set_value(moves["model_shape_kind"])
            done["model_shape_kind"] = moves["model_shape_kind"]
    return done


@pytest.mark.parametrize("page", PAGES)
@settings(max_examples=EXAMPLES, **SETTINGS)
@given(text=texts, target=targets, data=st.data())
def test_typed_input_on_every_page(page, apps, text, target, data):
    at = apps(page)
    done = move_widgets(at, page, data.draw(MOVES[page], label="widgets"))
    at.sidebar.text_area(key="text").set_value(text)
    at.sidebar.text_input(key="target").set_value(target)
    at.run()
    usable = check_messages(at, text, target)
    if page == "positional":
        pe = at.slider(key="pe_len").value, at.select_slider(key="pe_d").value, at.number_input(key="pe_base").value
        assert chart_titles(at)[0] == f"PE matrix: {pe[0]} positions × {pe[1]} dimensions, base {pe[2]:g}"
        assert (pe[0], pe[1], pe[2]) == (done["pe_len"], done["pe_d"], done["pe_base"])
    if not usable:
        return
    if page == "attention":
        kind = at.radio(key="att_kind").value
        if "att_kind" in done:
            assert kind == done["att_kind"]
        layer, head = at.selectbox(key="att_layer").value, at.selectbox(key="att_head").value
        if "att_layer" in done:
            assert (layer, head) == (done["att_layer"], done["att_head"])
        check_attention(at, {"att_kind": kind, "att_layer": str(layer), "att_head": str(head)}, text, target)
    elif page == "decoding":
        step = at.session_state["dec_step"]
        check_decoding(at, {"dec_step": str(step), "dec_topk": str(at.selectbox(key="dec_topk").value)}, text, target)
    elif page == "model":
        check_model(at, {"model_shape_kind": at.radio(key="model_shape_kind").value}, text, target)


# -- links ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["attention", "positional", "decoding"])
@settings(max_examples=LINK_EXAMPLES, **SETTINGS)
@given(text=texts, target=targets, data=st.data())
def test_links_with_nonsense_selections(page, ckpt, text, target, data):
    selections = data.draw(LINK_SELECTIONS[page], label="selections")
    at = open_page(page, ckpt, text=text, **({"target": target} if target else {}), **selections)
    usable = check_messages(at, text, target)
    if page == "positional":
        check_positional(at, selections)  # the PE itself needs no input
    elif usable:
        {"attention": check_attention, "decoding": check_decoding}[page](at, selections, text, target)


BAD_MODELS = {  # the suite allows pytest's temp folder only (tests/conftest.py): all of these lie outside it
    "path:/nonexistent/model": "/nonexistent/model is not inside the folders this server may open",
    "path:/dev/null": "/dev/null is not inside the folders this server may open",
    "path:/etc": "/etc is not inside the folders this server may open",
    "path:a\x00b": "a?b is not inside the folders this server may open",
    "path:" + "x" * 5000: "x" * 200 + "… is not inside the folders this server may open",
}


@pytest.mark.parametrize("model", list(BAD_MODELS))
def test_links_to_checkpoints_that_do_not_exist(model):
    at = open_page("attention", model)
    assert not at.exception, at.exception
    errors = [shown(e.value) for e in at.sidebar.error]
    assert len(errors) == 1 and errors[0].startswith(rendered(LOAD_FAILED, message="")), errors
    assert BAD_MODELS[model] in errors[0]
    assert at.info[0].value == rendered("Choose a model in the sidebar to begin.") and not charts(at)


@pytest.mark.parametrize("model", ["path:", "demo:nothing", "upload:abc", "garbage", ""])
def test_links_to_no_model_start_as_usual(model):
    from model.checkpoints.demos import list_demos

    at = open_page("attention", model)
    assert not at.exception, at.exception
    errors = [shown(e.value) for e in at.sidebar.error]
    if model.startswith("path:") or not model:  # nothing named: nothing to say
        assert not errors
    else:  # a name the app does not know: said, never silently replaced (issue 21)
        assert len(errors) == 1 and re.search(matching(UNKNOWN_MODEL), errors[0]), errors
    if list_demos() and not model.startswith("path:"):  # the first demo, as without a link
        assert at.sidebar.selectbox(key="model_choice").value == list_demos()[0].name and charts(at)
    else:
        assert re.search(matching(TYPE_PATH), " ".join(i.value for i in at.sidebar.info))
