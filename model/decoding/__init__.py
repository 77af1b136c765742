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

from ..lazy import exports

__getattr__, __dir__ = exports(
    __name__,
    {
        "BeamPolicy": ".beam",
        "BeamStep": ".beam",
        "BeamTrace": ".beam",
        "Hypothesis": ".beam",
        "beam_search": ".beam",
        "length_penalty_score": ".beam",
        "DEFAULT_SLACK": ".core",
        "Chooser": ".core",
        "DecoderSession": ".core",
        "Move": ".core",
        "Policy": ".core",
        "RowsPolicy": ".core",
        "checked_limit": ".core",
        "generate": ".core",
        "greedy_choice": ".core",
        "greedy_ids": ".core",
        "pad_batch": ".core",
        "run": ".core",
        "set_step_cap": ".core",
        "step_cap": ".core",
        "step_limit": ".core",
        "ForcedPrefix": ".forced",
        "greedy_decode": ".greedy",
        "sample": ".sampling",
        "sampling_distribution": ".sampling",
        "STRATEGIES": ".strategies",
        "Step": ".trace",
        "Trace": ".trace",
        "decode_trace": ".trace",
    },
    globals(),
)  # loaded on first use: model/lazy.py

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
