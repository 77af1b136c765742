"""The titles of the positional kinds, as the pages show them (marked only: translate where shown, _(KINDS[kind])),
read from the kinds' registry (model/network/position_kinds/).

Its own module so that the presentation badge and the positional page share it without importing each other."""

from model.network.position_kinds.registry import kinds

KINDS = {name: k.TITLE for name, k in kinds().items()}
