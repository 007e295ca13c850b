"""Table administration: `rename`, `properties set|unset`, `register` (Iceberg spec "Table
Metadata Fields" properties; the REST spec's renameTable and registerTable). Each property change is one
metadata-only commit through the commit protocol; a register writes no file at all, it
points the catalog at a metadata file that exists.
"""
from __future__ import annotations

from icefloe.impl.cli.common import (
    EXIT_OK, UsageError, add_command, catalog, ensure_namespace, identifier, is_metadata_path, open_table, report,
)

# Properties a user does not set by hand: they say what the table is (spec "Table
# Metadata Fields"), and a change of them has its own command.
RESERVED_PROPERTIES = {"format-version": "icefloe upgrade", "uuid": None, "location": None,
                       "current-snapshot-id": "icefloe set-current / rollback"}
TWIN_SCAN_TABLES_MAX = 10_000   # tables read to find another that lives at the same location


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"{text!r}: expected KEY=VALUE")
    if key != key.strip():
        raise UsageError(f"{text!r}: the key has leading or trailing whitespace")
    return key, value


def _check_keys(keys) -> None:
    for key in keys:
        if key in RESERVED_PROPERTIES:
            how = RESERVED_PROPERTIES[key]
            raise UsageError(f"{key!r} is not a property a user sets: it is part of the table's metadata"
                             + (f" ({how} changes it)" if how else ""))


def cmd_properties(args) -> int:
    table = open_table(args)
    if args.action == "set":
        updates = dict(_pair(p) for p in args.pairs)
        _check_keys(updates)
        return report(table.set_properties(updates), f"set {', '.join(sorted(updates))}")
    keys = list(args.pairs)
    _check_keys(keys)
    missing = [k for k in keys if k not in table.metadata.properties]
    if missing and not args.if_exists:
        raise UsageError(f"no property {', '.join(map(repr, missing))} on {args.table} "
                         "(--if-exists: unset what is there, say nothing of the rest)")
    present = [k for k in keys if k in table.metadata.properties]
    if not present:
        print("nothing to do: no commit: none of those properties is set")
        return EXIT_OK
    return report(table.set_properties({}, present), f"unset {', '.join(sorted(present))}")


def _metadata_of(location: str):
    from icefloe.impl.cli.common import read_only
    try:
        return read_only(location)[1]
    except (OSError, ValueError) as e:
        raise UsageError(f"{location}: not a readable table metadata file ({type(e).__name__}: {e})") from None


def _twin(cat, metadata, store) -> str | None:
    """The name of a table of `cat` that lives at `metadata`'s location, if one does: a
    second name for one table would let a purge of either destroy the other (bug12)."""
    from icefloe.impl.format.metadata import from_json
    from icefloe.impl.io.locations import canonical_location
    wanted = canonical_location(metadata.location.rstrip("/"))
    if hasattr(cat, "table_locations"):
        pointers = cat.table_locations()
    elif hasattr(cat, "list_namespaces"):
        pointers = {}
        for ns in cat.list_namespaces():
            for ident in cat.list_tables(ns):
                pointers[str(ident)] = cat.load(ident)
                if len(pointers) > TWIN_SCAN_TABLES_MAX:
                    raise UsageError(f"more than {TWIN_SCAN_TABLES_MAX} tables: cannot check that no other table "
                                     "lives at this location")
    else:
        return None      # a REST catalog: its server refuses a second name for a live table itself
    for name, pointer in sorted(pointers.items()):
        try:
            other = from_json(store.get(pointer), pointer)
        except Exception:  # noqa: BLE001 - an unreadable neighbour is not this table
            continue
        if canonical_location(other.location.rstrip("/")) == wanted:
            return name
    return None


def cmd_register(args) -> int:
    from icefloe.impl.cli.common import S3_SCHEMES
    from icefloe.impl.io.locations import canonical_location
    from icefloe.impl.io.router import StoreRouter
    ident = identifier(args.table)
    if not is_metadata_path(args.metadata):
        raise UsageError(f"{args.metadata!r}: a metadata JSON file's path or URI (…/metadata/00003-….metadata.json)")
    location = args.metadata
    if not location.startswith(("file:", *S3_SCHEMES)):
        from pathlib import Path
        location = canonical_location("file://" + str(Path(location).resolve()))
    metadata = _metadata_of(location)
    cat = catalog(args)
    twin = _twin(cat, metadata, StoreRouter())
    if twin is not None:
        raise UsageError(f"table {twin} already lives at {metadata.location}: registering it again as {ident} would "
                         "give one table two names (a purge of either would destroy both)")
    ensure_namespace(cat, ident.namespace)
    cat.create(ident, location)
    print(f"registered {ident} -> {location} (format v{metadata.format_version}, "
          f"{len(metadata.snapshots)} snapshot(s))")
    return EXIT_OK


def cmd_rename(args) -> int:
    source, destination = identifier(args.table), identifier(args.new_name)
    cat = catalog(args)
    rename = getattr(cat, "rename", None)
    if rename is None:
        raise UsageError(f"rename is not supported by the {type(cat).__name__}: its pointer object cannot move "
                         "atomically, and two names for one table in between would let a purge of either "
                         "destroy both (register the metadata under the new name after dropping the old)")
    cat.load(source)                          # NoSuchTable, named, before anything changes
    ensure_namespace(cat, destination.namespace)
    rename(source, destination)
    print(f"renamed {source} to {destination} (its files stay at their location)")
    return EXIT_OK


def register(sub) -> None:
    p = add_command(sub, "rename", "rename a table (its files stay where they are)", """
        Give a table another name in the catalog, in one catalog transaction (SQL
        catalogs) or one REST call (renameTable); its files, metadata and history stay at
        their location, as in Iceberg. Refused: a new name already taken, and catalogs that
        cannot rename atomically (the S3 pointer catalog).""", """
        icefloe rename db.events db.events_2023
        icefloe rename db.events archive.events""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("new_name", help="namespace.table")
    p.set_defaults(fn=cmd_rename)

    p = add_command(sub, "properties", "set or unset table properties", """
        Change the table's properties in one metadata-only commit (no data is rewritten):
          set TABLE KEY=VALUE ...   add or replace each
          unset TABLE KEY ...       remove each (a key not set is refused unless --if-exists)
        Properties the reader or writer acts on include commit.retry.num-retries,
        write.target-file-size-bytes, history.expire.max-snapshot-age-ms and
        history.expire.min-snapshots-to-keep. format-version, uuid and location are the
        table's metadata, not properties, and are refused (icefloe upgrade changes the
        format version). `icefloe describe TABLE` lists the properties.""", """
        icefloe properties set db.events commit.retry.num-retries=8 owner=data-eng
        icefloe properties unset db.events owner
        icefloe properties unset db.events owner --if-exists""")
    p.add_argument("action", choices=("set", "unset"))
    p.add_argument("table", help="namespace.table")
    p.add_argument("pairs", nargs="+", metavar="KEY=VALUE|KEY", help="set: KEY=VALUE pairs; unset: keys")
    p.add_argument("--if-exists", action="store_true", help="unset: no error for a key that is not set")
    p.set_defaults(fn=cmd_properties)

    p = add_command(sub, "register", "add an existing table to the catalog by its metadata file", """
        Point the catalog at a table that already exists: its metadata JSON file (written
        by icefloe, Spark, pyiceberg, ...; local or s3://). No file is written or copied;
        the table's history is the file's. Refused: a file that is not readable table
        metadata, a name already taken, and a table another name of this catalog already
        points at (two names for one table would let a purge of one destroy the other).""", """
        icefloe register db.events_copy warehouse/db/events/metadata/00007-6a4e....metadata.json
        icefloe register db.events s3://bucket/wh/db/events/metadata/00012-....metadata.json""")
    p.add_argument("table", help="namespace.table: the name to register it under")
    p.add_argument("metadata", help="the table's metadata JSON file (path or URI)")
    p.set_defaults(fn=cmd_register)
