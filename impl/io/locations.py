"""Location strings: the one place that parses a scheme and a local path (spec/PROTOCOL.md, "Storage").

Writers disagree on how to spell a local file: pyiceberg writes `file:///tmp/x`, Hadoop
and Spark write `file:/tmp/x`, and tools pass plain `/tmp/x`. All three name the same
object, so every store and the router go through `scheme_of` and `local_path` here.
Locations are not percent-decoded: Iceberg metadata stores paths, not strict RFC 8089 URIs.
"""
from __future__ import annotations

import re

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_LOCAL_HOSTS = ("", "localhost")


class InvalidLocation(ValueError):
    pass


def scheme_of(location: str) -> str:
    """The lower-case scheme; a plain absolute path is a `file` location."""
    if location.startswith("/"):
        return "file"
    match = _SCHEME.match(location)
    if match is None:
        raise InvalidLocation(f"not an absolute location: {location!r}")
    return match.group(1).lower()


def local_path(location: str) -> str:
    """The absolute local path of `file:/x`, `file:///x`, `file://localhost/x` or `/x`.

    The path is returned as spelled (no normalisation), so a listed path can be mapped
    back to the caller's spelling by prefix; `.` and `..` segments are refused instead.
    """
    if location.startswith("/"):
        path = location
    elif location[:5].lower() == "file:":
        rest = location[5:]
        if rest.startswith("//"):
            authority, _, tail = rest[2:].partition("/")
            if authority.lower() not in _LOCAL_HOSTS:
                raise InvalidLocation(f"file location on a remote host: {location!r}")
            path = "/" + tail
        else:
            path = rest
    else:
        raise InvalidLocation(f"not a file location: {location!r}")
    if not path.startswith("/"):
        raise InvalidLocation(f"relative file location: {location!r}")
    if path.startswith("//"):
        raise InvalidLocation(f"ambiguous file location (empty first segment): {location!r}")
    if any(segment in (".", "..") for segment in path.split("/")):
        raise InvalidLocation(f"'.' or '..' segment in location: {location!r}")
    return path


def comparable_location(location: str) -> str:
    """canonical_location, or the text itself when it is not a location icefloe can parse
    (a foreign writer's path with a '..' segment, say): for comparing, never for opening."""
    try:
        return canonical_location(location)
    except InvalidLocation:
        return location


def canonical_location(location: str) -> str:
    """One spelling per object, for comparing locations written by different tools:
    `file:///abs/path` for local files, the location unchanged for other schemes."""
    if scheme_of(location) == "file":
        return "file://" + local_path(location)
    return location
