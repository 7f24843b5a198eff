"""``install_stopwords`` checks what the server applies, not what it echoes (docs/typesense-source.md).

No server that has stop-word sets runs here (0.24.1 answers 404 on ``/stopwords``), so the server side is a
double of the HTTP contract read in Typesense's source at v29.0 (and unchanged on the v30 branch): PUT answers
with the request body plus ``id``; GET answers ``{"stopwords": {"id", "locale", "stopwords": [tokens]}}``,
the tokens being each word tokenised with the set's locale (Unicode case folding) and not stemmed.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.core.errors import BenchError
from bench.core.plan import PLANNED_STOPWORD_COUNT
from bench.firststage.stopwords import german_stopwords, install_stopwords, server_form


class SetServer:
    """Keeps PUT sets as ``store`` makes them and answers as Typesense 26.0-30.x does."""

    def __init__(self, store: Any = server_form, get_shape: str = "nested") -> None:
        self.store, self.get_shape = store, get_shape
        self.sets: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []

    def request(self, method: str, path: str, json: dict[str, Any] | None = None) -> dict[str, Any]:
        self.calls.append((method, path))
        set_id = path.rsplit("/", 1)[1]
        if method == "PUT":
            assert json is not None
            kept = sorted(self.store(tuple(json["stopwords"])))
            self.sets[set_id] = {"id": set_id, "locale": json["locale"], "stopwords": kept}
            return {**json, "id": set_id}  # the echo of the request body
        if self.get_shape == "nested":
            return {"stopwords": self.sets[set_id]}
        return {"id": set_id}  # no word list at all


def test_the_servers_form_of_the_plans_set_has_the_plans_270_words() -> None:
    sw = german_stopwords()
    assert all(w.isalpha() for w in sw.words)  # letters only: str.casefold is the tokeniser's folding
    folded = server_form(sw.words)
    assert sw.size == 271 and len(folded) == PLANNED_STOPWORD_COUNT == 270
    assert {w for w in sw.words if w.casefold() != w} == {"daß"} and "dass" in sw.words
    assert sw.record()["server_form_size"] == 270


def test_a_faithful_server_passes_and_is_read_back_with_get() -> None:
    server = SetServer()
    install_stopwords(server, "miracl-de-snowball", german_stopwords())
    path = "/stopwords/miracl-de-snowball"
    assert server.calls == [("PUT", path), ("GET", path)]


def test_a_server_that_drops_a_word_is_caught_although_its_put_answer_echoes_all() -> None:
    # failed before the fix: the PUT echo held all 271 words, so a dropped word went unnoticed
    server = SetServer(store=lambda words: server_form(words) - {"über"})
    with pytest.raises(BenchError, match=r"missing \['über'\]"):
        install_stopwords(server, "miracl-de-snowball", german_stopwords())


def test_a_server_that_stems_the_set_is_caught() -> None:
    server = SetServer(store=lambda words: {w[:-1] if w.endswith("en") else w for w in server_form(words)})
    with pytest.raises(BenchError, match="stored stop-word set miracl-de-snowball differently"):
        install_stopwords(server, "miracl-de-snowball", german_stopwords())


def test_an_answer_without_a_word_list_is_refused() -> None:
    with pytest.raises(BenchError, match="returned no word list"):
        install_stopwords(SetServer(get_shape="flat"), "miracl-de-snowball", german_stopwords())
