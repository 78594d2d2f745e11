"""The directory where runs keep their state, and how files in it are read and written.

linklab runs as root and acts on what its state files say, so a state file must be one
nobody else could have written. Every time the directory is used it is opened component
by component without following symlinks and checked (not assumed):

* the directory itself: a real directory (no symlink), owned by the acting user,
  mode 0700 (rwx for the owner, nothing for group or others);
* every directory above it: no symlink, owned by root or the acting user, and not
  writable by group or others unless sticky (like /tmp), so nobody can swap it;
* files: opened relative to the checked directory with ``O_NOFOLLOW``; a file must be
  a regular file owned by the acting user and not writable by group or others;
  written atomically (temporary file, fsync, rename in the same directory).

Where: ``$LINKLAB_STATE_DIR`` if set, else ``/run/linklab`` for root and
``/tmp/linklab-<uid>`` for other users. Root honours ``$LINKLAB_STATE_DIR`` only under
the same checks (owned by root, 0700, no symlink on the way). A missing directory is
created (its parent must exist) with mode 0700. Anything else is refused with one line
naming the directory, its owner and mode, and what is expected.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from linklab.errors import LinklabError

DEFAULT_ROOT_DIR = Path("/run/linklab")
MAX_STATE_BYTES = 16 * 1024 * 1024   # a state file is a few KiB; more is not ours


class UnsafeStateDir(LinklabError):
    """The state directory (or a file in it) is not one linklab may trust."""

    exit_code = 2


def default_path() -> Path:
    """``$LINKLAB_STATE_DIR``, else /run/linklab for root, /tmp/linklab-<uid> otherwise."""
    if os.environ.get("LINKLAB_STATE_DIR"):
        return Path(os.environ["LINKLAB_STATE_DIR"])
    uid = os.geteuid()
    return DEFAULT_ROOT_DIR if uid == 0 else Path(f"/tmp/linklab-{uid}")


def _who(uid: int) -> str:
    return "root" if uid == 0 else f"uid {uid}"


def _describe(st: os.stat_result) -> str:
    return f"owned by {_who(st.st_uid)} with mode {stat.S_IMODE(st.st_mode):04o}"


def _overflow_uid() -> int | None:
    """Inside a user namespace (the user-namespace holder, userns.py) owners that are not
    mapped -- root among them -- show as the overflow uid; None outside one."""
    try:
        mapping = Path("/proc/self/uid_map").read_text().split()
        if mapping[:3] == ["0", "0", "4294967295"]:
            return None
        return int(Path("/proc/sys/kernel/overflowuid").read_text())
    except (OSError, ValueError):
        return None


def _check_ancestor(path: str, st: os.stat_result, uid: int) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeStateDir(f"state directory: {path} is not a directory")
    # (in a user namespace, the holder's parent checked the real owners before starting it)
    if st.st_uid not in (0, uid, _overflow_uid()):
        raise UnsafeStateDir(
            f"state directory: {path} (a directory above it) is {_describe(st)}; "
            f"linklab needs every directory on the way owned by root or {_who(uid)}")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise UnsafeStateDir(
            f"state directory: {path} (a directory above it) is {_describe(st)}; "
            "linklab needs it not writable by group or others (or sticky, like /tmp)")


def check_directory(path: Path | str, st: os.stat_result, uid: int | None = None) -> None:
    """Raise UnsafeStateDir unless ``st`` is a directory owned by ``uid``, mode 0700."""
    uid = os.geteuid() if uid is None else uid
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeStateDir(f"state directory {path} is not a directory")
    if st.st_uid != uid or stat.S_IMODE(st.st_mode) != 0o700:
        raise UnsafeStateDir(
            f"state directory {path} is {_describe(st)}; linklab needs it owned by "
            f"{_who(uid)} with mode 0700 (chown/chmod it, or remove it and let linklab "
            "make it)")


def _open_dir_at(parent_fd: int | None, name: str, shown: str) -> int:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, dir_fd=parent_fd)
    except FileNotFoundError:
        raise
    except NotADirectoryError:
        raise UnsafeStateDir(f"state directory: {shown} is not a directory") from None
    except OSError as error:
        if os.path.islink(shown):
            raise UnsafeStateDir(f"state directory: {shown} is a symlink; linklab follows "
                                 "no symlink on the way to its state") from None
        raise UnsafeStateDir(f"state directory: cannot open {shown}: "
                             f"{error.strerror}") from None


class StateDir:
    """An open, checked state directory; every operation is relative to its descriptor."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self.fd = fd

    # --- opening ------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | None = None, *, create: bool = True) -> StateDir:
        """Open (and with ``create``, make) the state directory, checking every level.

        Raises UnsafeStateDir (one line); FileNotFoundError if it is missing and
        ``create`` is False.
        """
        path = Path(os.path.abspath(path or default_path()))
        uid = os.geteuid()
        parts = path.parts[1:]
        if not parts:
            raise UnsafeStateDir("state directory: / cannot be a state directory")
        fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        shown = "/"
        try:
            _check_ancestor(shown, os.fstat(fd), uid)
            for i, name in enumerate(parts):
                shown = os.path.join(shown, name)
                last = i == len(parts) - 1
                try:
                    child = _open_dir_at(fd, name, shown)
                except FileNotFoundError:
                    if not (last and create):
                        if last:
                            raise
                        raise UnsafeStateDir(f"state directory: {shown} does not exist "
                                             f"(needed for {path})") from None
                    try:
                        os.mkdir(name, 0o700, dir_fd=fd)
                        child = _open_dir_at(fd, name, shown)
                        os.fchmod(child, 0o700)  # whatever the umask
                    except FileExistsError:
                        child = _open_dir_at(fd, name, shown)
                    except OSError as error:
                        raise UnsafeStateDir(f"state directory {shown} cannot be made: "
                                             f"{error.strerror}") from None
                os.close(fd)
                fd = child
                st = os.fstat(fd)
                if last:
                    check_directory(shown, st, uid)
                else:
                    _check_ancestor(shown, st, uid)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, fd)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> StateDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        with contextlib.suppress(Exception):
            self.close()

    def recheck(self) -> None:
        """The directory is still ours and 0700 (checked again before each use)."""
        check_directory(self.path, os.fstat(self.fd))

    # --- files ----------------------------------------------------------------------

    def file(self, name: str) -> Path:
        _check_name(name)
        return self.path / name

    def names(self) -> list[str]:
        self.recheck()
        return sorted(os.listdir(self.fd))

    def exists(self, name: str) -> bool:
        _check_name(name)
        try:
            os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def read(self, name: str) -> bytes:
        """The bytes of ``name``: a regular file of ours, not writable by others."""
        _check_name(name)
        self.recheck()
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                         dir_fd=self.fd)
        except FileNotFoundError:
            raise
        except OSError as error:
            raise UnsafeStateDir(f"state file {self.path / name}: not a regular file "
                                 f"({error.strerror}); linklab follows no symlink") from None
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            where = self.path / name
            if not stat.S_ISREG(st.st_mode):
                raise UnsafeStateDir(f"state file {where} is not a regular file")
            if st.st_uid != os.geteuid() or st.st_mode & 0o022:
                raise UnsafeStateDir(
                    f"state file {where} is {_describe(st)}; linklab reads only files owned "
                    f"by {_who(os.geteuid())} and not writable by group or others")
            data = handle.read(MAX_STATE_BYTES + 1)
        if len(data) > MAX_STATE_BYTES:
            raise UnsafeStateDir(f"state file {self.path / name} is larger than "
                                 f"{MAX_STATE_BYTES} bytes: not a linklab state file")
        return data

    def _write_temp(self, name: str, data: bytes) -> str:
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise
        return tmp

    def write(self, name: str, data: bytes) -> None:
        """Replace ``name`` atomically (temp file + fsync + rename in this directory)."""
        _check_name(name)
        self.recheck()
        tmp = self._write_temp(name, data)
        try:
            os.rename(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise
        os.fsync(self.fd)

    def create(self, name: str, data: bytes) -> bool:
        """Create ``name`` with ``data`` atomically; False if it already exists."""
        _check_name(name)
        self.recheck()
        tmp = self._write_temp(name, data)
        try:
            os.link(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
        os.fsync(self.fd)
        return True

    def remove(self, name: str) -> bool:
        """Unlink ``name`` (a symlink is removed, never followed); False if absent."""
        _check_name(name)
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            return False
        return True


def _check_name(name: str) -> None:
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise UnsafeStateDir(f"not a state file name: {name!r}")
