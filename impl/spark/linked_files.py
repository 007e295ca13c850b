"""Constants per data file in one Spark Parquet scan, as partition values of links
(docs/spark.md "Merge-on-read speed"): the merge-on-read (native_read.py) needs, per row,
its file's number in the read and the bounds of its file's words in the bitset of deleted
positions (native_dvs.py), and nothing Spark offers gives a row its file without building
the `_metadata` struct per row (~60 ms per 10^7 rows; a CASE over the files' sizes or
paths on top).

Spark's Parquet scan fills partition columns from the directory names under `basePath`,
once per batch, as constant column vectors: a column read like any other. So each data
file is read through a symbolic link at

    <links root>/__icefloe_idx=<k>/__icefloe_word=<w>/__icefloe_rows=<n>/<sha1 of the path>.parquet

whose partition values are that file's constants. The links live in one directory per
Spark application under the driver's temporary directory, or under the session's
`spark.icefloe.linksDir` (a directory the executors see; local files only, as the native
read is: `_check_local`); they are made on the driver, never inside a table's location,
reused by reads that ask for the same constants, and the directory is removed when the
Python process exits (shutil.rmtree removes links, never what they point at). Spark
stat()s a link as its target (its size and splits are the file's: tests/spark
test_spark_mor_read.py reads multi-row-group files split across partitions).
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading

from icefloe.impl.io.locations import canonical_location, local_path
from icefloe.impl.spark.transforms_sql import NotNative

LINKS_DIR_CONF = "spark.icefloe.linksDir"  # where the links root is made (a directory the executors see); default: the temp dir
_ROOTS: dict[str, str] = {}  # Spark application id -> its links root
_LOCK = threading.Lock()


def _root(spark) -> str:
    key = spark.sparkContext.applicationId
    with _LOCK:
        if key not in _ROOTS:
            _ROOTS[key] = tempfile.mkdtemp(prefix="icefloe-links-", dir=spark.conf.get(LINKS_DIR_CONF, None))
            atexit.register(remove, _ROOTS[key])
        return _ROOTS[key]


def remove(root: str) -> None:
    """The links root `root` and the links in it, never what they point at (rmtree unlinks a
    symbolic link, it does not follow it)."""
    shutil.rmtree(root, ignore_errors=True)


def _link(target: str, where: str) -> None:
    """A symbolic link `where` -> `target`, made once: a link already there must point at it."""
    try:
        os.symlink(target, where)
    except FileExistsError:
        if os.readlink(where) != target:
            raise RuntimeError(f"icefloe: link {where} points at {os.readlink(where)}, not {target}") from None


def linked(spark, paths: list[str], constants: list[dict[str, int]]) -> tuple[list[str], str]:
    """The link of each local data file `paths[k]` under a directory naming its
    `constants[k]` (column -> int, the same columns for every file, in that order), and
    the links root to pass as the scan's `basePath`."""
    root = _root(spark)
    links = []
    for path, values in zip(paths, constants, strict=True):
        folder = os.path.join(root, *(f"{name}={int(value)}" for name, value in values.items()))
        target = os.path.abspath(local_path(path))
        where = os.path.join(folder, hashlib.sha1(canonical_location(path).encode()).hexdigest() + ".parquet")
        try:
            os.makedirs(folder, exist_ok=True)
            _link(target, where)
        except OSError as e:  # (read() then falls back to the Python data source)
            raise NotNative(f"the merge-on-read's links cannot be made under {root} ({e}); name a directory "
                            f"where they can in the session's {LINKS_DIR_CONF}, or read with format('icefloe')") from None
        links.append(where)
    return links, root
