"""Reranker adapters (plan section "Rerankers"): one protocol, a registry, one module per family."""
