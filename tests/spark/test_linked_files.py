"""The links that give a Spark scan each data file's constants as partition values
(impl/spark/linked_files.py; docs/spark.md "Merge-on-read speed")."""
from __future__ import annotations

import os

import pytest

import icefloe.impl.spark.linked_files as LF


def test_links_name_their_constants_outside_the_table_and_are_reused(spark, tmp_path, monkeypatch):
    """Goal: each file's link lies under the application's links root (never in the
    table's location), in directories `name=value` in the order given, points at the file;
    asking again for the same constants gives the same link, and a link already there that
    points elsewhere is an error, never silently reused; removing the root leaves the data
    files. Method: two files with a `+` and a space in their folder, a root of this test's
    own for this application."""
    table = tmp_path / "wh" / "t x+y" / "data"
    table.mkdir(parents=True)
    files = []
    for name in ("a.parquet", "b.parquet"):
        (table / name).write_bytes(b"PAR1")
        files.append(f"file://{table / name}")
    root = tmp_path / "links"
    root.mkdir()
    monkeypatch.setitem(LF._ROOTS, spark.sparkContext.applicationId, str(root))
    constants = [{"__icefloe_idx": 0, "__icefloe_word": 1}, {"__icefloe_idx": 1, "__icefloe_word": 0}]
    links, base = LF.linked(spark, files, constants)
    assert base == str(root)
    for link, path, values in zip(links, files, constants):
        assert os.path.realpath(link) == str((table / os.path.basename(path)).resolve())
        relative = os.path.relpath(os.path.dirname(link), root).split(os.sep)
        assert relative == [f"{k}={v}" for k, v in values.items()]
        assert not link.startswith(str(tmp_path / "wh"))
    assert LF.linked(spark, files, constants) == (links, base)
    os.unlink(links[0])
    os.symlink(str(table / "b.parquet"), links[0])  # the first file's link, now to another file
    with pytest.raises(RuntimeError, match="points at"):
        LF.linked(spark, files, constants)
    LF.remove(str(root))
    assert not root.exists() and all((table / n).read_bytes() == b"PAR1" for n in ("a.parquet", "b.parquet"))


def test_the_links_root_is_made_where_the_session_says(spark, tmp_path, monkeypatch):
    """Goal: a session naming `spark.icefloe.linksDir` (a directory its executors see) gets
    its links root there, not in the driver's temporary directory. Method: a fresh table
    of roots, the conf set, one link made."""
    monkeypatch.setattr(LF, "_ROOTS", {})
    shared = tmp_path / "shared"
    shared.mkdir()
    (tmp_path / "f.parquet").write_bytes(b"PAR1")
    spark.conf.set(LF.LINKS_DIR_CONF, str(shared))
    try:
        links, base = LF.linked(spark, [f"file://{tmp_path / 'f.parquet'}"], [{"__icefloe_idx": 0}])
    finally:
        spark.conf.unset(LF.LINKS_DIR_CONF)
    assert os.path.dirname(base) == str(shared) and links[0].startswith(base + os.sep)
    LF.remove(base)


def test_links_that_cannot_be_made_are_not_native(spark, tmp_path, monkeypatch):
    """Goal: where the links cannot be made (a file system without symbolic links, a
    directory not writable), linked() says so as NotNative naming the conf to set, so that
    `read()` falls back to the Python data source (test_spark_mor_read.py). Method: os.symlink made
    to fail with PermissionError."""
    from icefloe.impl.spark.transforms_sql import NotNative
    monkeypatch.setattr(LF, "_ROOTS", {})
    (tmp_path / "f.parquet").write_bytes(b"PAR1")

    def refused(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(LF.os, "symlink", refused)
    with pytest.raises(NotNative, match=LF.LINKS_DIR_CONF.replace(".", r"\.")):
        LF.linked(spark, [f"file://{tmp_path / 'f.parquet'}"], [{"__icefloe_idx": 0}])
    LF.remove(next(iter(LF._ROOTS.values())))
