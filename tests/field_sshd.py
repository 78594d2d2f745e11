"""Real OpenSSH between emulated hosts, for the field tests.

``SshHosts(bed, tmp_path)`` starts Debian's ``/usr/sbin/sshd`` inside host namespaces of a
linklab testbed, each with a host key generated for the test and the test's own user key
in an authorized_keys file of the test's directory. It writes an ssh configuration
(``LINKLAB_SSH_CONFIG``) that names each host by an alias (``<host>-<tag>``), pins its
host key (StrictHostKeyChecking yes, a known_hosts file of the test) and uses only the
test's key. Each sshd listens on its namespace's address only; it is started through
``bed.popen`` so the testbed's journal ends it with the link. The machine's own sshd is
never started or touched; the privilege-separation directory sshd needs (/run/sshd) is
created if missing (the Debian package's service would create it).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
PORT = 2222


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "linklab-test",
                    "-f", str(path)], check=True)


class SshHosts:
    def __init__(self, bed, directory: Path, hosts: tuple[str, ...], tag: str):
        self.bed = bed
        self.dir = directory
        self.hosts = hosts
        self.tag = tag
        self.processes: list[subprocess.Popen] = []
        self.config = directory / "ssh_config"

    def alias(self, host: str) -> str:
        return f"{host}-{self.tag}"

    def url(self, host: str) -> str:
        return f"ssh://{self.alias(host)}"

    def start(self) -> SshHosts:
        self.dir.mkdir(parents=True, exist_ok=True)
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        user_key = self.dir / "id_user"
        _keygen(user_key)
        (self.dir / "authorized_keys").write_text((self.dir / "id_user.pub").read_text())
        os.chmod(self.dir / "authorized_keys", 0o600)
        known, config = [], []
        for host in self.hosts:
            address = self.bed.hosts[host].address
            key = self.dir / f"hostkey_{host}"
            _keygen(key)
            known.append(f"[{address}]:{PORT} {(self.dir / f'hostkey_{host}.pub').read_text()}")
            sshd_config = self.dir / f"sshd_{host}.conf"
            sshd_config.write_text(
                f"Port {PORT}\nListenAddress {address}\nHostKey {key}\n"
                f"AuthorizedKeysFile {self.dir / 'authorized_keys'}\n"
                "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
                f"PidFile {self.dir / f'sshd_{host}.pid'}\nLogLevel INFO\n")
            log = open(self.dir / f"sshd_{host}.log", "wb")  # noqa: SIM115 (kept by sshd)
            self.processes.append(self.bed.popen(host, [SSHD, "-D", "-e", "-f", str(sshd_config)],
                                                 stdout=log, stderr=log))
            config.append(
                f"Host {self.alias(host)}\n  HostName {address}\n  Port {PORT}\n  User root\n"
                f"  IdentityFile {user_key}\n  IdentitiesOnly yes\n"
                f"  UserKnownHostsFile {self.dir / 'known_hosts'}\n"
                "  StrictHostKeyChecking yes\n  BatchMode yes\n")
        (self.dir / "known_hosts").write_text("".join(known))
        self.config.write_text("\n".join(config))
        for host in self.hosts:
            self._wait(host)
        return self

    def _wait(self, host: str, timeout_s: float = 10.0) -> None:
        """Until the sshd of ``host`` accepts connections (from inside the testbed)."""
        address = self.bed.hosts[host].address
        deadline = time.monotonic() + timeout_s
        script = (f"import socket; socket.create_connection(('{address}', {PORT}), 1)")
        while time.monotonic() < deadline:
            other = next(h for h in self.bed.hosts if h != host and self.bed.hosts[h].address)
            if self.bed.run(other, ["python3", "-c", script], check=False).returncode == 0:
                return
            time.sleep(0.1)
        log = (self.dir / f"sshd_{host}.log").read_text()
        raise RuntimeError(f"sshd in {host} did not start: {log[-500:]}")

    def env(self) -> dict[str, str]:
        return {**os.environ, "LINKLAB_SSH_CONFIG": str(self.config)}

