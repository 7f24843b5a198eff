"""Statistics: the metrics, the tie rule, bootstrap intervals and the randomisation test, Holm and tie
detection."""
