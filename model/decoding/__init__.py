"""Decoding: one loop over one step function, one key/value cache and one step limit; strategies are policies.

    core.py           step limit (set_step_cap, step_limit, checked_limit), DecoderSession, the loop `run`,
                      RowsPolicy (one hypothesis per row), generate and greedy_ids (many sources, nothing recorded)
    trace.py          Step, Trace, decode_trace (one source, every step recorded)
    greedy.py, forced.py, sampling.py, beam.py    one module per strategy (beam keeps several hypotheses)
    strategies.py     STRATEGIES: every strategy by name (a new strategy: one module + one line there)
    strategy_export.py  beam searches and sampled decodings as downloads

Interventions (model/interventions/) are an argument of every strategy, applied by the same recording hooks as
`capture`'s and written into the trace.
"""

from .beam import BeamPolicy, BeamStep, BeamTrace, Hypothesis, beam_search, length_penalty_score
from .core import (
    DEFAULT_SLACK,
    Chooser,
    DecoderSession,
    Move,
    Policy,
    RowsPolicy,
    checked_limit,
    generate,
    greedy_choice,
    greedy_ids,
    pad_batch,
    run,
    set_step_cap,
    step_cap,
    step_limit,
)
from .forced import ForcedPrefix
from .greedy import greedy_decode
from .sampling import sample, sampling_distribution
from .strategies import STRATEGIES
from .trace import Step, Trace, decode_trace

__all__ = [
    "DEFAULT_SLACK",
    "STRATEGIES",
    "BeamPolicy",
    "BeamStep",
    "BeamTrace",
    "Chooser",
    "DecoderSession",
    "ForcedPrefix",
    "Hypothesis",
    "Move",
    "Policy",
    "RowsPolicy",
    "Step",
    "Trace",
    "beam_search",
    "checked_limit",
    "decode_trace",
    "generate",
    "greedy_choice",
    "greedy_decode",
    "greedy_ids",
    "length_penalty_score",
    "pad_batch",
    "run",
    "sample",
    "sampling_distribution",
    "set_step_cap",
    "step_cap",
    "step_limit",
]
