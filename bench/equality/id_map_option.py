"""The ``--id-map`` option, one definition for every command that reads the equality set (``bench
check-adapters``, ``bench int8 agreement``): how MIRACLReranking ids become MIRACL ids (D-019)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from bench.equality.data import ID_MAP_METHODS

id_map_option: Callable[[Any], Any] = click.option(
    "--id-map",
    "id_map",
    type=click.Choice(["auto", *ID_MAP_METHODS]),
    default="auto",
    show_default=True,
    help="how MIRACLReranking ids become MIRACL ids: de.gz (miracl/mmteb-miracl-reranking), corpus (match "
    "the candidate texts against the full corpus, no de.gz needed), auto (de.gz if fetched, else corpus)",
)
