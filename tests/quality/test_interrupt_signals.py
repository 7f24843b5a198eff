"""SIGHUP (terminal closed) ends a command like SIGTERM and Ctrl-C."""

from __future__ import annotations

import os
import signal

import pytest

from bench.core.interrupt import (
    EXIT_INTERRUPTED,
    Interrupted,
    interruptible,
    raise_if_interrupted,
    whole_command,
)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_becomes_keyboard_interrupt_and_handlers_are_restored(sig: signal.Signals) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    with pytest.raises(KeyboardInterrupt, match=sig.name), interruptible():
        os.kill(os.getpid(), sig)
        raise AssertionError("the signal did not interrupt the block")
    assert {s: signal.getsignal(s) for s in before} == before


def test_sighup_outside_the_phase_ends_with_exit_130() -> None:
    with pytest.raises(Interrupted) as info, whole_command("rehearsal", "bench rehearse --resume D"):
        os.kill(os.getpid(), signal.SIGHUP)
    assert info.value.exit_code == EXIT_INTERRUPTED
    assert "Resume with: bench rehearse --resume D" in info.value.message


def test_an_interrupt_a_library_swallowed_is_raised_again_at_the_next_check() -> None:
    with interruptible():
        try:  # a library's bare ``except:`` around an optional import
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):  # the handler runs between bytecodes
                pass
        except BaseException:  # what such a library does
            pass
        with pytest.raises(KeyboardInterrupt, match="SIGINT"):
            raise_if_interrupted()
    raise_if_interrupted()  # outside the command's block it is forgotten
    with interruptible():  # a new command starts without the old interrupt
        raise_if_interrupted()
