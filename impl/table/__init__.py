"""icefloe.impl.table: tables, the commit protocol and table operations
(spec/PROTOCOL.md sections 5-12).

- `env`: injected clock, sleep and random source; object names (1.4);
- `validation`: the validations, each a small checker (7);
- `updates`: actions, pure functions TableMetadata -> TableMetadata (7.3);
- `commit`: `PendingCommit`, the phase-steppable commit loop (5, 6, 9);
- `producer`: snapshot-producing operations (append, overwrite, delete, rewrite, row delta);
- `operations`: the rest of the operations (refs, rollback, properties, expiry);
- `maintenance`: expiry cleanup and orphan removal (11, 12);
- `scan`, `deletes`: reading a snapshot, merge-on-read (10);
- `table`: the `Table` handle and `create_table`.
"""

from icefloe.impl.table.commit import PendingCommit, RetryPolicy, resolve_unknown
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import Table, create_table

__all__ = ["Table", "create_table", "Env", "PendingCommit", "RetryPolicy", "resolve_unknown"]
