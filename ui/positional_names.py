"""The titles of the positional kinds, as the pages show them (marked only: translate where shown, _(KINDS[kind])).

Its own module so that the presentation badge and the positional page share it without importing each other."""

from i18n import N_

KINDS = {
    "sinusoidal": N_("Sinusoidal (fixed)"),
    "learned": N_("Learned"),
    "none": N_("None"),
    "rope": N_("RoPE"),
    "alibi": N_("ALiBi"),
    "relative": N_("T5 relative bias"),
}
