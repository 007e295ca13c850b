"""Waking a thread when entries appear in a few local folders (task_commits.py): Linux's
inotify through libc, or a timer where it is not available.

    events = FolderEvents()
    events.watch(folder)   # True if the folder is watched for new entries (it must exist)
    events.wait(timeout_s) # returns on a new entry in a watched folder (created or renamed
                           # into it), on wake(), or after timeout_s
    events.wake()          # from another thread
    events.close()

It says only that something may have happened, never what: the caller looks itself after
each wait. So an event that comes twice, is merged with another, or came before its watch
was added changes nothing, provided the caller looks after adding a watch. Without inotify
(another OS, or no instance left: fs.inotify.max_user_instances), `watch` returns False and
the caller waits with a short timeout: it polls.
"""
from __future__ import annotations

import ctypes
import os
import select

IN_MOVED_TO, IN_CREATE, IN_ONLYDIR = 0x80, 0x100, 0x01000000
_READ_BYTES = 4096


def _load_libc():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
    return libc


_LIBC = _load_libc()


class FolderEvents:
    def __init__(self):
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._fd = -1 if _LIBC is None else _LIBC.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        self._watched: set[str] = set()

    def watch(self, folder: str) -> bool:
        """Watch `folder` for new entries; False if it cannot be (it does not exist, or no
        inotify). Idempotent."""
        if folder in self._watched:
            return True
        if self._fd < 0:
            return False
        if _LIBC.inotify_add_watch(self._fd, os.fsencode(folder), IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0:
            return False
        self._watched.add(folder)
        return True

    def wait(self, timeout_s: float) -> None:
        fds = [self._wake_r] + ([self._fd] if self._fd >= 0 else [])
        ready, _, _ = select.select(fds, [], [], timeout_s)
        for fd in ready:
            _drain(fd)

    def wake(self) -> None:
        try:
            os.write(self._wake_w, b"w")
        except (BlockingIOError, OSError):
            pass  # the pipe is full (a wake is pending anyway) or closed (nobody waits)

    def close(self) -> None:
        for fd in (self._fd, self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._fd = self._wake_r = self._wake_w = -1


def _drain(fd: int) -> None:
    for _ in range(1024):  # bounded: what arrived so far is a few reads at most
        try:
            if not os.read(fd, _READ_BYTES):
                return
        except (BlockingIOError, OSError):
            return


__all__ = ["FolderEvents"]
