"""The dates task: a free-form English date (1900-2099) normalised to ISO "YYYY-MM-DD", char-level, with the gold
alignment of every target digit to the source characters that write it."""

from __future__ import annotations

import datetime
import random
import re
import string

from i18n import M_

from .tasks import Example, Task

MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
FIRST_DAY, LAST_DAY = datetime.date(1900, 1, 1), datetime.date(2099, 12, 31)

DATE_FORMATS = (
    "{D} of {M} {Y}",
    "the {D} of {M} {Y}",
    "{M} {d}, {Y}",
    "{M} {D}, {Y}",
    "{M} {d} {Y}",
    "{d} {M} {Y}",
    "{D} {M} {Y}",
    "{Y} {M} {d}",
    "{d}/{m}/{Y}",
    "{dd}/{mm}/{Y}",
)
"""Source templates. D: ordinal day ("21st"), d/dd: day (unpadded/zero-padded), M: month name
(full or 3-letter), m/mm: month number, Y: year. All but the year-first form may get a weekday
in front ("saturday ", "sat, ")."""


def ordinal(day: int) -> str:
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def render_date(date: datetime.date, fmt: str, short_month: bool = False, weekday: str | None = None) -> Example:
    """Write `date` with template `fmt` (see DATE_FORMATS) as an Example.

    `weekday`: None, or "full"/"short" weekday name in front, "full,"/"short," with a comma.
    The alignment links each ISO digit to the source characters it comes from.
    """
    month = MONTHS[date.month - 1]
    values = {
        "D": ordinal(date.day),
        "d": str(date.day),
        "dd": f"{date.day:02d}",
        "M": month[:3] if short_month else month,
        "m": str(date.month),
        "mm": f"{date.month:02d}",
        "Y": str(date.year),
    }
    if weekday is not None:
        name = WEEKDAYS[date.weekday()]
        name = name[:3] if weekday.startswith("short") else name
        fmt = name + ("," if weekday.endswith(",") else "") + " " + fmt
    source = ""
    spans: dict[str, tuple[int, int, str]] = {}  # "y"/"m"/"d" -> (start, end, field name)
    for literal, field, _, _ in string.Formatter().parse(fmt):
        source += literal
        if field is not None:
            spans[field[0].lower()] = (len(source), len(source) + len(values[field]), field)
            source += values[field]
    target = date.isoformat()
    align: list[tuple[int, int]] = []
    for key, first, n_digits in (("y", 0, 4), ("m", 5, 2), ("d", 8, 2)):
        start, end, field = spans[key]
        if field == "M":  # both month digits come from the whole month word
            align += [(s, t) for t in (first, first + 1) for s in range(start, end)]
            continue
        digits = [i for i in range(start, end) if source[i].isdigit()]
        digits = [digits[0]] * (n_digits - len(digits)) + digits  # a padding "0" -> the lone digit
        align += [(s, first + k) for k, s in enumerate(digits)]
    return Example(source, target, tuple(sorted(align, key=lambda st: (st[1], st[0]))))


class DatesTask(Task):
    """Normalise a free-form English date (1900-2099) to ISO YYYY-MM-DD."""

    name = "dates"
    source_level = target_level = "char"
    description = M_(
        "Turn an English date such as 'sat, 21st of nov 2026' or '21/11/2026' (numbers are "
        "day/month/year) into ISO form, 2026-11-21."
    )

    def sample(self, rng: random.Random) -> Example:
        date = datetime.date.fromordinal(rng.randint(FIRST_DAY.toordinal(), LAST_DAY.toordinal()))
        fmt = rng.choice(DATE_FORMATS)
        weekday = None
        if not fmt.startswith("{Y}") and rng.random() < 0.4:
            weekday = rng.choice(["full", "short", "full,", "short,"])
        return render_date(date, fmt, rng.random() < 0.5, weekday)

    def source_symbols(self) -> list[str]:
        words = MONTHS + WEEKDAYS + ["the", "of", "st", "nd", "rd", "th"]
        return sorted(set("".join(words)) | set(string.digits) | set(" ,/"))

    def target_symbols(self) -> list[str]:
        return sorted(set(string.digits) | {"-"})

    def example_for(self, source: str) -> Example | None:
        """Find the date and template that write exactly `source` (tried against render_date), or None."""
        numbers = [int(n) for n in re.findall(r"\d+", source)]
        words = re.findall(r"[a-z]+", source)
        months = {m + 1 for m, name in enumerate(MONTHS) for w in words if w in (name, name[:3])}
        months |= {n for n in numbers if 1 <= n <= 12}
        for year in {n for n in numbers if FIRST_DAY.year <= n <= LAST_DAY.year}:
            for month in months:
                for day in {n for n in numbers if 1 <= n <= 31}:
                    try:
                        date = datetime.date(year, month, day)
                    except ValueError:
                        continue
                    for fmt in DATE_FORMATS:
                        for short in (False, True):
                            for weekday in (None, "full", "short", "full,", "short,"):
                                if weekday and fmt.startswith("{Y}"):
                                    continue
                                example = render_date(date, fmt, short, weekday)
                                if example.source == source:
                                    return example
        return None

    def examples(self) -> list[str]:
        return [
            "saturday 21st of november 2026",
            "nov 21, 2026",
            "the 4th of july 1976",
            "mon, 1 jan 2001",
            "2026 march 3",
            "31/12/1999",
        ]
