"""A light Streamlit client: one browser session as the server sees it, without a browser.

It speaks Streamlit's own websocket protocol (/_stcore/stream; BackMsg and ForwardMsg protobufs from
streamlit.proto): it asks for a run with a URL query and page, receives every element the script
sends, and reports when the server says the run finished. A run is "drawn" here when the last
element of the page has arrived (the browser's own drawing time is not included). Changing the input
sends the input box's new value as its widget state, as the front end does when someone types.

Used by tests/test_memory_bounded.py and benchmarks/bench_classroom.py, bench_hostile.py, bench_memory.py (many sessions in one asyncio
loop: dozens of sessions cost one process, not dozens of Chromiums).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from harness.app_server import WAIT_S

INPUT_LABEL = "Input text (source)"
FIRST_RUN_S = WAIT_S  # a first run waits as long as a browser test's first page (E2E_WAIT_S)


@dataclass
class Run:
    """What one script run sent: seconds from request to the end of the run, and its elements."""

    seconds: float
    kinds: list[str] = field(default_factory=list)  # element type of every element sent (plotly_chart, text_area, ...)
    errors: list[str] = field(default_factory=list)  # st.error texts
    exceptions: list[str] = field(default_factory=list)  # tracebacks shown on the page
    status: str = ""  # how the run ended (FINISHED_SUCCESSFULLY, ...)
    specs: list[str] = field(default_factory=list)  # each plotly chart's figure JSON, in page order

    @property
    def charts(self) -> int:
        return self.kinds.count("plotly_chart")

    def drew(self, page: str) -> bool:
        """The run finished without errors and drew its page's default view: a chart, or on the model page
        (whose default view is the configuration) its table."""
        if self.status != "FINISHED_SUCCESSFULLY" or self.exceptions or self.errors:
            return False
        return self.charts >= 1 or (page == "model" and "dataframe" in self.kinds)


class Stalled(TimeoutError):
    """A run that sent no end within its time: which page and query, and what had arrived (element kinds)."""

    def __init__(self, page: str, query: str, seconds: float, kinds: list[str]):
        super().__init__(f"page {page or '(default)'!r} ?{query}: no end of run in {seconds:.0f} s; "
                         f"{len(kinds)} elements arrived, the last {kinds[-3:]}")  # fmt: skip
        self.page = page


class StreamSession:
    """One session over one websocket; `await open(...)` first, then `await type_text(...)`."""

    def __init__(self, origin: str, extra_headers: dict[str, str] | None = None):
        self.url = origin.replace("http://", "ws://", 1) + "/_stcore/stream"
        self.headers = extra_headers or {}
        self.ws = None
        self.page = ""
        self.query = ""
        self.input_id: str | None = None
        self.session_id: str | None = None
        # the server's settings as the front end gets them (NewSession.config: gather_usage_stats, toolbar_mode, ...)
        self.config = None

    async def __aenter__(self) -> StreamSession:
        import websockets

        self.ws = await websockets.connect(
            self.url, subprotocols=["streamlit"], max_size=2**28, additional_headers=self.headers, open_timeout=60
        )
        return self

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()

    async def _run(self, widgets=None, timeout_s: float = 120) -> Run:
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_name = self.page
        if widgets is not None:
            state.widget_states.CopyFrom(widgets)
        started = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        run = Run(0.0)
        deadline = started + timeout_s
        while True:
            try:
                raw = await asyncio.wait_for(self.ws.recv(), max(deadline - time.perf_counter(), 0.001))
            except TimeoutError:
                raise Stalled(self.page, self.query, timeout_s, run.kinds) from None
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self.session_id = fwd.new_session.initialize.session_id
                self.config = fwd.new_session.config
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                what = element.WhichOneof("type")
                run.kinds.append(what)
                if what == "plotly_chart":
                    run.specs.append(element.plotly_chart.spec)
                if what == "alert" and element.alert.format == element.alert.ERROR:
                    run.errors.append(element.alert.body)
                elif what == "exception":
                    run.exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif what == "text_area" and element.text_area.label == INPUT_LABEL:
                    self.input_id = element.text_area.id
            elif kind == "script_finished":
                run.status = ForwardMsg.ScriptFinishedStatus.Name(fwd.script_finished)
                if fwd.script_finished != fwd.FINISHED_EARLY_FOR_RERUN:
                    run.seconds = time.perf_counter() - started
                    return run

    async def open(self, page: str = "", timeout_s: float = FIRST_RUN_S, **params: str) -> Run:
        """The first run of a page ("" for the default) with URL parameters, as a browser's first load. It may be
        the server's first run of anything (imports, the model's load): it gets the browser tests' first wait."""
        self.page, self.query = page, urllib.parse.urlencode(params)
        return await self._run(timeout_s=timeout_s)

    async def type_text(self, text: str) -> Run:
        """Put new text in the input box, as typing and Ctrl+Enter do; returns the run it caused."""
        if self.input_id is None:
            raise RuntimeError("the page has shown no input box yet")
        from streamlit.proto.WidgetStates_pb2 import WidgetStates

        widgets = WidgetStates()
        widget = widgets.widgets.add()
        widget.id = self.input_id
        widget.string_value = text
        return await self._run(widgets)


def distinct_texts(n: int, letters: str = "abcdefghijklmnopqrst", longest: int = 24, seed: int = 0) -> list[str]:
    """n different inputs for the letter demos (reverse, copy): random strings of 1..longest letters."""
    import random

    rng, seen = random.Random(seed), {}
    while len(seen) < n:
        text = "".join(rng.choice(letters) for _ in range(rng.randint(1, longest)))
        seen.setdefault(text, None)
    return list(seen)


async def feed(origin: str, page: str, texts: list[str], model: str = "demo:reverse", after=None) -> list[Run]:
    """One session on `page` typing each text in turn; `after(i, run)` is called after each run."""
    runs = []
    async with StreamSession(origin) as session:
        runs.append(await session.open(page, model=model, text=texts[0]))
        for i, text in enumerate(texts[1:], 1):
            runs.append(await session.type_text(text))
            if after is not None:
                after(i, runs[-1])
    return runs


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (VmRSS), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")
