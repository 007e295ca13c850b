"""`icefloe add-files TABLE FILE...`: commit Parquet files that already exist, where they
are, as one append snapshot (impl/table/add_files.py): files without Iceberg field ids
are resolved by name through the table's name mapping, which the commit sets."""
from __future__ import annotations

from icefloe.impl.cli.common import MAIN_BRANCH, S3_SCHEMES, UsageError, add_command, open_table, report


def _location(text: str) -> str:
    from pathlib import Path

    from icefloe.impl.io.locations import canonical_location
    if text.startswith(("file:", *S3_SCHEMES)):
        return canonical_location(text)
    path = Path(text)
    if not path.is_file():
        raise UsageError(f"{text}: no such file")
    return canonical_location("file://" + str(path.resolve()))


def cmd_add_files(args) -> int:
    from icefloe.impl.table.add_files import AddFiles, FileDoesNotFit, describe_file
    table = open_table(args)
    ref = table.metadata.refs.get(args.branch)
    if args.branch != MAIN_BRANCH and (ref is None or ref.type != "branch"):
        raise UsageError(f"no branch {args.branch!r}")
    locations = [_location(f) for f in args.files]
    if len(set(locations)) != len(locations):
        raise UsageError("a file is named twice")
    files, mapped = [], False
    for location in locations:
        try:
            data_file, needs_mapping = describe_file(table.io.get(location), location, table.metadata)
        except FileDoesNotFit as e:
            raise UsageError(f"{e} (nothing was committed)") from None
        files.append(data_file)
        mapped |= needs_mapping
    commit = table.begin(AddFiles(files, mapped, table.metadata, args.branch))
    try:
        commit.run()
    except FileDoesNotFit as e:
        raise UsageError(f"{e} (nothing was committed)") from None
    outcome = table.adopt(commit)
    rows = sum(f.record_count for f in files)
    return report(outcome, f"{len(files)} existing file(s), {rows} row(s) added"
                  + ("; name mapping set (files without field ids)" if mapped else ""))


def register(sub) -> None:
    p = add_command(sub, "add-files", "commit existing Parquet files (not copied) as an append", """
        Add Parquet files that already exist to the table as one append snapshot, where
        they are (local paths or s3:// URIs; nothing is copied or rewritten). A file
        written without Iceberg field ids (pandas, DuckDB, any Parquet writer) is read by
        its column names through the table's name mapping (schema.name-mapping.default),
        which the commit sets or extends. Refused, naming the file, with nothing
        committed: a column the table lacks, a type its column cannot read exactly, a
        required column missing or with nulls, nested columns without field ids, rows of
        more than one partition, a file already in the table. The files then belong to the
        table: expire and orphan removal delete them only inside the table's location.""", """
        icefloe add-files db.events exports/2024-06-01.parquet exports/2024-06-02.parquet
        icefloe add-files db.events s3://bucket/landing/part-0001.parquet --branch audit""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("files", nargs="+", metavar="FILE", help="Parquet files (paths or URIs)")
    p.add_argument("--branch", default=MAIN_BRANCH, help="the branch to commit to (default main)")
    p.set_defaults(fn=cmd_add_files)
