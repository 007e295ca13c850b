"""icefloe.impl.serve: `icefloe serve`, an Iceberg REST catalog server (the REST catalog
OpenAPI spec, open-api/rest-catalog-open-api.yaml; spec/PROTOCOL.md 3 "The catalog's swap",
9 "Commit outcomes").

- `errors`: the ErrorModel responses and how an outcome maps to a status (409 only when
  nothing was applied, 500 when the outcome is unknown, never a 4xx for an unknown state);
- `models`: the request bodies (pydantic);
- `requirements`, `updates`: the commit endpoint's TableRequirements and TableUpdates as
  checks and pure functions over icefloe's TableMetadata;
- `store`: namespaces, tables and the atomic multi-table swap with its Idempotency-Key,
  per catalog kind (`sql_store`: one transaction in the Iceberg JDBC tables); `records`:
  what both stores share (a pointer move, a key's record), one floor below them;
- `service`: the catalog operations, independent of HTTP; `commit`: the commit endpoint;
- `app`: the Starlette application; `cli`: `icefloe serve`.
"""
