-------------------------- MODULE MCIcebergCommit --------------------------
(***************************************************************************)
(* Model-checking-only definitions for the configurations in this folder   *)
(* (tla/README.md lists them with their expected results). The protocol    *)
(* and its properties are in IcebergCommit; nothing here changes them.     *)
(***************************************************************************)
EXTENDS IcebergCommit

\* Values a .cfg file cannot write literally (it has no "..").
OneWriter == 1..1
TwoWriters == 1..2
ThreeWriters == 1..3
AllKinds == OpKinds
\* The six kinds of the single-partition model without deletes or refs.
ClassicKinds == {"append", "overwrite", "delete", "rewrite", "rollback", "expire"}
AllFaults == FaultKinds
NoFaults == {}
\* Orphan removal by age on (OrphanAge <- OrphanAgeOn).
OrphanAgeOn == TRUE

\* A type invariant: every variable keeps the shape model/state.py gives it.
\* Checked by the correct configurations only (it cannot catch a flawed variant).
SnapIds == Nat \X Nat
MetaIds == Nat \X Nat \X Nat
ObjIds == {"d", "x", "m", "l", "j"} \X Nat \X Nat \X Nat
Phases == {"plan", "data", "manifests", "list", "metadata", "swap", "rename", "retry",
           "resolve", "done"}
Results == {"pending", "committed", "conflict", "unknown", "crashed", "noop"}
PartIds == 0..Partitions
\* A row: a SnapId, or a cdc_update's first version <<w, k, 0>>.
RowIds == SnapIds \cup (Nat \X Nat \X {0})
Rows == {NO_ROW} \cup (SnapIds \X RowIds)
IsFunctionInto(f, dom, codom) == DOMAIN f \subseteq dom /\ \A x \in DOMAIN f : f[x] \in codom
SnapOK(x) ==
    /\ x.id \in SnapIds /\ x.parent \in SnapIds /\ x.files \subseteq SnapIds
    /\ x.mlist \in ObjIds /\ x.manifests \subseteq ObjIds /\ x.seq \in Nat
    /\ x.deletes \subseteq SnapIds /\ DOMAIN x.dseq = x.files \cup x.deletes
    /\ \A f \in DOMAIN x.dseq : x.dseq[f] \in 1..x.seq
OpRec == [kind : OpKinds, start : SnapIds, files : SUBSET SnapIds, target : SnapIds,
          part : PartIds, ref : RefNames, row : Rows]
MetaOK(m) ==
    /\ m.prev \in MetaIds /\ m.head \in SnapIds /\ \A x \in m.snaps : SnapOK(x)
    /\ m.op \in OpRec /\ m.last_seq \in Nat
    /\ IsFunctionInto(m.refs, {"b", "t"}, SnapIds)
WriterRec == [k : 1..(Ops + 1), kind : OpKinds \cup {""}, phase : Phases,
              attempt : 0..AttemptsMax, base : MetaIds, start : SnapIds,
              files : SUBSET SnapIds, target : SnapIds, unknowns : SUBSET MetaIds,
              lone : BOOLEAN, healed : BOOLEAN, part : PartIds, ref : RefNames, row : Rows,
              mseq : Nat]
OutcomeRec == [res : Results, lone : BOOLEAN, healed : BOOLEAN, spurious : BOOLEAN]
DelRec == [kind : {"position", "equality"}, part : 1..Partitions, targets : SUBSET (SnapIds \X RowIds)]

TypeOK ==
    /\ cat \in DOMAIN metas
    /\ \A m \in DOMAIN metas : m \in MetaIds /\ MetaOK(metas[m])
    /\ store \subseteq ObjIds
    /\ aged \subseteq ObjIds
    /\ IsFunctionInto(content, SnapIds, SUBSET RowIds)
    /\ DOMAIN parts = DOMAIN content /\ IsFunctionInto(parts, SnapIds, 1..Partitions)
    /\ IsFunctionInto(dels, SnapIds, DelRec)
    /\ inflight \subseteq Writers \X MetaIds \X MetaIds
    /\ writers \in [Writers -> WriterRec]
    /\ faultsOn \in BOOLEAN
    /\ faultsUsed \in 0..FaultBudget
    /\ orphanRuns \in 0..OrphanRunsMax
    /\ \A i \in DOMAIN hist : hist[i] \in DOMAIN metas
    /\ acked \subseteq DOMAIN metas
    /\ outcomes \in [Writers -> [1..Ops -> OutcomeRec]]
    /\ deleted \subseteq ObjIds
    /\ consumed \subseteq SnapIds
    /\ readerAt \in SnapIds
=============================================================================
