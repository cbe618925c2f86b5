"""Whether a process the tests started (or one it started) is still running: shared by the isolation, rank,
range-stream and class-grading tests, which all prove that nothing outlives a check; and how nice it is (the
isolation and autograde tests, which prove that a looping answer is lowered)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from graders.isolation import descendants  # noqa: F401 - the tests' and the judge's are one


def alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie has ended (only its parent has not collected it yet), so it counts as
    ended; where /proc cannot be read (not Linux), a process that exists counts as running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return state(pid) != "Z"


def state(pid: int) -> str | None:
    """The state letter of ``pid`` from /proc (R running or runnable, S asleep, Z ended ...); None where it cannot be
    read (ended, or not Linux)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


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


def cpu_seconds(pid: int) -> float:
    """User and system CPU time ``pid`` has used so far (0 where it cannot be read)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def with_command_line(marker: str) -> list[int]:
    """Running processes whose command line holds ``marker`` (an answer's leftover process, found without its
    help: a confined answer cannot write its pid anywhere the test could read it)."""
    found, mine = [], {os.getpid(), os.getppid()}  # not the test itself (a command line that names the marker)
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if entry.name.isdigit() and int(entry.name) not in mine:
            try:
                if marker in (entry / "cmdline").read_bytes().decode(errors="replace") and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def named(name: str) -> list[int]:
    """Running processes whose name (``/proc/<pid>/comm``, set by prctl(PR_SET_NAME)) is ``name``: how a test finds
    the processes a confined answer started, which can write their pids nowhere the test could read them."""
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == name and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
