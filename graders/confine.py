"""Confinement by the operating system for processes that run student code (issue 33).

Rules enforced inside the student's own process (audit hooks, withheld functions) can be switched off by the code
they watch, or stepped around through another process. What this module sets up is enforced by the kernel, is
inherited by every process the student's code starts, and cannot be undone from inside:

- ``PR_SET_NO_NEW_PRIVS``: no setuid program (``sudo``, ``su``) gains rights for it;
- **Landlock** (Linux 5.13+, unprivileged): the filesystem rights are only those granted here — read (and
  execute) the hierarchies in ``Rules.read``, every right beneath ``Rules.write`` (the private scratch); from
  ABI 4 no TCP ``bind`` or ``connect`` unless ``Rules.tcp``; from ABI 6 no signal to, and no abstract UNIX
  socket of, any process outside the sandbox. Landlock itself refuses ``ptrace`` of a process outside the
  sandbox, and so ``/proc/<pid>/mem``, ``environ`` and ``fd/*`` of the judge;
- **seccomp**: one filter, ``fallocate`` answers EOPNOTSUPP (glibc's ``posix_fallocate`` then writes the blocks,
  at the disk's speed, which the judge's limit on the scratch folder measures), and an internet socket other than
  TCP (UDP, ICMP, raw) or a packet socket answers EACCES (Landlock rules TCP alone);
- **a network namespace** for the CPU ranks of a multi-rank check (``NetworkHolder``, ``join_network``): Landlock
  allows TCP anywhere or nowhere, and gloo's ranks need it; in a namespace whose only interface is its own loopback
  they reach each other and nothing else;
- **capabilities**: a runner started by root drops every one, the bounding set included (``_drop_capabilities``);
- **rlimits**: open files, the size of any one file written, processes and threads (``RLIMIT_NPROC``, which
  the kernel does not apply to root), no core dumps. No ``RLIMIT_CPU``: it counts a process's whole life, and a
  runner kept for an exercise serves every re-run of its check cells in a lab session (a student's fiftieth run
  would be killed as a loop); CPU is bounded per request instead, by the running-time limit and nice 19 after
  3 CPU-seconds (``graders.runclock``, ``graders.isolation.lower_priority``), and by the runner's end.

The kernel's ABI is queried and what it offers is used (``support()``); where there is no Landlock (macOS,
Windows, an old kernel, a container that filters the system calls) nothing is applied and ``support()`` says why,
in words a student can read.

Only the standard library (``ctypes``) is used: the three Landlock system calls, ``prctl`` (no new privileges, the
seccomp filter), ``unshare`` and ``setns`` (the ranks' network) and ``resource.setrlimit``. Everything here but the
network's holder runs in the process to be confined, after it has imported what it needs and before the student's code
loads (``apply``), so that a runner forked from the forkserver keeps its speed.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import os
import sys
from collections.abc import Iterable, Sequence

# System call numbers: the same on every architecture (the generic table, Linux 5.13).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (linux/landlock.h), each with the ABI that introduced it.
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK, FS_MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
FS_REFER = 1 << 13      # ABI 2: link or rename across directories
FS_TRUNCATE = 1 << 14   # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1          # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_LATEST = (1 << 16) - 1  # ABI 5 and later
READ = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
# Rights that apply to a file (rather than a directory); a rule on a file may hold only these.
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # packed in the kernel's header: 12 bytes
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


@dataclasses.dataclass(frozen=True)
class Support:
    """What this machine offers: the Landlock ABI (0: none) and, when there is none, why."""

    abi: int
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.abi > 0


@dataclasses.dataclass(frozen=True)
class Rules:
    """What a confined process may do. Paths that do not exist are left out (a machine without /lib64)."""

    read: tuple[str, ...] = ()    # hierarchies to read and execute
    write: tuple[str, ...] = ()   # hierarchies with every right (create, write, remove, rename)
    devices: tuple[str, ...] = ()  # files to read and write (/dev/null; a GPU's device files, with ioctl)
    listed: tuple[str, ...] = ()  # folders whose entries may be listed (not read): a package with a hidden part
    # hierarchies with every right but making links and special files (symlinks, FIFOs, sockets, devices): what an
    # unconfined process later writes there (nbgrader, the executed notebook) can then never be led elsewhere
    write_plain: tuple[str, ...] = ()
    tcp: bool = False             # TCP bind and connect allowed (the gloo ranks of one multi-rank check)
    tcp_bind_ports: tuple[int, ...] = ()  # else TCP bind on these ports only, never connect (a kernel's own ports)
    open_files: int = 1024        # RLIMIT_NOFILE
    file_bytes: int = 1 << 28     # RLIMIT_FSIZE: no one file grows past 256 MiB (a checkpoint of the course: KBs)
    processes: int | None = None  # RLIMIT_NPROC: processes and threads of this user (root is exempt: see apply)


@dataclasses.dataclass(frozen=True)
class Applied:
    """What ``apply`` enforced, for the report (``enforced`` empty: nothing, ``reason`` says why)."""

    abi: int
    enforced: tuple[str, ...]
    reason: str = ""


_libc: ctypes.CDLL | None = None


def _syscall(number: int, *args: object) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
    result = _libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def support() -> Support:
    """The Landlock ABI this kernel offers, or why there is none."""
    if not sys.platform.startswith("linux"):
        return Support(0, f"{sys.platform} has no Landlock (a Linux security module)")
    try:
        abi = _syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            return Support(0, f"this Linux kernel ({os.uname().release}) has no Landlock system calls")
        if exc.errno == errno.EOPNOTSUPP:
            return Support(0, "Landlock is built into this kernel but switched off (boot with lsm=...,landlock)")
        return Support(0, f"Landlock cannot be queried here: {exc.strerror}")
    return Support(int(abi))


def _handled_fs(abi: int) -> int:
    return _FS_BY_ABI.get(abi, _FS_LATEST)


def _existing(paths: Iterable[str]) -> list[str]:
    seen, found = set(), []
    for path in paths:
        path = os.path.realpath(path)
        if path not in seen and os.path.exists(path):
            seen.add(path)
            found.append(path)
    return found


def _add_path(ruleset: int, path: str, rights: int) -> None:
    if not os.path.isdir(path):
        rights &= _FILE_RIGHTS
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        attr = _PathBeneathAttr(rights, fd)
        _syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(attr),
                 ctypes.c_uint32(0))
    finally:
        os.close(fd)


def _limit(name: str, value: int) -> None:
    import resource

    kind = getattr(resource, name)
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))  # the hard limit too: the student's code cannot raise it again


# seccomp (linux/seccomp.h, linux/filter.h, linux/audit.h): one filter, for what Landlock does not cover.
# - fallocate answers EOPNOTSUPP. A student's code could otherwise take gigabytes of disk in a few milliseconds, file
#   after file, each within RLIMIT_FSIZE, faster than the judge measures the scratch; glibc's posix_fallocate then
#   writes the bytes instead (what multiprocessing and torch's shared memory rely on still works), at the disk's speed,
#   which the judge does bound.
# - an internet socket other than TCP (UDP, ICMP, raw) and a packet socket answer EACCES: Landlock (ABI 4 to 7) rules
#   TCP only, so a datagram could otherwise leave the sandbox. TCP stays with Landlock; UNIX sockets and netlink
#   (getifaddrs, which gloo calls to find the loopback interface) stay allowed.
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K, _BPF_AND_K = 0x20, 0x15, 0x35, 0x06, 0x54
# (AUDIT_ARCH_*, __NR_fallocate, __NR_socket)
_SYSCALLS = {"x86_64": (0xC000003E, 285, 41), "aarch64": (0xC00000B7, 47, 198)}
_X32_BIT = 0x40000000  # x86_64's x32 system calls: refused too (nothing in the course uses them)
_AF_INET, _AF_INET6, _AF_PACKET, _SOCK_STREAM, _SOCK_TYPE_MASK = 2, 10, 17, 1, 0xF
# struct seccomp_data: nr at 0, arch at 4, then args[i] at 16 + 8 i (their low 32 bits first: little-endian)
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _assemble(program: list[tuple]) -> list[_SockFilter]:
    """BPF from (label, code, k, where to go if true, where if false): a label names an instruction, None is the next."""
    at = {step[0]: i for i, step in enumerate(program) if step[0]}
    out = []
    for i, (_, code, k, yes, no) in enumerate(program):
        jump = lambda label: 0 if label is None else at[label] - i - 1  # noqa: E731
        out.append(_SockFilter(code, jump(yes), jump(no), k))
    return out


def _filter_program(arch: int, fallocate: int, socket: int) -> list[_SockFilter]:
    return _assemble([
        (None, _BPF_LD_W_ABS, _ARCH, None, None),
        (None, _BPF_JEQ_K, arch, "known", None),
        (None, _BPF_RET_K, _SECCOMP_RET_ERRNO | errno.ENOSYS, None, None),  # another ABI (i386 on x86_64): none
        ("known", _BPF_LD_W_ABS, _NR, None, None),
        (None, _BPF_JGE_K, _X32_BIT, "unsupported", None),
        (None, _BPF_JEQ_K, fallocate, "unsupported", None),
        (None, _BPF_JEQ_K, socket, "socket", "allow"),
        ("socket", _BPF_LD_W_ABS, _ARG0, None, None),             # its domain
        (None, _BPF_JEQ_K, _AF_PACKET, "refuse", None),
        (None, _BPF_JEQ_K, _AF_INET, "internet", None),
        (None, _BPF_JEQ_K, _AF_INET6, "internet", "allow"),
        ("internet", _BPF_LD_W_ABS, _ARG1, None, None),           # its type, without SOCK_NONBLOCK and SOCK_CLOEXEC
        (None, _BPF_AND_K, _SOCK_TYPE_MASK, None, None),
        (None, _BPF_JEQ_K, _SOCK_STREAM, "allow", "refuse"),
        ("allow", _BPF_RET_K, _SECCOMP_RET_ALLOW, None, None),
        ("refuse", _BPF_RET_K, _SECCOMP_RET_ERRNO | errno.EACCES, None, None),
        ("unsupported", _BPF_RET_K, _SECCOMP_RET_ERRNO | errno.EOPNOTSUPP, None, None),
    ])


def _install_filter(libc: ctypes.CDLL) -> bool:
    """Install the filter (after PR_SET_NO_NEW_PRIVS, as an unprivileged process must); False where this machine's
    architecture is not one it knows."""
    known = _SYSCALLS.get(os.uname().machine)
    if known is None:
        return False
    program = _filter_program(*known)
    filters = (_SockFilter * len(program))(*program)
    fprog = _SockFprog(len(program), filters)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")
    return True


def apply(rules: Rules, *, required: bool = False) -> Applied:
    """Confine this process (and every process it starts from now on) by ``rules``. Irreversible.

    Without Landlock the rlimits are still set and ``Applied.reason`` says what is missing; ``required`` raises
    ``OSError`` instead of running unconfined."""
    found = support()
    if not found.available and required:
        raise OSError(errno.EPERM, f"confinement required but unavailable: {found.reason}")
    enforced = []
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        enforced.append("no new privileges")
        if _install_filter(libc):
            enforced.append("no fallocate (written instead, as the scratch's limit measures)")
            enforced.append("no internet socket but TCP (no UDP, ICMP or raw), no packet socket")
    if hasattr(os, "fork"):  # POSIX: resource exists
        _limit("RLIMIT_NOFILE", rules.open_files)
        _limit("RLIMIT_FSIZE", rules.file_bytes)
        _limit("RLIMIT_CORE", 0)
        enforced.append(f"at most {rules.open_files} open files, {rules.file_bytes >> 20} MiB per file")
        if rules.processes is not None:
            _limit("RLIMIT_NPROC", rules.processes)
            # The kernel does not hold root (or CAP_SYS_RESOURCE) to RLIMIT_NPROC: there a fork storm is bounded
            # only by the check's time limit, and the runner ends every process it started.
            if os.geteuid() != 0:
                enforced.append(f"at most {rules.processes} processes and threads of this user")
    if not found.available:
        return Applied(0, tuple(enforced), found.reason)
    abi = found.abi
    attr = _RulesetAttr(_handled_fs(abi), 0, 0)
    size = 8
    if abi >= 4 and not rules.tcp:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
    if abi >= 4:
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        handled = attr.handled_access_fs
        for path in _existing(rules.read):
            _add_path(ruleset, path, READ & handled)
        for path in _existing(rules.listed):
            _add_path(ruleset, path, FS_READ_DIR & handled)
        for path in _existing(rules.devices):
            _add_path(ruleset, path, (FS_READ_FILE | FS_WRITE_FILE | FS_IOCTL_DEV) & handled)
        for path in _existing(rules.write):
            _add_path(ruleset, path, handled)
        for path in _existing(rules.write_plain):
            _add_path(ruleset, path, handled & ~(FS_MAKE_SYM | FS_MAKE_FIFO | FS_MAKE_SOCK | FS_MAKE_CHAR | FS_MAKE_BLOCK))
        if attr.handled_access_net:
            for port in rules.tcp_bind_ports:
                rule = _NetPortAttr(NET_BIND_TCP, port)
                _syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_NET_PORT), ctypes.byref(rule),
                         ctypes.c_uint32(0))
        _syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    enforced.append(f"Landlock ABI {abi}: files only as granted")
    if _drop_capabilities():  # (RLIMIT_NPROC still spares root: the kernel exempts uid 0 itself, not a capability)
        enforced.append("no capabilities (root's dropped, for good)")
    if attr.handled_access_net:
        enforced.append(f"no TCP but bind on ports {', '.join(map(str, rules.tcp_bind_ports))}"
                        if rules.tcp_bind_ports else "no TCP")
    if attr.scoped:
        enforced.append("no signal or abstract socket outside the sandbox")
    return Applied(abi, tuple(enforced))


_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> bool:
    """A runner started by root would keep root's capabilities (raise its own rlimits, override file permissions,
    change its user or groups, use raw sockets where seccomp does not know the architecture): every one is dropped,
    from the bounding set too, so that no program it executes gets them back. True when there were any (Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    header, data = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0 or not any(d.effective or d.permitted for d in data):
        return False
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)  # EPERM without CAP_SETPCAP: then exec cannot add any either
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    empty = (_CapData * 2)()
    if libc.capset(ctypes.byref(_CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)), empty) != 0:
        raise OSError(ctypes.get_errno(), "capset: " + os.strerror(ctypes.get_errno()))
    return True


def system_reads() -> list[str]:
    """What any Python process with torch needs to read: the interpreter, its libraries, the system's."""
    import site
    import sysconfig

    paths = [sys.base_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    paths += [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    paths += list(site.getsitepackages()) + [site.getusersitepackages()]
    paths += ["/usr", "/lib", "/lib32", "/lib64", "/etc", "/sys", "/opt", "/bin", "/sbin"]
    return _existing(paths) + proc_reads()


def proc_reads() -> list[str]:
    """/proc without the other processes: its own entries (cpuinfo, meminfo, sys/, ...) and this process's own
    directory, which /proc/self leads to. Landlock alone refuses another process's ``mem`` and ``fd/*`` (ptrace
    rules), but not its ``environ``, ``maps`` or ``auxv`` (measured on Linux 6.18): those are simply not granted.
    A process this one starts cannot read its own /proc/<pid> (it is not beneath a granted one)."""
    if not os.path.isdir("/proc"):
        return []
    entries = [os.path.join("/proc", e) for e in sorted(os.listdir("/proc")) if not e.isdigit()]
    # self, thread-self, net, mounts ... lead into a process's own directory: that one is granted for this process
    return _existing([p for p in entries if not _in_a_process(os.path.realpath(p))] + [f"/proc/{os.getpid()}"])


def _in_a_process(path: str) -> bool:
    parts = path.split("/")
    return len(parts) > 2 and parts[1] == "proc" and parts[2].isdigit()


def reads_except(paths: Iterable[str], hidden: Iterable[str]) -> list[str]:
    """``paths`` to grant for reading, with ``hidden`` taken out: Landlock grants whole hierarchies and cannot
    subtract, so a path with a hidden one beneath it is replaced by its entries, recursively, the hidden ones
    left out (the course's root: everything but ``solutions/`` and the chapter graders; an /opt that holds it)."""
    hidden = [os.path.realpath(h) for h in hidden]
    found: list[str] = []

    def visit(path: str) -> None:
        if any(path == h or path.startswith(h.rstrip("/") + "/") for h in hidden):
            return
        inside = [h for h in hidden if h.startswith(path.rstrip("/") + "/")]
        if not inside or not os.path.isdir(path):
            found.append(path)
            return
        try:
            entries = sorted(os.listdir(path))
        except OSError:
            return
        for entry in entries:
            visit(os.path.join(path, entry))

    for path in _existing(paths):
        visit(path)
    return found


def default_devices() -> list[str]:
    names = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"]
    if os.path.isdir("/dev"):  # a GPU: its device files (ioctl is how CUDA talks to it)
        names += [os.path.join("/dev", n) for n in os.listdir("/dev") if n.startswith(("nvidia", "dri"))]
    return _existing(names)


def describe(applied: Applied) -> str:
    if not applied.abi:
        return f"student code was NOT confined by the operating system ({applied.reason})"
    return "confined: " + "; ".join(applied.enforced)


# ==================================================================================================
# A network of their own for the ranks of a multi-rank check: Landlock (ABI 4-7) can allow TCP or refuse it, but not
# allow it to some hosts only, and gloo's ranks connect to ports chosen as they start. In a network namespace of
# their own, whose only interface is its own loopback, TCP reaches the other ranks there and nothing else: not this
# machine's services, not the internet. A holder process makes it (a user namespace too, so that no privilege is
# needed) and keeps it while ranks join it (setns), before they are confined.
# ==================================================================================================
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000

_HOLDER = r"""
import ctypes, fcntl, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
uid, gid = int(sys.argv[1]), int(sys.argv[2])
try:
    if libc.unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
        raise OSError(ctypes.get_errno(), "unshare: " + os.strerror(ctypes.get_errno()))
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:  # the loopback interface up (SIOCGIFFLAGS, SIOCSIFFLAGS)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0)))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))
except OSError as exc:
    print(f"no network namespace: {exc}", flush=True)
    sys.exit(1)
print("ready", flush=True)
sys.stdin.read()  # nothing is ever written: it ends when the judge that started it does (its end of the pipe closes)
"""


class NetworkHolder:
    """The process that holds a network namespace (with a user namespace) for ranks to join; ``pid`` is None and
    ``reason`` says why where none could be made (not Linux, user namespaces disabled)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.reason = ""
        self._process = None
        if not sys.platform.startswith("linux"):
            self.reason = f"no network namespaces on {sys.platform}"
            return
        import subprocess

        # -I -S: no site packages, no environment: about 15 ms, once per judge
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", _HOLDER, str(os.geteuid()), str(os.getegid())],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True, close_fds=True)
        line = process.stdout.readline().strip()
        if line != "ready":
            process.wait()
            process.stdin.close()
            process.stdout.close()
            self.reason = line or f"the namespace holder ended with exit code {process.returncode}"
            return
        self._process, self.pid = process, process.pid

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def close(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process.stdout.close()
            self._process.stdin.close()
            self._process = None


def join_network(holder_pid: int) -> None:
    """Enter the user and network namespaces of ``holder_pid`` (before :func:`apply`; the caller must be one thread:
    the kernel lets only such a process join a user namespace). Raises OSError where it cannot."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind in ("user", "net"):
        fd = os.open(f"/proc/{holder_pid}/ns/{kind}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if libc.setns(fd, 0) != 0:
                error = ctypes.get_errno()
                raise OSError(error, f"setns({kind}): {os.strerror(error)}")
        finally:
            os.close(fd)
