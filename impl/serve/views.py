"""Iceberg views: the view metadata JSON (Iceberg view spec, "View Metadata": format-version
1, view-uuid, location, schemas, versions, version-log, current-version-id, properties) and
the REST commit's ViewRequirements and ViewUpdates (REST spec: CommitViewRequest,
AssertViewUUID, AddViewVersionUpdate, SetCurrentViewVersionUpdate, ...) as pure functions
over that document, old -> new.

The document stays JSON (a dict): a view is a name for a query, icefloe reads no data
through it, so what a client wrote is kept as written once checked. The id rules follow
the spec and Iceberg-Java's builder, so a view either writes reads the same:
- an added schema equal to a known one reuses its id, else takes the next (0 first);
- an added version equal to a known one but for its id and timestamp reuses that id, else
  takes the next (1 first); schema-id -1 in a version means the schema this commit added
  last, and version-id -1 in set-current-view-version the version it added last;
- a version may hold one representation per dialect; a new current version may not drop
  a dialect of the one it replaces unless `replace.drop-dialect.allowed` is true;
- the versions kept are the `version.history.num-entries` newest (10) and the current one;
  the version log keeps the entries after the last one naming a version no longer kept.
Each refusal is ViewError (a 400 naming the field).
"""
from __future__ import annotations

import copy
from typing import Any

from icefloe.impl.format.types import FormatError, schema_from_json

FORMAT_VERSION = 1
LAST_ADDED = -1
HISTORY_ENTRIES_PROPERTY, HISTORY_ENTRIES_DEFAULT = "version.history.num-entries", 10
DROP_DIALECT_PROPERTY = "replace.drop-dialect.allowed"
VERSION_FIELDS = ("version-id", "timestamp-ms", "schema-id", "summary", "representations", "default-namespace")


class ViewError(ValueError):
    """A view document or update that the view spec does not allow (a 400)."""


def _schema(raw: Any, where: str) -> dict:
    if not isinstance(raw, dict):
        raise ViewError(f"{where}: a schema object")
    try:
        schema_from_json(raw, where)
    except FormatError as e:
        raise ViewError(f"{where}: {e}") from None
    return raw


def check_version(raw: Any, where: str = "view-version") -> dict:
    """A ViewVersion as the spec describes it (fields, types, one SQL per dialect)."""
    if not isinstance(raw, dict):
        raise ViewError(f"{where}: a view version object")
    for name in VERSION_FIELDS:
        if name not in raw:
            raise ViewError(f"{where}: missing {name!r}")
    for name in ("version-id", "timestamp-ms", "schema-id"):
        if not isinstance(raw[name], int) or isinstance(raw[name], bool):
            raise ViewError(f"{where}.{name}: an integer")
    if not isinstance(raw["summary"], dict) or not all(isinstance(v, str) for v in raw["summary"].values()):
        raise ViewError(f"{where}.summary: a map of strings")
    namespace = raw["default-namespace"]
    if not isinstance(namespace, list) or not all(isinstance(x, str) for x in namespace):
        raise ViewError(f"{where}.default-namespace: a list of strings")
    if raw.get("default-catalog") is not None and not isinstance(raw["default-catalog"], str):
        raise ViewError(f"{where}.default-catalog: a string")
    representations = raw["representations"]
    if not isinstance(representations, list) or not representations:
        raise ViewError(f"{where}.representations: at least one")
    dialects = set()
    for i, r in enumerate(representations):
        if not isinstance(r, dict) or r.get("type") != "sql" or not isinstance(r.get("sql"), str) \
                or not isinstance(r.get("dialect"), str):
            raise ViewError(f"{where}.representations[{i}]: {{type: sql, sql, dialect}} (strings)")
        dialect = r["dialect"].lower()
        if dialect in dialects:
            raise ViewError(f"{where}: more than one SQL for dialect {r['dialect']!r}")
        dialects.add(dialect)
    return raw


def _same_version(a: dict, b: dict) -> bool:
    keys = ("schema-id", "summary", "representations", "default-namespace", "default-catalog")
    return all(a.get(k) == b.get(k) for k in keys)


def _dialects(version: dict) -> set:
    return {r["dialect"].lower() for r in version["representations"]}


class _Commit:
    """What one commit's updates share: the ids they added last, the clock."""

    def __init__(self, timestamp_ms: int):
        self.timestamp_ms = timestamp_ms
        self.last_schema_id: int | None = None
        self.last_version_id: int | None = None


def _add_schema(m: dict, raw: dict, c: _Commit) -> None:
    schema = _schema(raw, "add-schema.schema")
    fields = lambda s: (s.get("fields"), s.get("identifier-field-ids", []))  # noqa: E731
    same = next((s for s in m["schemas"] if fields(s) == fields(schema)), None)
    if same is not None:
        c.last_schema_id = same["schema-id"]
        return
    new_id = max((s["schema-id"] for s in m["schemas"]), default=-1) + 1
    m["schemas"].append({**schema, "schema-id": new_id})
    c.last_schema_id = new_id


def _add_version(m: dict, raw: dict, c: _Commit) -> None:
    version = copy.deepcopy(check_version(raw, "add-view-version.view-version"))
    if version["schema-id"] == LAST_ADDED:
        if c.last_schema_id is None:
            raise ViewError("add-view-version: schema-id -1, but this commit added no schema")
        version["schema-id"] = c.last_schema_id
    if not any(s["schema-id"] == version["schema-id"] for s in m["schemas"]):
        raise ViewError(f"add-view-version: no schema with id {version['schema-id']}")
    same = next((v for v in m["versions"] if _same_version(v, version)), None)
    if same is not None:
        c.last_version_id = same["version-id"]
        return
    version["version-id"] = max((v["version-id"] for v in m["versions"]), default=0) + 1
    m["versions"].append(version)
    c.last_version_id = version["version-id"]


def _set_current(m: dict, version_id: int, c: _Commit) -> None:
    vid = c.last_version_id if version_id == LAST_ADDED else version_id
    if vid is None:
        raise ViewError("set-current-view-version -1: this commit added no version")
    new = next((v for v in m["versions"] if v["version-id"] == vid), None)
    if new is None:
        raise ViewError(f"set-current-view-version: no version with id {vid}")
    old = next((v for v in m["versions"] if v["version-id"] == m.get("current-version-id")), None)
    if old is not None and old is not new and m.get("properties", {}).get(DROP_DIALECT_PROPERTY, "false") != "true":
        lost = _dialects(old) - _dialects(new)
        if lost:
            raise ViewError(f"set-current-view-version: the new version drops dialect(s) {sorted(lost)} "
                            f"({DROP_DIALECT_PROPERTY}=false)")
    if m.get("current-version-id") != vid:
        m["current-version-id"] = vid
        m["version-log"].append({"timestamp-ms": new["timestamp-ms"], "version-id": vid})


def _string_map(raw: dict, key: str, action: str) -> dict:
    value = raw.get(key)
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ViewError(f"{action}: {key!r} a map of strings")
    return value


def apply_update(m: dict, raw: Any, c: _Commit) -> None:
    """One ViewUpdate applied to `m` in place (the caller works on a copy)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("action"), str):
        raise ViewError("a view update is an object with an 'action'")
    action = raw["action"]
    if action == "assign-uuid":
        if not isinstance(raw.get("uuid"), str) or (m.get("view-uuid") not in (None, raw["uuid"])):
            raise ViewError("assign-uuid: a view's uuid never changes")
        m["view-uuid"] = raw["uuid"]
    elif action == "upgrade-format-version":
        if raw.get("format-version") != FORMAT_VERSION:
            raise ViewError(f"upgrade-format-version: view format {raw.get('format-version')!r} (icefloe writes "
                            f"view format {FORMAT_VERSION} only)")
    elif action == "add-schema":
        _add_schema(m, raw.get("schema"), c)
    elif action == "set-location":
        if not isinstance(raw.get("location"), str) or raw["location"].rstrip("/") != m["location"]:
            raise ViewError(f"set-location: icefloe keeps a view at {m['location']}, where it was created")
    elif action == "set-properties":
        m["properties"].update(_string_map(raw, "updates", action))
    elif action == "remove-properties":
        removals = raw.get("removals")
        if not isinstance(removals, list) or not all(isinstance(k, str) for k in removals):
            raise ViewError("remove-properties: 'removals' a list of strings")
        for k in removals:
            m["properties"].pop(k, None)
    elif action == "add-view-version":
        _add_version(m, raw.get("view-version"), c)
    elif action == "set-current-view-version":
        vid = raw.get("view-version-id")
        if not isinstance(vid, int) or isinstance(vid, bool):
            raise ViewError("set-current-view-version: 'view-version-id' an integer")
        _set_current(m, vid, c)
    else:
        raise ViewError(f"Unknown view update action {action!r}")


def _retain(m: dict) -> None:
    try:
        keep_n = int(m["properties"].get(HISTORY_ENTRIES_PROPERTY, HISTORY_ENTRIES_DEFAULT))
    except ValueError:
        raise ViewError(f"{HISTORY_ENTRIES_PROPERTY}: an integer") from None
    if keep_n < 1:
        raise ViewError(f"{HISTORY_ENTRIES_PROPERTY}: at least 1")
    newest = sorted(m["versions"], key=lambda v: v["version-id"])[-keep_n:]
    kept = {v["version-id"] for v in newest} | {m["current-version-id"]}
    m["versions"] = [v for v in m["versions"] if v["version-id"] in kept]
    log = m["version-log"]
    cut = max((i + 1 for i, e in enumerate(log) if e["version-id"] not in kept), default=0)
    m["version-log"] = log[cut:]


def apply_updates(base: dict, updates: list, timestamp_ms: int) -> dict:
    """The new view document: `base` with the updates applied in order, then trimmed."""
    if not isinstance(updates, list):
        raise ViewError("updates: a list")
    m = copy.deepcopy(base)
    m.setdefault("properties", {})
    c = _Commit(timestamp_ms)
    for raw in updates:
        apply_update(m, raw, c)
    if m.get("current-version-id") is None:
        raise ViewError("a view needs a current version (add-view-version, set-current-view-version)")
    _retain(m)
    return m


def new_view(view_uuid: str, location: str, schema: Any, version: Any, properties: dict,
             timestamp_ms: int) -> dict:
    """A CreateViewRequest's view: its schema (id 0) and version (id 1, on that schema)."""
    base = {"view-uuid": view_uuid, "format-version": FORMAT_VERSION, "location": location, "schemas": [],
            "current-version-id": None, "versions": [], "version-log": [], "properties": dict(properties)}
    check_version(version)
    return apply_updates(base, [{"action": "add-schema", "schema": schema},
                                {"action": "add-view-version", "view-version": {**version, "schema-id": LAST_ADDED}},
                                {"action": "set-current-view-version", "view-version-id": LAST_ADDED}],
                         timestamp_ms)


def first_failure(requirements: Any, view: dict) -> str | None:
    """Why a CommitViewRequest's requirements do not hold of `view` (None when they do)."""
    if not isinstance(requirements, list):
        raise ViewError("requirements: a list")
    for raw in requirements:
        if not isinstance(raw, dict) or raw.get("type") != "assert-view-uuid":
            raise ViewError(f"Unknown view requirement {raw!r:.80}: assert-view-uuid is the only one")
        if raw.get("uuid") != view["view-uuid"]:
            return f"Requirement failed: view UUID does not match: expected {view['view-uuid']} != {raw.get('uuid')}"
    return None


def check_document(view: Any, where: str) -> dict:
    """A view metadata file read back (register-view, load): the spec's required fields."""
    if not isinstance(view, dict):
        raise ViewError(f"{where}: not a view metadata object")
    for name in ("view-uuid", "format-version", "location", "schemas", "current-version-id", "versions",
                 "version-log"):
        if name not in view:
            raise ViewError(f"{where}: missing {name!r}")
    if view["format-version"] != FORMAT_VERSION:
        raise ViewError(f"{where}: view format-version {view['format-version']!r}")
    if not any(v.get("version-id") == view["current-version-id"] for v in view["versions"]):
        raise ViewError(f"{where}: current-version-id {view['current-version-id']} names no version")
    return view
