"""A local-filesystem object store (spec/PROTOCOL.md, "Storage"; the model's
`WriteData`, `WriteManifest`, `WriteList` and `WriteMeta` are put_if_absent calls).

put_if_absent is an atomic exclusive create: the content goes to a temporary file in the
target's directory, is fsynced, and is then hard-linked to the target name. link(2) fails
with EEXIST if the name exists, so of racing creators exactly one wins and no reader ever
sees a partial object. An overwriting rename would let a second writer silently replace
the winner's object, which is exactly the lost commit the protocol must rule out.

compare_and_swap holds an exclusive `flock` on a sidecar lock file (`.<name>.icefloe-lock`)
while it checks the etag and renames the new content into place; delete takes the same
lock, so a delete cannot slip between the check and the rename. This is acceptable
locally because every writer of a local table runs on this host and goes through this
code (flock is advisory); it is not a protocol for network filesystems, where flock
semantics vary. The holder removes the lock file before it lets go, so none is left
behind (../shared/repro bug8); a locker that waited on a file removed meanwhile sees that
its file is no longer the one at the path (inode check) and starts over on a fresh one
(under contention, every locker that waited does; it gives up only after a minute of it).
Lock and temporary files are hidden from `list`; `stale_temporaries` finds the temporary
files of writers that died between writing and linking, for orphan removal.

The etag is a content hash, as S3's: it changes whenever the content changes.
"""
from __future__ import annotations

import fcntl
import os
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

from icefloe.impl.io.base import (
    AlreadyExists,
    CountingMixin,
    NotFound,
    ObjectInfo,
    PreconditionFailed,
    StoreOutcomeUnknown,
    StoreUnavailable,
    content_etag,
)
from icefloe.impl.io.locations import local_path

_TEMP_SUFFIX = ".icefloe-tmp"
_LOCK_SUFFIX = ".icefloe-lock"
_READ_CHUNK_BYTES = 1 << 20
# Every locker that waited on a holder finds that holder's file removed and starts over, so
# under contention a locker may start over many times, each time after another locker got
# through: a count says nothing. Starting over for this long means something else is wrong.
LOCK_START_OVER_S_MAX = 60.0


def _is_internal(name: str) -> bool:
    return name.startswith(".") and (name.endswith(_TEMP_SUFFIX) or name.endswith(_LOCK_SUFFIX))


def _fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _mtime_ms(st: os.stat_result) -> int:
    return st.st_mtime_ns // 1_000_000


class LocalStore(CountingMixin):
    """Objects are files; locations are `file:/x`, `file:///x` or `/x` (see locations.py)."""

    def __init__(self, *, fsync: bool = True):
        self._init_counts()
        self.fsync = fsync

    # -- reads ------------------------------------------------------------------------

    def get(self, location: str) -> bytes:
        self._count("get")
        path = local_path(location)
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(location, "no such object") from None
        except OSError as e:
            raise StoreUnavailable(location, f"read failed: {e}") from e

    def stat(self, location: str) -> ObjectInfo:
        self._count("stat")
        return self._info(location, local_path(location))

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose location starts with `prefix`, sorted, spelled as `prefix` is.
        For orphan cleanup only: it reads every listed file to compute its etag."""
        self._count("list")
        prefix_path = local_path(prefix)
        base = prefix_path if prefix_path.endswith("/") else os.path.dirname(prefix_path)
        found: list[str] = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in filenames:
                path = os.path.join(dirpath, name)
                if not _is_internal(name) and path.startswith(prefix_path):
                    found.append(path)
        infos = []
        for path in sorted(found):
            try:
                infos.append(self._info(prefix + path[len(prefix_path):], path))
            except NotFound:
                continue  # deleted while listing; a listing is not a snapshot
        return iter(infos)

    # -- writes -----------------------------------------------------------------------

    def put_if_absent(self, location: str, data: bytes) -> ObjectInfo:
        self._count("put_if_absent")
        path = local_path(location)
        directory, name = os.path.split(path)
        try:
            os.makedirs(directory, exist_ok=True)
            temp, mtime_ms = self._write_temp(directory, name, data)
        except OSError as e:
            raise StoreUnavailable(location, f"write failed before create: {e}") from e
        try:
            os.link(temp, path)
        except FileExistsError:
            raise AlreadyExists(location, "object exists") from None
        except OSError as e:
            # link(2) is atomic: when it fails, the name was not created.
            raise StoreUnavailable(location, f"create failed: {e}") from e
        finally:
            self._unlink_quietly(temp)
        self._fsync_dir_after_apply(location, directory)
        return ObjectInfo(location, len(data), content_etag(data), mtime_ms)

    def compare_and_swap(self, location: str, data: bytes, expected_etag: str) -> ObjectInfo:
        self._count("compare_and_swap")
        path = local_path(location)
        directory, name = os.path.split(path)
        with self._locked(location, path):
            try:
                with open(path, "rb") as f:
                    current = f.read()
            except FileNotFoundError:
                raise NotFound(location, "no such object") from None
            except OSError as e:
                raise StoreUnavailable(location, f"read before swap failed: {e}") from e
            actual = content_etag(current)
            if actual != expected_etag:
                raise PreconditionFailed(location, f"etag is {actual}, expected {expected_etag}")
            try:
                temp, mtime_ms = self._write_temp(directory, name, data)
            except OSError as e:
                raise StoreUnavailable(location, f"write failed before swap: {e}") from e
            try:
                os.replace(temp, path)  # safe here: the lock excludes every other writer of `path`
            except OSError as e:
                self._unlink_quietly(temp)
                raise StoreUnavailable(location, f"swap failed: {e}") from e
            self._fsync_dir_after_apply(location, directory)
        return ObjectInfo(location, len(data), content_etag(data), mtime_ms)

    def delete(self, location: str) -> None:
        self._count("delete")
        path = local_path(location)
        if not os.path.isdir(os.path.dirname(path)):
            return  # idempotent: nothing there, and no lock file is created for nothing
        try:
            with self._locked(location, path):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    return
                except OSError as e:
                    raise StoreUnavailable(location, f"delete failed: {e}") from e
                self._fsync_dir_after_apply(location, os.path.dirname(path))
        except NotFound:
            return  # the directory went away meanwhile: the object is gone either way

    def persist(self, location: str) -> None:
        """Make a file or directory another writer created here durable (fsync), as this
        store's own puts are: Spark's Parquet writer closes its files without an fsync, and
        a commit must not point at data a crash could still take back. StoreUnavailable if
        the fsync fails (the caller has committed nothing yet); a no-op without fsync."""
        if not self.fsync:
            return
        self._count("persist")
        try:
            _fsync_path(local_path(location))
        except OSError as e:
            raise StoreUnavailable(location, f"fsync failed: {e}") from e

    # -- helpers ----------------------------------------------------------------------

    def _info(self, location: str, path: str) -> ObjectInfo:
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                digest_input = bytearray()
                while chunk := f.read(_READ_CHUNK_BYTES):
                    digest_input += chunk
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise NotFound(location, "no such object") from None
        except OSError as e:
            raise StoreUnavailable(location, f"stat failed: {e}") from e
        return ObjectInfo(location, len(digest_input), content_etag(bytes(digest_input)), _mtime_ms(st))

    def _write_temp(self, directory: str, name: str, data: bytes) -> tuple[str, int]:
        temp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}{_TEMP_SUFFIX}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if self.fsync:
                os.fsync(fd)
            mtime_ms = _mtime_ms(os.fstat(fd))
        except BaseException:
            os.close(fd)
            self._unlink_quietly(temp)
            raise
        os.close(fd)
        return temp, mtime_ms

    def _fsync_dir_after_apply(self, location: str, directory: str) -> None:
        """The change is visible; if it cannot be made durable the caller must not assume
        either way (a crash could still undo it), hence StoreOutcomeUnknown."""
        if not self.fsync:
            return
        try:
            _fsync_path(directory)
        except OSError as e:
            raise StoreOutcomeUnknown(location, f"applied, but directory fsync failed: {e}") from e

    @contextmanager
    def _locked(self, location: str, path: str):
        directory, name = os.path.split(path)
        lock_path = os.path.join(directory, f".{name}{_LOCK_SUFFIX}")
        deadline, attempts = time.monotonic() + LOCK_START_OVER_S_MAX, 0
        while True:
            attempts += 1
            try:
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            except (FileNotFoundError, NotADirectoryError):
                raise NotFound(location, "no such object") from None
            except OSError as e:
                raise StoreUnavailable(location, f"cannot open lock file: {e}") from e
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    current = os.stat(lock_path).st_ino
                except FileNotFoundError:
                    current = None
                if current == os.fstat(fd).st_ino:
                    try:
                        yield
                    finally:
                        self._unlink_quietly(lock_path)   # still held: nobody can lock this inode now
                    return
                # else the holder before us removed this file: start over on a fresh one
            finally:
                os.close(fd)  # closing the descriptor releases the flock
            if time.monotonic() >= deadline:
                raise StoreUnavailable(location, f"lock file replaced {attempts} times in a row over "
                                                 f"{LOCK_START_OVER_S_MAX:g} s")

    # -- leftovers and links ----------------------------------------------------------

    def stale_temporaries(self, prefix: str, older_than_ms: int) -> list[str]:
        """Temporary files under `prefix` last modified before `older_than_ms`: what writers
        that died between writing an object and linking it left behind."""
        prefix_path = local_path(prefix)
        base = prefix_path if prefix_path.endswith("/") else os.path.dirname(prefix_path)
        out = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if name.startswith(".") and name.endswith(_TEMP_SUFFIX) and path.startswith(prefix_path):
                    try:
                        if _mtime_ms(os.stat(path)) < older_than_ms:
                            out.append(prefix + path[len(prefix_path):])
                    except FileNotFoundError:
                        continue
        return out

    @staticmethod
    def resolve(location: str) -> str:
        """The location with every symbolic link on its path resolved (what a delete would
        really reach)."""
        return "file://" + os.path.realpath(local_path(location))

    @staticmethod
    def _unlink_quietly(path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
