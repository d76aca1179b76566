"""The `toolscore` command the wheel installs: the command line of the
binary, run in this process by the native module."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    from toolscore import _native

    # Python turns SIGINT into KeyboardInterrupt only between bytecodes, and
    # the command runs in native code until it ends: Ctrl-C must stop it as
    # it stops the binary (serve installs its own handlers for a clean stop).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.exit(_native.run_cli(["toolscore", *sys.argv[1:]]))
