"""Whether a process the tests started (or one it started) is still running: shared by the isolation, rank,
range-stream and class-grading tests, which all prove that nothing outlives a check; and how nice it is (the
isolation and autograde tests, which prove that a looping answer is lowered)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie has ended (only its parent has not collected it yet), so it counts as
    ended; where /proc cannot be read (not Linux), a process that exists counts as running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def ended(*pids: int, within: float = 5.0) -> bool:
    """Whether every one of ``pids`` has ended, waiting up to ``within`` seconds: a process killed with SIGKILL can
    still show as running for a moment while the kernel tears it down."""
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(alive(pid) for pid in pids)


def niceness(pid: int) -> tuple[int, int | None]:
    """A process's nice value, and its session's (Linux autogroups; None where there are none)."""
    try:
        session = int(Path(f"/proc/{pid}/autogroup").read_text().split("nice")[1])
    except (OSError, IndexError, ValueError):
        session = None
    return os.getpriority(os.PRIO_PROCESS, pid), session
