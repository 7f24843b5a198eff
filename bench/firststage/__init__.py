"""First stages in Typesense (plan section "First stages"): server handle, stages as data, embeddings."""
