"""Moved to ``tests.support.messages_api`` (on the tests' one loopback server); this module stays only
because ``tests/runbook`` imports ``MessagesServer`` from here (remove it once that imports from
``tests.support``)."""

from tests.support.messages_api import ERROR_TYPES, MessagesServer

__all__ = ["ERROR_TYPES", "MessagesServer"]
