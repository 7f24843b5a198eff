"""A stand-in for the features Typesense 0.24.1 lacks, done as Typesense's source at v29.0 does them, in
front of the real 0.24.1: so the probes that 0.24.1 fails are shown passing where a server has
the feature (a probe that could never pass would refuse the study on 30.2 too).

On a ``tests.support.typesense_proxy.TypesenseProxy`` (the one loopback server):
- field ``stem``: documents and queries of a stemmed collection are stemmed word by word with the Snowball
  German stemmer before they reach 0.24.1; the schema read back keeps ``stem: true``;
- stop-word sets: ``PUT /stopwords/<id>`` keeps the words (lower-cased, not stemmed: v29
  ``src/stopwords_manager.cpp``); a search with ``stopwords`` has the query stemmed first (for a stemmed
  collection) and then the set's words removed (v29 ``Collection::parse_search_query``);
- schema ``hnsw_params``: kept and given back when the collection is read;
- vector_query ``ef``: an ``ef`` above ``k`` searches exactly (the full breadth a large ef approaches);
- hybrid search with ``alpha``: the keyword and the vector search are asked separately and fused as v29
  ``src/index.cpp`` does: ``(1 - alpha) / text_rank + alpha / vector_rank`` (text ranks count equal scores as
  one, ranks from 1).
"""

from __future__ import annotations

import json
import re
from typing import Any

import snowballstemmer

from bench.firststage.server import TypesenseServer
from tests.support.loopback import Request, Response, json_response
from tests.support.typesense_proxy import TypesenseProxy

_WORD = re.compile(r"\w+")
_OPT = re.compile(r",\s*(\w+):\s*([^,)]+)")


class NewerTypesense(TypesenseProxy):
    def __init__(self, real: TypesenseServer) -> None:
        super().__init__(real, version="30.2")
        self.stemmed: set[str] = set()
        self.hnsw: dict[str, dict[str, Any]] = {}
        self.stopwords: dict[str, list[str]] = {}
        self.stemmer = snowballstemmer.stemmer("german")

    def _stem_text(self, text: str) -> str:
        return " ".join(self.stemmer.stemWord(w.lower()) for w in _WORD.findall(text))

    def _respond(self, req: Request) -> Response:
        path = req.path.split("?")[0]
        if path.startswith("/stopwords"):
            return self._stopwords(req, path)
        if req.method == "POST" and path == "/collections":
            return self._create(req)
        if req.method == "POST" and path.endswith("/documents/import"):
            name = path.split("/")[2]
            if name in self.stemmed:
                docs = [json.loads(line) for line in req.body.decode().splitlines()]
                for d in docs:
                    d.update({k: self._stem_text(v) for k, v in d.items() if k in ("title", "text")})
                req = _with_body(req, "\n".join(json.dumps(d) for d in docs).encode())
        if req.method == "GET" and path.startswith("/collections/"):
            return self._read_back(req, path.split("/")[2])
        if req.method == "POST" and path == "/multi_search":
            return self._searches(req)
        return super()._respond(req)

    def _stopwords(self, req: Request, path: str) -> Response:
        sid = path.removeprefix("/stopwords").strip("/")
        if req.method == "PUT":
            words = sorted({w.lower() for w in json.loads(req.body)["stopwords"]})
            self.stopwords[sid] = words
            return json_response(200, {"id": sid, "stopwords": words, "locale": "de"})
        if req.method == "DELETE":
            return json_response(200 if self.stopwords.pop(sid, None) is not None else 404, {"id": sid})
        if sid:  # GET one set: 26.0-30.x nest it in "stopwords"
            if sid not in self.stopwords:
                return json_response(404, {"message": "Not found."})
            return json_response(200, {"stopwords": {"id": sid, "stopwords": self.stopwords[sid]}})
        return json_response(
            200, {"stopwords": [{"id": k, "stopwords": v} for k, v in self.stopwords.items()]}
        )

    def _create(self, req: Request) -> Response:
        schema = json.loads(req.body)
        for f in schema["fields"]:
            if f.pop("stem", False):
                self.stemmed.add(schema["name"])
            if "hnsw_params" in f:
                self.hnsw[schema["name"]] = f.pop("hnsw_params")
        return super()._respond(_with_body(req, json.dumps(schema).encode()))

    def _read_back(self, req: Request, name: str) -> Response:
        reply = super()._respond(req)
        if reply.status != 200:
            return reply
        data = json.loads(reply.body)
        for f in data.get("fields", []):
            if f.get("type") == "string" and name in self.stemmed:
                f["stem"] = True
            if f.get("type") == "float[]" and name in self.hnsw:
                f["hnsw_params"] = self.hnsw[name]
        return json_response(200, data)

    def _searches(self, req: Request) -> Response:
        body = json.loads(req.body)
        return json_response(200, {"results": [self._search(s) for s in body["searches"]]})

    def _forward(self, search: dict[str, Any]) -> dict[str, Any]:
        got = self.client.post("/multi_search", json={"searches": [search]}, headers=self._key()).json()
        return dict(got["results"][0])

    def _key(self) -> dict[str, str]:
        return {"X-TYPESENSE-API-KEY": self.real.api_key}

    def _search(self, s: dict[str, Any]) -> dict[str, Any]:
        s = dict(s)
        stemmed = s["collection"] in self.stemmed
        if stemmed and s.get("q", "*") != "*":
            s["q"] = self._stem_text(s["q"])
        if "stopwords" in s:
            words = set(self.stopwords.get(s.pop("stopwords"), []))
            s["q"] = " ".join(w for w in s["q"].split() if w not in words)
        vq = s.get("vector_query")
        if vq is None:
            return self._forward(s)
        opts = dict(_OPT.findall(vq))
        if "ef" in opts:
            vq = _OPT.sub(lambda m: "" if m.group(1) == "ef" else m.group(0), vq)
            if int(opts["ef"]) > int(opts.get("k", 0)):
                vq = vq[:-1] + ", flat_search_cutoff: 1000000)"
                s["filter_by"] = "probe_all:=1"
            s["vector_query"] = vq
        if s.get("q", "*") == "*":
            return self._forward(s)
        return self._hybrid(s, float(opts.get("alpha", 0.3)))

    def _hybrid(self, s: dict[str, Any], alpha: float) -> dict[str, Any]:
        vq = _OPT.sub(lambda m: "" if m.group(1) == "alpha" else m.group(0), s.pop("vector_query"))
        text = self._forward(s)
        vec = self._forward({**s, "q": "*", "vector_query": vq})
        scores: dict[str, float] = {}
        docs: dict[str, dict[str, Any]] = {}
        rank, last = 0, None
        for h in text["hits"]:
            if h["text_match"] != last:
                rank, last = rank + 1, h["text_match"]
            scores[h["document"]["id"]] = (1 - alpha) / rank
            docs[h["document"]["id"]] = h
        for i, h in enumerate(vec["hits"]):
            scores[h["document"]["id"]] = scores.get(h["document"]["id"], 0.0) + alpha / (i + 1)
            docs.setdefault(h["document"]["id"], h)
        order = sorted(scores, key=lambda d: -scores[d])
        hits = [{**docs[d], "hybrid_search_info": {"rank_fusion_score": scores[d]}} for d in order]
        return {**text, "hits": hits, "found": len(hits)}


def _with_body(req: Request, body: bytes) -> Request:
    return Request(req.method, req.path, req.headers, body, req.client_port)
