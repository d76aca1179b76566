"""toolscore: scores AI agents on tool correctness from OpenTelemetry traces.

The wheel carries the `toolscore` binary as a script; this package only finds
it, so that `python -m toolscore` works where the scripts folder is not on PATH.
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["find_toolscore_bin"]


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and getattr(sys, "_framework", None):
        return "osx_framework_user"
    return "posix_user"


def find_toolscore_bin() -> str:
    """Return the path of the `toolscore` binary installed with this package.

    Looked for where an installer puts a wheel's scripts: the environment's
    scripts folder, the user scheme's (`pip install --user`), then `bin/` next
    to the package root (`pip install --target`). Raises FileNotFoundError
    naming the first place when it is in none of them.
    """
    exe = "toolscore" + (sysconfig.get_config_var("EXE") or "")
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    try:
        candidates.append(os.path.join(sysconfig.get_path("scripts", scheme=_user_scheme()), exe))
    except KeyError:
        pass  # no user scheme on this platform
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates.append(os.path.join(package_root, "bin", exe))
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(candidates[0])
