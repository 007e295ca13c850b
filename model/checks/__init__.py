"""The properties of spec/PROPERTIES.md as checks.

- `checks.iceberg`: the Iceberg model's safety (P1-P10, and L3, checked in every state)
  and final-state (L1, L2) checks,
  re-exported here (`SAFETY_CHECKS`, `TERMINAL_CHECKS`, `HISTORY_CHECKS`, `history_key`);
- `checks.liveness`: the final-state forms of L1/L2 every model shares;
- `checks.history`: the history checker, which judges a recorded history of any engine
  (no model needed).
Hive's and Hudi's checks live in their model modules (model/hive.py, model/hudi.py).
"""
from icefloe.model.checks.iceberg import (  # noqa: F401 - the package's interface
    HISTORY_CHECKS, SAFETY_CHECKS, TERMINAL_CHECKS, check_cleanup_safe, check_incremental_complete,
    check_isolation, check_linear_history, check_lone_writer_commits, check_no_dangling_refs,
    check_no_duplicate_commit, check_no_lost_commit, check_no_spurious_conflict, check_operations_terminate,
    check_readers_see_committed, check_time_travel_immutable, check_validation_sound, history_key,
)
from icefloe.model.checks.liveness import lone_not_committed, pending_operation  # noqa: F401
