"""The bubblewrap command line that fences one step's command in.

The layout, in mount order (later mounts sit on top of earlier ones):

1. the whole filesystem read-only (``--ro-bind / /``);
2. a fresh ``/dev`` (a private tmpfs with null, zero, random, tty, an empty
   ``shm``...: no disks, no ``/dev/mem``), a ``/proc`` of the sandbox's own pid
   namespace, empty ``/tmp`` and ``/run`` (the host's sockets, the ssh agent's
   included, are out of reach);
3. the workdir, the run's scratch directory, the step's stage directory and
   any ``writable=`` path, writable;
4. git's control files read-only in each writable git directory (config,
   hooks, a worktree's links: see :mod:`attractor.proc.gitguard`);
5. the run directory read-only again when it lies inside a writable path, with
   the folder right under that path that holds it (all of ``.attractor`` for the
   default ``.attractor/runs/``; the step's own stage directory stays writable);
6. the user's secret directories and files hidden: an empty tmpfs over a
   directory, ``/dev/null`` over a file.

The command runs in new user, pid, IPC, UTS and (unless ``network=on``)
network namespaces, without capabilities, with ``/proc/sys`` read-only (an
engine running as root would otherwise let it change kernel settings), and dies with the engine
(``--die-with-parent``). When the command exits, the namespace's init (bwrap)
exits and the kernel kills whatever it left behind.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from attractor.proc.allowlist import INSIDE_DIR, bridge_argv, proxy_env
from attractor.proc.gitguard import git_guards, run_dir_shield
from attractor.valueclass import frozen

#: Secret places under the home directory, never visible inside the sandbox.
HIDDEN_IN_HOME = (
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".netrc",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".docker/config.json",
    ".git-credentials",
    ".config/gh",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".config/attractor",
)

#: Secret files of the system itself, hidden as well (globs).
HIDDEN_SYSTEM = ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_*_key")

#: The probe: the flags every sandboxed command uses, around ``/bin/true``.
_PROBE_TIMEOUT = 10.0


@frozen
class Fence:
    """Where one command may write and whether it may reach the network."""

    workdir: Path
    #: Extra writable paths (``writable=``), each an existing directory or file.
    writable: tuple[Path, ...] = ()
    #: The run directory: read-only for the step even inside the workdir.
    run_dir: Path | None = None
    #: The step's own stage directory (``$ATTRACTOR_STAGE_DIR``): writable.
    stage_dir: Path | None = None
    #: The run's scratch directory (``$TMPDIR`` inside): writable.
    scratch: Path | None = None
    #: The host's whole network (``network=on``).
    network: bool = False
    home: Path | None = None
    #: ``network="a.com,b.org"``: no network but these hosts, through the
    #: engine's proxy (:mod:`attractor.proc.netproxy`) whose socket is in ``proxy_dir``.
    hosts: tuple[str, ...] = ()
    proxy_dir: Path | None = None


def bwrap_path() -> str | None:
    """The ``bwrap`` program on PATH, or None."""
    return shutil.which("bwrap")


@cache
def probe() -> str | None:
    """None when a sandbox starts here, else one line saying why not (cached per process)."""
    program = bwrap_path()
    if program is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    argv = [program, *_base_flags(network=False), "--ro-bind", "/", "/", "/bin/true"]
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bwrap cannot start: {error}"
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        detail = why[-1] if why else f"exit code {done.returncode}"
        if inside_user_namespace():
            return (
                f"bwrap cannot create a sandbox here ({detail}); attractor already runs inside "
                "a sandbox or container, which does not allow a nested one"
            )
        return f"bwrap cannot create a sandbox here ({detail}); user namespaces may be disabled"
    return None


def inside_user_namespace() -> bool:
    """True when this process runs in a user namespace (a sandbox or rootless container)."""
    try:
        mapping = Path("/proc/self/uid_map").read_text().split()
    except OSError:
        return False
    return mapping != ["0", "0", "4294967295"]


def _base_flags(*, network: bool) -> list[str]:
    flags = [
        "--die-with-parent",
        "--unshare-user",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if not network:
        flags.append("--unshare-net")
    return flags


def _home(fence: Fence) -> Path | None:
    if fence.home is not None:
        return fence.home
    raw = os.environ.get("HOME")
    return Path(raw) if raw else None


def wrap_argv(fence: Fence) -> list[str]:
    """``bwrap`` and its flags, to be followed by the command's argv."""
    program = bwrap_path() or "bwrap"
    argv = [program, *_base_flags(network=fence.network), "--ro-bind", "/", "/"]
    argv += ["--dev", "/dev", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    # --dev makes /dev a private tmpfs: its /dev/shm is the sandbox's own already.
    argv += ["--tmpfs", "/tmp", "--tmpfs", "/run"]
    if fence.network:
        argv += _resolver_binds()
    run_dir = fence.run_dir.resolve() if fence.run_dir is not None else None
    own = [p.resolve() for p in (fence.scratch, fence.stage_dir) if p is not None]
    writable = list(dict.fromkeys(p.resolve() for p in (fence.workdir, *fence.writable)))
    # The run directory goes read-only over a writable path that holds it, and the
    # step's own folders inside it writable again: each bound once, in that order.
    shield = run_dir_shield(run_dir, writable)
    later = [p for p in own if shield is not None and p.is_relative_to(shield)]
    roots = list(writable)
    writable += [p for p in own if p not in later and p not in writable]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for path, rw in git_guards(roots):
        argv += ["--bind" if rw else "--ro-bind", str(path), str(path)]
    if shield is not None:
        argv += ["--ro-bind", str(shield), str(shield)]
        # A writable place inside the shield (a branch's worktree in a snapshot's run
        # directory, under a --writable path that holds the run directory) stays so.
        inner = [
            p
            for p in roots
            if p != shield
            and p.is_relative_to(shield)
            and not (run_dir is not None and run_dir.is_relative_to(p))  # never the run's own
        ]
        for path in dict.fromkeys([*later, *inner]):
            argv += ["--bind", str(path), str(path)]
        for path, rw in git_guards(inner):
            argv += ["--bind" if rw else "--ro-bind", str(path), str(path)]
    argv += _hidden(_home(fence))
    argv += _hidden_system()
    if fence.scratch is not None:
        argv += ["--setenv", "TMPDIR", str(fence.scratch.resolve())]
    argv += ["--chdir", str(fence.workdir.resolve())]
    if fence.hosts and not fence.network and fence.proxy_dir is not None:
        argv += ["--ro-bind", str(fence.proxy_dir), INSIDE_DIR]
        for key, value in proxy_env(fence.hosts).items():
            argv += ["--setenv", key, value]
        argv += ["--", *bridge_argv(shutil.which("socat") or "socat")]
        return argv
    return [*argv, "--"]


def _resolver_binds() -> list[str]:
    """``/etc/resolv.conf`` often points into ``/run``: keep its target visible."""
    target = Path("/etc/resolv.conf").resolve()
    if target.is_relative_to("/run") and target.exists():
        return ["--ro-bind", str(target), str(target)]
    return []


@cache
def _system_secrets() -> tuple[str, ...]:
    """Secret files of the system (readable when the engine runs as root), looked up once."""
    return tuple(p for pattern in HIDDEN_SYSTEM for p in sorted(glob.glob(pattern)))


@cache
def _hidden_system() -> tuple[str, ...]:
    """/dev/null over each of the system's secret files."""
    argv: list[str] = []
    for path in _system_secrets():
        argv += ["--ro-bind", "/dev/null", path]
    return tuple(argv)


def _hidden(home: Path | None) -> list[str]:
    if home is None:
        return []
    argv: list[str] = []
    for name in HIDDEN_IN_HOME:
        path = home / name
        try:
            is_dir = path.is_dir()
            exists = is_dir or path.exists() or path.is_symlink()
        except OSError:
            continue
        if not exists:
            continue
        shown = str(path.resolve()) if path.is_symlink() else str(path)
        if is_dir:
            argv += ["--tmpfs", shown]
        else:
            argv += ["--ro-bind", "/dev/null", shown]
    return argv


#: What a command's own error says when it hit the sandbox's walls, and what to tell
#: the model about them. Each is checked only where it cannot be an ordinary failure:
#: a hidden place named in the message, a process id of the host, a connection
#: refused while the step has no network.
WRITES = (
    "only the working directory and $TMPDIR are writable (and the paths the node lists "
    "in writable=)"
)
#: errno texts that say a command hit the sandbox's walls, whatever it did.
REFUSALS = (
    "Read-only file system",
    "Permission denied",
    "Network is unreachable",
    "not in this step's network allow-list",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "CONNECT tunnel failed, response 403",
)
#: Said by the proxy of an allow-list (attractor.proc.netproxy): a plain HTTP
#: request it refused exits 0 with this on stdout, so it is looked for there too.
PROXY_REFUSAL = "not in this step's network allow-list"
#: A connection to a server that is not there: the sandbox's if the step has no network.
_NO_SERVER = (
    "Connection refused",
    "Couldn't connect to server",
    "Could not connect to server",
    "Failed to connect to",
)
#: A process the sandbox cannot see: ``kill PID`` and ``/proc/PID/...`` of the host.
_NO_PROCESS = re.compile(r"No such process|/proc/[0-9]+(?:/|\b)")


def hidden_paths(home: Path | None) -> list[str]:
    """The places hidden from every sandboxed command (under ``home`` and the system's)."""
    found = [] if home is None else [str(home / name) for name in HIDDEN_IN_HOME]
    return found + list(_system_secrets())


def refusal_note(stderr: str, fence: Fence | None = None, stdout: str = "") -> str:
    """A short note for the model when a command's output says the sandbox stopped it, else ''.

    ``fence``: the step's (which places are hidden, whether it has the network);
    without it only the errno texts of :data:`REFUSALS` count.
    """
    why = _refusal(stderr, fence, stdout)
    return "" if why is None else f"[sandbox: {why}]"


def _refusal(stderr: str, fence: Fence | None, stdout: str) -> str | None:
    if PROXY_REFUSAL in stdout or PROXY_REFUSAL in stderr:
        return (
            f"'{PROXY_REFUSAL}' — this step reaches only the hosts its node lists in "
            "network=, through the proxy in HTTP_PROXY; other hosts are refused"
        )
    if fence is not None:
        home = _home(fence)
        hidden = next((p for p in hidden_paths(home) if _names(stderr, p)), None)
        if hidden is not None:
            return (
                f"{hidden} is hidden — this command runs in a sandbox where the user's secret "
                "files and folders (~/.ssh, ~/.aws, ~/.netrc, keyrings, ...) are not visible; "
                "the step cannot read them"
            )
        if _NO_PROCESS.search(stderr):
            return (
                "the process is outside the sandbox — this command runs in its own process "
                "namespace: it sees and signals only its own processes, never the engine's or "
                "the host's (nor their /proc/PID files)"
            )
        if not fence.network and any(text in stderr for text in _NO_SERVER):
            allowed = "only the hosts in network=, through HTTP_PROXY" if fence.hosts else "off"
            return (
                f"the network is {allowed} — this command runs in a sandbox with its own "
                "network: 127.0.0.1 is the sandbox's own loopback, so no server of the host "
                "(nor any other host) can be reached; the node needs network=on for that"
            )
    for text in REFUSALS:
        if text in stderr:
            return (
                f"'{text}' — this command runs in a sandbox: {WRITES}, the network is off "
                "unless the node sets network=on (or names hosts in network=, reached through "
                "HTTP_PROXY), and secret files are hidden"
            )
    return None


def _names(text: str, path: str) -> bool:
    """Whether ``text`` names ``path`` or something inside it (not ``path`` + more letters)."""
    start = text.find(path)
    while start >= 0:
        end = start + len(path)
        if end == len(text) or not (text[end].isalnum() or text[end] in "._-"):
            return True
        start = text.find(path, end)
    return False
