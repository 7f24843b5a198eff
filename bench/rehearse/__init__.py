"""`bench rehearse`: the study end to end on CPU with stand-ins (see bench.rehearse.run)."""
