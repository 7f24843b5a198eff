"""OpenVINO int8 variant of bge-reranker-v2-m3 (plan section "OpenVINO int8 variant").

- ``calibration``: the 300 (query, passage) calibration pairs (study: MIRACL test-B queries and full-corpus
  passages outside the 71k corpus; rehearsal: NoMIRACL German test queries and passages outside the judged
  pool), seed 20261009, written as ids plus the SHA-256 of the texts used.
- ``config``: the quantisation configuration and why it was chosen (on NoMIRACL queries, never dev).
- ``quantize``: export to OpenVINO and static int8 quantisation through optimum-intel, one function for
  the cross-encoder (sequence classification) and the stand-in (feature extraction).
- ``manifest``: what the quantised folder records (versions, hashes, CPU flags, overflow fix) and its check.
- ``adapter``: the ``bge-v2-m3-int8`` reranker and the int8 stand-in, behind the reranker protocol.
- ``agreement``: per-query Spearman of int8 scores against another machine's (>= 0.99 on 20 queries).
"""
