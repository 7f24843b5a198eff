"""The judged sample of unjudged passages (plan section "Judged sample of unjudged passages").

``selection`` draws the pairs, ``packet`` writes the judge's packet and the sealed key, ``judge`` asks the
LLM judge about one pair (strict parsing, retries recorded per attempt), ``run`` walks the packet with a
journal and ``publish`` writes ``results/judged/labels.json`` (ids, labels, the judge's model id).
``analysis.reporting.judged`` turns the published labels into rates and agreement.
"""
