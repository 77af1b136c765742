"""Every demo task by name: the one list the training command, the cards and the app read.

A new task is one module with its Task subclass, and one line here.
"""

from __future__ import annotations

from .induction import InductionTask
from .task_dates import DatesTask
from .task_fr_en import FrenchToEnglishTask
from .tasks import SymbolTask, Task, TranslateTask

TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        SymbolTask(reverse=False),
        SymbolTask(reverse=True),
        TranslateTask(),
        DatesTask(),
        FrenchToEnglishTask(),
        InductionTask(),
    )
}


def get_task(name: str) -> Task:
    """The task called `name`; ValueError naming the valid names if there is none."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; valid names: {', '.join(sorted(TASKS))}")
    return TASKS[name]
