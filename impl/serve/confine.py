"""What a client of `icefloe serve` may ask for: where a table may live, and which names the
catalog can hold (issue 31 item 1; spec/PROTOCOL.md 11.3 "Deleting files": nothing outside
a table's own location is ever deleted, for every client).

- `LocationPolicy.check(location)`: a table's location (a create's `location`, a staged
  create's `set-location`, the root of a registered metadata file) must lie strictly inside
  the warehouse or one of the `--allowed-location` roots: anything else is 403
  ForbiddenException, before anything is written or read (../shared/repro bug11: a table
  created at any directory the server could write, then purged). Local roots are compared
  with every symbolic link resolved, so a link inside the warehouse does not widen it.
- `check_levels(levels)`: a namespace or table name level with leading or trailing
  whitespace is refused (`"db.t "` would be another table that lists like `db.t`, bug18),
  and so is one longer than a file name or the catalog's column can hold (255 bytes):
  400 BadRequestException, never the 503 the store's own failure would give.
"""
from __future__ import annotations

import os

from icefloe.impl.io.locations import InvalidLocation, canonical_location, local_path, scheme_of
from icefloe.impl.serve import errors as E

NAME_BYTES_MAX = 255          # a file name (NAME_MAX) and the JDBC catalog's VARCHAR(255) name columns
METADATA_LOCATION_MAX = 1000  # the JDBC catalog's VARCHAR(1000) metadata_location column
METADATA_SUFFIX_MAX = 64      # "/metadata/" + "NNNNN-<uuid>.metadata.json", with room


def check_levels(levels, what: str = "name") -> None:
    """400 for a level with surrounding whitespace or longer than NAME_BYTES_MAX bytes, and
    for a namespace whose dotted form is longer than the catalog's column."""
    for level in levels:
        if not isinstance(level, str):
            raise E.bad_request(f"Malformed {what}: {level!r} is not a string")
        if level != level.strip():
            raise E.bad_request(f"Malformed {what} {'.'.join(levels)!r}: the level {level!r} has leading or "
                                "trailing whitespace")
        if len(level.encode("utf-8", "surrogatepass")) > NAME_BYTES_MAX:
            raise E.bad_request(f"Malformed {what}: a level of {len(level)} characters ({level[:20]}...); "
                                f"at most {NAME_BYTES_MAX} bytes")


def check_namespace_length(namespace) -> None:
    dotted = ".".join(namespace)
    if len(dotted.encode("utf-8", "surrogatepass")) > NAME_BYTES_MAX:
        raise E.bad_request(f"Malformed namespace: {len(dotted)} characters ({dotted[:20]}...); "
                            f"at most {NAME_BYTES_MAX} bytes")


def _forbidden(message: str) -> E.RestError:
    return E.forbidden(message)


class LocationPolicy:
    """The roots a table may live under: the warehouse and the `--allowed-location`s."""

    def __init__(self, warehouse_root: str, allowed: tuple[str, ...] = ()):
        self.roots = tuple(self._root(r) for r in (warehouse_root, *allowed))

    @staticmethod
    def _root(location: str) -> str:
        if "://" not in location and not location.startswith("/"):
            location = os.path.abspath(location)
        return LocationPolicy._comparable(location).rstrip("/")

    @staticmethod
    def _comparable(location: str) -> str:
        """One spelling to compare; a local path with its links resolved (realpath also
        resolves the part of a path that does not exist yet, as far as it exists)."""
        c = canonical_location(location)
        if scheme_of(c) == "file":
            return "file://" + os.path.realpath(local_path(c))
        return c

    def check(self, location: str, what: str = "table location") -> str:
        """`location` unchanged when it lies strictly inside a root; 400 when it is not a
        location, 403 when it lies elsewhere."""
        try:
            c = self._comparable(location).rstrip("/")
        except (InvalidLocation, ValueError) as e:
            raise E.bad_request(f"Malformed {what} {location[:200]!r}: {e}") from None
        if len(location) > METADATA_LOCATION_MAX - METADATA_SUFFIX_MAX:
            raise E.bad_request(f"Malformed {what}: {len(location)} characters; the catalog keeps metadata "
                                f"locations of at most {METADATA_LOCATION_MAX}")
        if not any(c.startswith(root + "/") for root in self.roots):
            raise _forbidden(f"{what} {location} is outside the warehouse and every allowed location "
                             "(icefloe serve --allowed-location)")
        return location
