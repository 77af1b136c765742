"""Every page on imported T5 / flan-T5 and BART / mBART folders: the page runs, draws its charts, shows no error,
and the sidebar names the format. The decoding page runs greedy, beam and sampling."""

import pytest

from tests.apptest_helpers import charts, messages, open_page
from tests.hf_families import build_bart, build_mbart, build_t5
from tests.i18n_helpers import msgid_starting, rendered

NO_SQRT = rendered(msgid_starting("This model does not divide by √d_k"))

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")
pytestmark = pytest.mark.filterwarnings("ignore")

TEXT = "the cat sat on a mat"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf-app")
    return {
        "flan-t5": build_t5(root, True).folder,
        "t5": build_t5(root, False).folder,
        "bart": build_bart(root).folder,
        "mbart": build_mbart(root).folder,
    }


def no_error(at) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.mark.parametrize("page", ["attention", "inside", "positional", "decoding", "model", "lecture_pack"])
@pytest.mark.parametrize("family", ["flan-t5", "mbart"])
def test_every_page_runs_on_the_family(folders, family, page):
    at = open_page(page, f"path:{folders[family]}", text=TEXT)
    no_error(at)
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert ("T5 / flan-T5" if "t5" in family else "BART / mBART") in captions
    if page not in ("lecture_pack", "model"):
        assert charts(at), page


@pytest.mark.parametrize("family", ["t5", "bart"])
@pytest.mark.parametrize("strategy", ["beam", "sample"])
def test_decoding_strategies_run_on_the_family(folders, family, strategy):
    at = open_page("decoding", f"path:{folders[family]}", text=TEXT, dec_strategy=strategy)
    no_error(at)
    assert charts(at)
    assert "Could not" not in messages(at)


def test_the_positional_page_draws_t5s_learned_bias_and_barts_table(folders):
    at = open_page("positional", f"path:{folders['flan-t5']}", text=TEXT, pe_view="relative")
    no_error(at)
    titles = [(c["layout"].get("title") or {}).get("text", "") for c in charts(at)]
    this = rendered("this model")
    assert rendered("Encoder: learned bias of {model}", model=this) in titles
    assert rendered("Decoder: learned bias of {model}", model=this) in titles
    at = open_page("positional", f"path:{folders['bart']}", text=TEXT, pe_view="mine")
    no_error(at)
    titles = [(c["layout"].get("title") or {}).get("text", "") for c in charts(at)]
    assert rendered("This model's learned positional table (source side)") in titles


def test_inside_attention_shows_t5s_raw_scores_and_its_position_bias(folders):
    at = open_page("inside", f"path:{folders['flan-t5']}", text=TEXT, in_kind="encoder_self")
    no_error(at)
    titles = [(c["layout"].get("title") or {}).get("text", "") for c in charts(at)]
    assert rendered("Scaled scores plus the positional bias") in titles, titles
    scores = next(c for c in charts(at) if (c["layout"].get("title") or {}).get("text") == "Raw and scaled scores")
    assert [t["name"] for t in scores["data"]] == ["q·k_j (raw)"]  # T5 does not divide by sqrt(d_k)
    assert any(NO_SQRT in i.value for i in at.info)
