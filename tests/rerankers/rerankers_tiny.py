"""Inputs of the reranker tests; the tiny models come from ``tests.support.tiny_models``."""

from __future__ import annotations

PASSAGES = [
    "Berlin ist die Hauptstadt von Deutschland",
    "Hamburg liegt im Norden",
    "München Bayern",
    "Die Katze und der Hund im Garten",
    "Der Rhein ist ein Fluss " * 3,
    "Zug",
]
QUERY = "Was ist die Hauptstadt von Deutschland?"
LONG = "Berlin ist die Hauptstadt von Deutschland " * 30
