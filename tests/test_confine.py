"""graders/confine.py: each capability the operating system takes away, proven by a real attack run as a real
process (issue 33). A child interpreter imports what it needs, confines itself with the course's rules, then
attacks: the course's files, the reference solutions (also through a child process of its own), the network, the
process that started it (signals, /proc/<pid>/mem, environ, fd/1). What it must still do works: its scratch,
torch, a DataLoader with worker processes, its own children."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from graders import confine

ROOT = Path(confine.__file__).resolve().parent.parent
SUPPORT = confine.support()
needs_landlock = pytest.mark.skipif(not SUPPORT.available, reason=f"no Landlock here: {SUPPORT.reason}")

# The child: confine with the course's rules (read the system and the course but solutions/ and the chapter
# graders; write only the scratch and /dev/shm), then run each attack and report what happened.
_CHILD = textwrap.dedent('''
    import json, os, socket, subprocess, sys, tempfile
    root, scratch, parent, port, udp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    plain = sys.argv[6]  # written without links: where a judge reads back what the student's code left
    os.environ["TMPDIR"] = scratch
    tempfile.tempdir = None
    sys.path.insert(0, root)
    import torch
    from torch.utils.data import DataLoader
    from graders import confine
    hidden = [os.path.join(root, "solutions")] + [os.path.join(root, "graders", d)
                                                   for d in os.listdir(os.path.join(root, "graders")) if d.startswith("ch")]
    rules = confine.Rules(read=tuple(confine.system_reads() + confine.reads_except([root], hidden)),
                          write=(scratch, "/dev/shm"), write_plain=(plain,), devices=tuple(confine.default_devices()))
    applied = confine.apply(rules)
    results = {"applied": list(applied.enforced)}

    def attempt(name, action):
        try:
            value = action()
            results[name] = ["allowed", repr(value)[:60]]
        except Exception as exc:
            results[name] = ["refused", type(exc).__name__]

    def cat(path):
        done = subprocess.run(["cat", path], capture_output=True)
        if done.returncode:
            raise PermissionError(done.stderr.decode()[:80])
        return done.stdout[:20]

    def loader():
        return [b.tolist() for b in DataLoader(list(range(6)), batch_size=3, num_workers=2)]

    def raise_limit():
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard + 1, hard + 1))

    def fallocate():  # space taken without writing it: refused (EOPNOTSUPP), so the scratch's limit can measure
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        with open(os.path.join(scratch, "taken.bin"), "wb") as f:
            if libc.fallocate(f.fileno(), 0, ctypes.c_long(0), ctypes.c_long(1 << 20)) != 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))

    def posix_fallocate():  # what multiprocessing and libraries call: glibc writes the blocks instead
        with open(os.path.join(scratch, "written.bin"), "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 1 << 20)
            return os.fstat(f.fileno()).st_blocks * 512 >= 1 << 20

    def own_child_killed():
        child = subprocess.Popen(["sleep", "30"])
        child.send_signal(9)
        return child.wait(timeout=10)

    attempt("append to a course file", lambda: open(os.path.join(root, "graders", "judge.py"), "a").write("#"))
    attempt("create a file in the course", lambda: open(os.path.join(root, "planted.py"), "w").write("#"))
    attempt("read solutions/", lambda: open(os.path.join(root, "solutions", "ch01_tensors.py")).read(20))
    attempt("read solutions/ through cat", lambda: cat(os.path.join(root, "solutions", "ch01_tensors.py")))
    attempt("list solutions/", lambda: os.listdir(os.path.join(root, "solutions")))
    attempt("read a chapter's checks", lambda: open(os.path.join(root, "graders", "ch01_tensors", "__init__.py")).read(20))
    attempt("write the home folder", lambda: open(os.path.expanduser("~/planted-by-a-student"), "w").write("#"))
    attempt("write /tmp", lambda: open("/tmp/planted-by-a-student", "w").write("#"))
    attempt("TCP connect", lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())
    attempt("TCP bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
    attempt("UDP datagram out", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"out", ("127.0.0.1", udp)))
    attempt("UDP over IPv6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC).close())
    attempt("ICMP ping socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close())
    attempt("raw socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP).close())
    attempt("packet socket", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close())
    attempt("signal the parent", lambda: os.kill(parent, 0))
    attempt("parent's mem", lambda: open(f"/proc/{parent}/mem", "rb").read(1))
    attempt("parent's environ", lambda: open(f"/proc/{parent}/environ", "rb").read(1))
    attempt("parent's fd/1", lambda: open(f"/proc/{parent}/fd/1", "w").write("{}"))
    attempt("raise the open-file limit", raise_limit)
    attempt("keep a capability", lambda: [l for l in open("/proc/self/status") if l.startswith(("CapEff", "CapBnd"))
                                          and int(l.split()[1], 16)] or 1 / 0)
    def child_privileged():  # setgroups needs CAP_SETGID: a child that root executes would regain it
        done = subprocess.run([sys.executable, "-I", "-S", "-c", "import os; os.setgroups([])"], capture_output=True)
        if done.returncode:
            raise PermissionError(done.stderr.decode()[-80:])
        return "setgroups worked"

    attempt("a child keeps a capability", child_privileged)
    attempt("write the scratch", lambda: open(os.path.join(scratch, "mine.txt"), "w").write("ok"))
    attempt("read the runner's code", lambda: open(os.path.join(root, "graders", "isolation.py")).read(3))
    attempt("read /proc/self", lambda: open("/proc/self/status").read(4))
    attempt("torch", lambda: float(torch.arange(4.0).sum()))
    attempt("DataLoader with 2 workers", loader)
    attempt("kill its own child", own_child_killed)
    attempt("UNIX datagram socket pair", lambda: [x.close() for x in socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)])
    attempt("a TCP socket (connecting is Landlock's)", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK).close())
    attempt("list network interfaces (netlink, as gloo does)", lambda: [n for _, n in socket.if_nameindex()])
    attempt("fallocate", fallocate)
    attempt("posix_fallocate", posix_fallocate)
    attempt("a symbolic link where the judge reads", lambda: os.symlink(os.path.join(root, "solutions", "ch01_tensors.py"),
                                                                         os.path.join(plain, "checkpoint.pt")))
    attempt("a FIFO where the judge reads", lambda: os.mkfifo(os.path.join(plain, "fifo")))
    attempt("a file where the judge reads, renamed", lambda: (open(os.path.join(plain, "tmp.pt"), "w").write("x"),
                                                               os.replace(os.path.join(plain, "tmp.pt"), os.path.join(plain, "ckpt.pt"))))
    attempt("a symbolic link in the scratch", lambda: os.symlink("/etc/hostname", os.path.join(scratch, "link")))
    print(json.dumps(results))
''')

REFUSED = ["append to a course file", "create a file in the course", "read solutions/", "read solutions/ through cat",
           "list solutions/", "read a chapter's checks", "write the home folder", "write /tmp", "parent's mem",
           "parent's environ", "parent's fd/1", "raise the open-file limit", "keep a capability",
           "a child keeps a capability", "a symbolic link where the judge reads", "a FIFO where the judge reads"]
REFUSED_FROM_ABI_4 = ["TCP connect", "TCP bind"]
REFUSED_FROM_ABI_6 = ["signal the parent"]
REFUSED_BY_SECCOMP = ["fallocate"]  # x86_64 and aarch64 (graders.confine._SYSCALLS)
REFUSED_SOCKETS = ["UDP datagram out", "UDP over IPv6", "ICMP ping socket", "raw socket", "packet socket"]  # seccomp too
ALLOWED = ["write the scratch", "read the runner's code", "read /proc/self", "torch", "DataLoader with 2 workers",
           "kill its own child", "posix_fallocate", "UNIX datagram socket pair", "a TCP socket (connecting is Landlock's)",
           "list network interfaces (netlink, as gloo does)", "a file where the judge reads, renamed",
           "a symbolic link in the scratch"]


@pytest.fixture(scope="module")
def attacked():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    datagrams = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    datagrams.bind(("127.0.0.1", 0))
    datagrams.setblocking(False)
    scratch = tempfile.mkdtemp(prefix="course-confine-")
    plain = tempfile.mkdtemp(prefix="course-confine-plain-")
    before = {p: p.read_bytes() for p in (ROOT / "graders" / "judge.py",)}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(ROOT), scratch, str(os.getpid()),
                               str(listener.getsockname()[1]), str(datagrams.getsockname()[1]), plain],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads(done.stdout.strip().splitlines()[-1])
        try:
            received = datagrams.recv(64)
        except BlockingIOError:
            received = None
        yield {"results": results, "scratch": scratch, "before": before, "received": received}
    finally:
        listener.close()
        datagrams.close()
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(plain, ignore_errors=True)
        for planted in (ROOT / "planted.py", Path.home() / "planted-by-a-student", Path("/tmp/planted-by-a-student")):
            planted.unlink(missing_ok=True)


@needs_landlock
@pytest.mark.parametrize("attack", REFUSED + REFUSED_FROM_ABI_4 + REFUSED_FROM_ABI_6)
def test_a_confined_process_is_refused(attacked, attack):
    if attack in REFUSED_FROM_ABI_4 and SUPPORT.abi < 4 or attack in REFUSED_FROM_ABI_6 and SUPPORT.abi < 6:
        pytest.skip(f"Landlock ABI {SUPPORT.abi} has no rule for it")
    verdict, what = attacked["results"][attack]
    assert verdict == "refused", f"{attack}: {what}"


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine not in confine._SYSCALLS,
                    reason="the fallocate filter knows x86_64 and aarch64 Linux")
@pytest.mark.parametrize("attack", REFUSED_BY_SECCOMP)
def test_fallocate_is_refused_and_posix_fallocate_still_writes(attacked, attack):
    assert attacked["results"][attack][0] == "refused", attacked["results"][attack]
    assert attacked["results"]["posix_fallocate"] == ["allowed", "True"], attacked["results"]["posix_fallocate"]
    assert any(e.startswith("no fallocate") for e in attacked["results"]["applied"])


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine not in confine._SYSCALLS,
                    reason="the seccomp filter knows x86_64 and aarch64 Linux")
@pytest.mark.parametrize("attack", REFUSED_SOCKETS)
def test_no_socket_but_tcp_and_unix_leaves_the_sandbox(attacked, attack):
    """Landlock (ABI 4-7) rules TCP alone: the seccomp filter refuses UDP, ICMP, raw and packet sockets."""
    verdict, what = attacked["results"][attack]
    assert verdict == "refused" and what == "PermissionError", f"{attack}: {what}"
    assert attacked["received"] is None, f"a datagram left the sandbox: {attacked['received']!r}"
    assert any(e.startswith("no internet socket but TCP") for e in attacked["results"]["applied"])


@needs_landlock
@pytest.mark.parametrize("action", ALLOWED)
def test_a_confined_process_still_does_its_work(attacked, action):
    verdict, what = attacked["results"][action]
    assert verdict == "allowed", f"{action}: {what}"


@needs_landlock
def test_nothing_outside_the_scratch_changed(attacked):
    for path, content in attacked["before"].items():
        assert path.read_bytes() == content
    assert not (ROOT / "planted.py").exists()
    assert not Path("/tmp/planted-by-a-student").exists()
    assert (Path(attacked["scratch"]) / "mine.txt").read_text() == "ok"
    assert any(e.startswith("Landlock ABI") for e in attacked["results"]["applied"])


def test_reads_except_grants_everything_but_the_hidden_hierarchies(tmp_path):
    for name in ("a/keep.py", "a/hidden/secret.py", "a/b/hidden2/x.py", "a/b/also.py", "c/d.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("#")
    granted = confine.reads_except([str(tmp_path)], [str(tmp_path / "a/hidden"), str(tmp_path / "a/b/hidden2")])
    assert sorted(Path(p).relative_to(tmp_path).as_posix() for p in granted) == ["a/b/also.py", "a/keep.py", "c"]
    (tmp_path / "a/hidden/inner").mkdir()  # a path inside a hidden one (an answer file's folder under tests/)
    assert confine.reads_except([str(tmp_path / "a/hidden/inner")], [str(tmp_path / "a/hidden")]) == []


def test_proc_is_granted_without_any_other_process():
    granted = confine.proc_reads()
    pids = {p.split("/")[2] for p in granted if p.split("/")[2:3] and p.split("/")[2].isdigit()}
    assert pids <= {str(os.getpid())}
    if sys.platform.startswith("linux"):
        assert "/proc/cpuinfo" in granted


def test_without_landlock_a_required_confinement_refuses_before_changing_anything(monkeypatch):
    import resource

    monkeypatch.setattr(confine, "support", lambda: confine.Support(0, "no Landlock on this test's kernel"))
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    with pytest.raises(OSError, match="no Landlock on this test's kernel"):
        confine.apply(confine.Rules(), required=True)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == before
    assert "NOT confined" in confine.describe(confine.Applied(0, (), "no Landlock on this test's kernel"))


def test_support_is_told_in_words():
    found = confine.support()
    assert found.available or found.reason
    if sys.platform.startswith("linux") and found.available:
        assert found.abi >= 1 and not found.reason


def test_a_runners_static_reads_hold_no_process_and_nothing_hidden():
    """Found once in the forkserver and inherited by every runner: no /proc/<pid> (it would be the forkserver's,
    its environment readable by every runner), and nothing beneath solutions/, the chapters' checks or tests/."""
    from graders import isolation

    reads = isolation._static_reads(False)
    assert not [p for p in reads if p.split("/")[1:2] == ["proc"] and p.split("/")[2:3] and p.split("/")[2].isdigit()]
    hidden = isolation.course_hidden()
    assert not [p for p in reads for h in hidden if p == h or p.startswith(h + "/")]
    assert any(p.endswith("/graders/isolation.py") for p in reads)  # the runner's own code stays readable


# A process that is not root: confine.apply holds it to Rules.processes, and a fork storm is refused there, with an
# error its code sees. (Root, as this suite often runs, is exempt from RLIMIT_NPROC: the kernel's rule. There a storm is
# bounded by the check's time limit, and the runner ends every process: tests/hostile/starts_a_fork_storm.py.)
_STORM = textwrap.dedent('''
    import json, os, resource, sys, time  # everything imported before the user changes (it may not read them)
    sys.path.insert(0, sys.argv[1])
    from graders import confine
    from graders.isolation import PROCESS_LIMIT_ENV, describe_exception
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)  # nobody: what a student's laptop account is to the kernel
    with open("/proc/loadavg") as f:
        total = int(f.read().split()[3].split("/")[1])
    limit = total + 40
    applied = confine.apply(confine.Rules(processes=limit))
    os.environ[PROCESS_LIMIT_ENV] = "40"  # as the runner says it (graders.isolation._confine)
    children, refused, message = [], None, ""
    while len(children) < limit + 50:  # past the limit, whatever the machine runs
        try:
            pid = os.fork()
        except OSError as exc:
            refused = f"{type(exc).__name__} {exc.errno}"
            message = describe_exception(exc, set(), "storm").summary  # what the student reads, still at the limit
            break
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        children.append(pid)
    for pid in children:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    after = describe_exception(BlockingIOError(11, "Resource temporarily unavailable"), set(), "storm").summary
    print(json.dumps({"started": len(children), "refused": refused, "applied": list(applied.enforced), "limit": limit,
                      "message": message, "after": after}))
''')


@pytest.mark.skipif(not hasattr(os, "fork") or not sys.platform.startswith("linux"), reason="RLIMIT_NPROC: Linux")
def test_a_fork_storm_of_a_user_that_is_not_root_is_refused_at_its_process_limit():
    if os.geteuid() == 0 and not os.access(sys.executable, os.X_OK):
        pytest.skip("the interpreter cannot be run as nobody here")
    done = subprocess.run([sys.executable, "-c", _STORM, str(ROOT)], capture_output=True, text=True, timeout=120,
                          cwd="/")
    if os.geteuid() == 0 and "Permission denied" in done.stderr:
        pytest.skip(f"nobody cannot run this interpreter or read the course: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["refused"] == "BlockingIOError 11", result  # EAGAIN: the limit, not something else
    # The limit is every task on the machine then, plus 40 (graders.isolation.process_limit's rule): nobody had none.
    assert 0 < result["started"] <= result["limit"], result
    assert any("processes and threads" in what for what in result["applied"]), result
    # The message names the limit while it is reached, and not for an EAGAIN once processes can start again (a
    # non-blocking socket's "not yet" is EAGAIN too).
    assert "no new process or thread could start: a check may add at most 40" in result["message"], result
    assert "no new process" not in result["after"], result


# -- the ranks' network namespace ------------------------------------------------------------------------
_JUDGE_WITH_A_HOLDER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from graders import confine
holder = confine.NetworkHolder()
print(holder.pid, holder.reason, flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="network namespaces are Linux's")
def test_the_network_holder_is_a_namespace_of_its_own_and_ends_with_its_judge():
    from tests.processes import alive, ended

    judge = subprocess.Popen([sys.executable, "-c", _JUDGE_WITH_A_HOLDER, str(ROOT)], stdout=subprocess.PIPE, text=True)
    try:
        pid, _, reason = judge.stdout.readline().strip().partition(" ")
        if pid == "None":
            pytest.skip(f"no network namespace here: {reason}")
        pid = int(pid)
        assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
        assert alive(pid)
    finally:
        judge.kill()  # as a judge is killed: no exit handler runs
        judge.wait()
        judge.stdout.close()
    assert ended(pid), "the namespace holder outlived its judge"
