"""`python -m toolscore ARGS`: runs the installed `toolscore` binary with ARGS."""

import os
import sys

from toolscore import find_toolscore_bin


def _run() -> None:
    binary = find_toolscore_bin()
    # exec, not a child process: signals, exit code and the terminal are the binary's own.
    os.execv(binary, [binary, *sys.argv[1:]])


if __name__ == "__main__":
    _run()
