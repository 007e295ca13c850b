"""A swap as a REST commit request (REST spec: CommitTableRequest, TableRequirement,
TableUpdate; spec/PROTOCOL.md 3 "The catalog's swap"; TLA+ `Swap`).

icefloe's commit loop writes the next version itself and asks the catalog to move the
pointer from `expected` to it. A REST catalog has no such call: it takes requirements and
updates and writes its own version. `commit_request(base, attempt)` turns the two metadata
documents (their JSON, as stored) into that request:

- updates: what `attempt` changed of `base`, action by action (snapshots added and
  removed, refs set and removed, schemas, specs and sort orders added and made current,
  properties set and removed, the format version);
- requirements: the table's uuid, the head of EVERY ref of `base` (and the absence of
  refs the attempt creates), and the schema, spec and sort-order ids. Stricter than
  Iceberg-Java's (which asserts the refs it changes): the server then applies the updates
  to a version that differs from `base` at most in properties or in snapshots no ref
  names, so what the loop validated against `base` still holds where it lands, and a
  request held up in the network cannot land once any ref has moved on.

The request is a pure function of the two documents, so anyone holding the attempt's
file (whose metadata log names its base) can rebuild it, byte for byte, to replay it.
"""
from __future__ import annotations

from icefloe.impl.outcomes import InvalidArgument

REF_RETENTION = ("min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms")
# Top-level fields every version rewrites (or the server maintains): not a change to send.
MAINTAINED = {"last-updated-ms", "metadata-log", "snapshot-log", "current-snapshot-id", "last-sequence-number",
              "last-column-id", "last-partition-id", "snapshots", "refs", "schemas", "current-schema-id",
              "partition-specs", "default-spec-id", "sort-orders", "default-sort-order-id", "properties",
              "format-version", "table-uuid", "location", "schema", "partition-spec"}
LAST_ADDED = -1


class UnsupportedChange(InvalidArgument):
    """The attempt changes something this client cannot express as REST updates."""


def _by_id(items, key: str) -> dict:
    return {item[key]: item for item in items or ()}


def requirements(base: dict, attempt: dict) -> list[dict]:
    out = [{"type": "assert-table-uuid", "uuid": base["table-uuid"]}]
    refs = base.get("refs") or {}
    for name in sorted(set(refs) | set(attempt.get("refs") or {})):
        out.append({"type": "assert-ref-snapshot-id", "ref": name,
                    "snapshot-id": refs[name]["snapshot-id"] if name in refs else None})
    out += [{"type": "assert-current-schema-id", "current-schema-id": base["current-schema-id"]},
            {"type": "assert-last-assigned-field-id", "last-assigned-field-id": base["last-column-id"]},
            {"type": "assert-default-spec-id", "default-spec-id": base["default-spec-id"]},
            {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": base["last-partition-id"]},
            {"type": "assert-default-sort-order-id", "default-sort-order-id": base.get("default-sort-order-id", 0)}]
    return out


def _added_and_current(base: dict, attempt: dict, items: str, key: str, current: str,
                       add: str, field: str, set_current: str, current_field: str) -> list[dict]:
    """add-X for each X the attempt adds; set-current/default for a changed current id
    (-1 when it is one of those added: the server assigns the added ids)."""
    old, new = _by_id(base.get(items), key), _by_id(attempt.get(items), key)
    out = [{"action": add, field: item} for i, item in new.items() if i not in old]
    if attempt.get(current) != base.get(current):
        target = attempt.get(current)
        out.append({"action": set_current, current_field: LAST_ADDED if target not in old else target})
    return out


def _ref_update(name: str, ref: dict) -> dict:
    update = {"action": "set-snapshot-ref", "ref-name": name, "type": ref.get("type", "branch"),
              "snapshot-id": ref["snapshot-id"]}
    update.update({k: ref[k] for k in REF_RETENTION if ref.get(k) is not None})
    return update


def updates(base: dict, attempt: dict) -> list[dict]:
    if attempt.get("table-uuid") != base.get("table-uuid"):
        raise UnsupportedChange("an attempt of another table (its table-uuid differs from its base's)")
    unexpressed = sorted(k for k in set(base) | set(attempt)
                         if k not in MAINTAINED and (base.get(k) or None) != (attempt.get(k) or None))
    if unexpressed:
        raise UnsupportedChange(f"changes to {', '.join(unexpressed)} cannot be sent as REST updates by icefloe")
    out = []
    if attempt["format-version"] != base["format-version"]:
        out.append({"action": "upgrade-format-version", "format-version": attempt["format-version"]})
    out += _added_and_current(base, attempt, "schemas", "schema-id", "current-schema-id",
                              "add-schema", "schema", "set-current-schema", "schema-id")
    out += _added_and_current(base, attempt, "partition-specs", "spec-id", "default-spec-id",
                              "add-spec", "spec", "set-default-spec", "spec-id")
    out += _added_and_current(base, attempt, "sort-orders", "order-id", "default-sort-order-id",
                              "add-sort-order", "sort-order", "set-default-sort-order", "sort-order-id")
    if attempt["location"] != base["location"]:
        out.append({"action": "set-location", "location": attempt["location"]})
    old_snaps, new_snaps = _by_id(base.get("snapshots"), "snapshot-id"), _by_id(attempt.get("snapshots"), "snapshot-id")
    out += [{"action": "add-snapshot", "snapshot": s} for i, s in new_snaps.items() if i not in old_snaps]
    changed = [i for i in old_snaps if i in new_snaps and old_snaps[i] != new_snaps[i]]
    if changed:
        raise UnsupportedChange(f"snapshots {changed} differ from the base's: a snapshot is never rewritten (1.5)")
    old_refs, new_refs = base.get("refs") or {}, attempt.get("refs") or {}
    out += [{"action": "remove-snapshot-ref", "ref-name": n} for n in sorted(old_refs) if n not in new_refs]
    out += [_ref_update(n, r) for n, r in sorted(new_refs.items()) if old_refs.get(n) != r]
    removed = sorted(i for i in old_snaps if i not in new_snaps)
    if removed:
        out.append({"action": "remove-snapshots", "snapshot-ids": removed})
    old_props, new_props = base.get("properties") or {}, attempt.get("properties") or {}
    gone = sorted(k for k in old_props if k not in new_props)
    if gone:
        out.append({"action": "remove-properties", "removals": gone})
    set_props = {k: v for k, v in sorted(new_props.items()) if old_props.get(k) != v}
    if set_props:
        out.append({"action": "set-properties", "updates": set_props})
    return out


def commit_request(base: dict, attempt: dict, namespace: tuple, name: str) -> dict:
    """The CommitTableRequest that applies `attempt`'s changes of `base` only to `base`'s refs."""
    return {"identifier": {"namespace": list(namespace), "name": name},
            "requirements": requirements(base, attempt), "updates": updates(base, attempt)}
