------------------------------ MODULE MCIcebergV3 ------------------------------
(***************************************************************************)
(* Model-checking-only definitions for the MCIcebergV3_*.cfg files; their  *)
(* expected results are in tla/expected.json. The protocol and its         *)
(* properties are in IcebergV3; nothing here changes them.                 *)
(*                                                                         *)
(*   correct (TLC = explorer, state sets equal):                           *)
(*     MCIcebergV3_conflict.cfg      56,807 states, depth 30               *)
(*     MCIcebergV3_merge.cfg         70,923 states, depth 30 (deep)        *)
(*     MCIcebergV3_merge_small.cfg    2,513 states, depth 18               *)
(*     MCIcebergV3_cow_update.cfg     2,228 states, depth 21               *)
(*     MCIcebergV3_window.cfg         7,384 states, depth 22               *)
(*     MCIcebergV3_upgraded.cfg       1,563 states, depth 17               *)
(*     MCIcebergV3_upgraded_merge.cfg   133 states, depth 13               *)
(*   flawed (exit 12, the invariant named):                                *)
(*     MCIcebergV3_stale_first_row_id_on_retry.cfg  RowIdsUnique           *)
(*     MCIcebergV3_replacement_dv_keeps_old.cfg     OneLiveDV              *)
(*     MCIcebergV3_dv_validation_over_window.cfg    NoSpuriousConflict     *)
(*     MCIcebergV3_merge_over_overwrite_dv.cfg      Isolation              *)
(*     MCIcebergV3_dv_seeded_from_start.cfg         DeletedRowsStayDeleted *)
(*     MCIcebergV3_dv_ignores_position_deletes.cfg  DeletedRowsStayDeleted *)
(*                                                                         *)
(* Run one: .venv/bin/python tests/tla/tlc.py MCIcebergV3_conflict.cfg     *)
(*          --module MCIcebergV3.tla --workers 1                           *)
(***************************************************************************)
EXTENDS IcebergV3

\* Roles a .cfg file cannot write literally (sequences): one operation kind per writer.
\* The v3 instance of issue 30: two DV writers, a compaction and an appender.
DvWritersCompactionAppender == <<"row_delete", "row_delete", "rewrite", "append">>
\* Copy-on-write and a merge-on-read update keep row ids; an append takes new ones.
CowUpdateAppend == <<"cow_delete", "row_update", "append">>
\* apache/iceberg #17764: a compaction of one file while DVs on the other replace each other.
DvWritersCompaction == <<"row_delete", "row_delete", "rewrite">>
\* Under the merge policy: two pure deletes may merge; the update's DV never merges.
DeleteUpdateDelete == <<"row_delete", "row_update", "row_delete">>
TwoAppends == <<"append", "append">>
TwoDeletes == <<"row_delete", "row_delete">>
DeleteAndUpdate == <<"row_delete", "row_update">>
\* An upgraded table (position delete files): DVs must merge them; a compaction drops them.
DeleteUpdateRewrite == <<"row_delete", "row_update", "rewrite">>
OneDelete == <<"row_delete">>

\* A type invariant: every variable keeps the shape model/v3.py gives it.
Ids == Nat \X Nat \X Nat
FileIds == Nat \X Nat
Kinds == {"append", "rewrite", "row_delete", "row_update", "cow_delete"}
IsFunctionInto(f, dom, codom) == DOMAIN f \subseteq dom /\ \A x \in DOMAIN f : f[x] \in codom
DVOK(d) == d.id \in Ids /\ d.file \in FileIds /\ d.positions \subseteq 1..4
PosDeleteOK(d) == d.file \in FileIds /\ d.positions \subseteq 1..4
MetaOK(m) ==
    /\ m.prev \in Ids /\ IsFunctionInto(m.files, FileIds, Nat \cup {NO_ID}) /\ \A d \in m.dvs : DVOK(d)
    /\ \A d \in m.pos_deletes : PosDeleteOK(d)
    /\ m.next_row_id \in Nat /\ m.op.kind \in Kinds /\ m.op.start \in Ids
TypeOK ==
    /\ cat \in DOMAIN metas
    /\ \A m \in DOMAIN metas : m \in Ids /\ MetaOK(metas[m])
    /\ \A f \in DOMAIN content : f \in FileIds /\ \A i \in 1..Len(content[f]) :
           content[f][i].key \in Ids /\ content[f][i].id \in Nat \cup {NO_ID}
    /\ \A w \in Writers : writers[w].kind = Roles[w] /\ writers[w].attempt \in 0..AttemptsMax
    /\ \A i \in 1..Len(hist) : hist[i] \in DOMAIN metas
    /\ \A w \in Writers : outcomes[w].res \in {"pending", "committed", "conflict", "noop"}
=============================================================================
