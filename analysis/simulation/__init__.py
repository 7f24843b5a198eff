"""``analysis simulate``: synthetic studies for power and false-positive checks of the report's statistics."""
