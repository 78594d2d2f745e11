"""A conversation with the agent (agent.py) on one host: JSON lines over its stdin/stdout."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from typing import Any

from linklab.errors import LinklabError
from linklab.field.shell import Host


class AgentSession:
    """``python3 agent.py`` on ``host``; ``call(op, ...)`` sends a command, returns the reply."""

    def __init__(self, host: Host):
        self.host = host
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self.hello: dict[str, Any] = {}
        self.buffer = b""

    def start(self, session: int, bind_address: str = "0.0.0.0") -> None:
        pids = self.host.pids_dir     # the keeper's list: it ends the agent if need be
        register = ["--pids", pids] if pids else []
        self.process = self.host.popen(["python3", "-u", self.host.path("agent.py"), *register],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, start_new_session=True)
        self.hello = self.call("hello")
        self.port = int(self.call("bind", session=session, address=bind_address)["port"])

    def call(self, op: str, timeout_s: float = 60.0, **args: Any) -> dict[str, Any]:
        process = self.process
        if process is None or process.poll() is not None:
            raise LinklabError(f"{self.host.name}: linklab's agent is not running"
                               + self._stderr())
        try:
            process.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
            process.stdin.flush()
        except BrokenPipeError:
            raise LinklabError(f"{self.host.name}: linklab's agent ended" + self._stderr()) \
                from None
        line = self._readline(timeout_s)
        if line is None:
            raise LinklabError(f"{self.host.name}: linklab's agent did not answer {op!r} "
                               f"within {timeout_s:g} s" + self._stderr())
        reply = json.loads(line)
        if not reply.get("ok"):
            raise LinklabError(f"{self.host.name}: {op}: {reply.get('error')}")
        return reply

    def _readline(self, timeout_s: float) -> bytes | None:
        assert self.process is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def _stderr(self) -> str:
        process = self.process
        if process is None or process.poll() is None:
            return ""
        text = process.stderr.read().decode(errors="replace").strip().splitlines()
        return f": {text[-1]}" if text else f" (exit status {process.returncode})"

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        try:
            process.stdin.write(b'{"op": "quit"}\n')
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            stream.close()
