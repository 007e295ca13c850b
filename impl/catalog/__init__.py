"""icefloe.impl.catalog: catalogs (spec/PROTOCOL.md, "The catalog's swap").

- `base`: the Catalog protocol, TableIdentifier, typed catalog errors;
- `memory.MemoryCatalog`: in-memory, with lost-acknowledgement and delayed-swap hooks;
- `sql.SqlCatalog`: the Iceberg JDBC catalog's tables on SQLite (pyiceberg-compatible).
"""
