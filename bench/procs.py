"""Starting, watching and stopping the processes under test.

Every process is started with `subprocess.Popen`, pinned to its cores at once, and
waited for by polling a health URL under a bounded deadline: a process that never
becomes ready fails the run with the tail of its log instead of hanging it.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs
import httpx

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ProcessFailed(RuntimeError):
    """A process under test exited or never became ready."""


@attrs.define
class Proc:
    """One running process under test and where its output goes."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path
    cores: tuple[int, ...]

    @property
    def pid(self) -> int:
        return self.popen.pid

    def rss_mib(self) -> float:
        """Resident set size with its children's, from /proc/<pid>/status (VmRSS)."""
        return tree_rss_mib(self.pid)

    def own_rss_mib(self) -> float:
        """Resident set size of the process alone (the gateway without its usage writer
        child: the figure issue 37's memory target is on)."""
        return read_rss_mib(self.pid)

    def open_fds(self) -> int:
        return count_fds(self.pid)

    def cpu_s(self) -> float:
        """CPU time (user + system) used so far, its process tree's included: the usage
        writer's own process, and with `--workers N` each worker's and its writer's."""
        return tree_cpu_seconds(self.pid)

    def log_tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        code = self.popen.poll()
        if code is not None:
            raise ProcessFailed(f"{self.name} exited with {code}:\n{self.log_tail()}")

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM (a graceful shutdown), then SIGKILL after `grace_s`."""
        if self.popen.poll() is not None:
            return
        self.popen.send_signal(signal.SIGTERM)
        try:
            self.popen.wait(grace_s)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(
    name: str,
    argv: Sequence[str],
    *,
    cores: Sequence[int],
    log_dir: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Proc:
    """Start `argv` with its output in `<log_dir>/<name>.log`, pinned to `cores`."""
    log_path = log_dir / f"{name}.log"
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            list(argv),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
    # Pinned before it has had time to start threads, which inherit the mask.
    os.sched_setaffinity(popen.pid, set(cores))
    return Proc(name, popen, log_path, tuple(cores))


def wait_ready(proc: Proc, url: str, *, deadline_s: float, headers: Mapping[str, str] = {}) -> None:
    """Poll `url` until it answers 200; fail when the process dies or time runs out."""
    give_up = time.monotonic() + deadline_s
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < give_up:
            proc.check_alive()
            try:
                if client.get(url, headers=dict(headers)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    proc.stop()
    raise ProcessFailed(f"{proc.name} not ready after {deadline_s:.0f} s:\n{proc.log_tail()}")


def read_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tree_rss_mib(pid: int) -> float:
    """RSS of a process and its children (LiteLLM may fork a worker)."""
    return read_rss_mib(pid) + sum(tree_rss_mib(child) for child in children(pid))


def children(pid: int) -> list[int]:
    """Every thread's children: trio starts a process from a worker thread (the
    supervisor of `--workers N` does), and the kernel lists a child under the thread
    that forked it."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in threads:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
        except OSError:
            continue
        found += [int(part) for part in text.split()]
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and of its descendants, living or already waited for (a
    child that exited, reaped by its parent, counts in the parent's cutime/cstime)."""
    try:
        total = cpu_seconds(pid, reaped_children=True)
    except OSError:
        return 0.0
    return total + sum(tree_cpu_seconds(child) for child in children(pid))


def cpu_seconds(pid: int, *, reaped_children: bool = False) -> float:
    """User + system CPU time of one process, from /proc/<pid>/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / CLOCK_TICKS


def count_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def raise_fd_limit(wanted: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE (inherited by children); returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return max(target, soft)
