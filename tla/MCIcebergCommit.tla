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
AllFaults == FaultKinds
NoFaults == {}

\* A type invariant: every variable keeps the shape model/state.py gives it.
\* Checked by the correct configurations only (it cannot catch a flawed variant).
SnapIds == Nat \X Nat
MetaIds == Nat \X Nat \X Nat
ObjIds == {"d", "m", "l", "j"} \X Nat \X Nat \X Nat
Phases == {"plan", "data", "manifests", "list", "metadata", "swap", "rename", "retry",
           "unknown", "done"}
Results == {"pending", "committed", "conflict", "unknown", "crashed", "noop"}
SnapRec == [id : SnapIds, parent : SnapIds, files : SUBSET SnapIds,
            mlist : ObjIds, manifests : SUBSET ObjIds]
OpRec == [kind : OpKinds, start : SnapIds, files : SUBSET SnapIds, target : SnapIds]
MetaRec == [prev : MetaIds, head : SnapIds, snaps : SUBSET SnapRec, op : OpRec]
WriterRec == [k : 1..(Ops + 1), kind : OpKinds \cup {""}, phase : Phases,
              attempt : 0..AttemptsMax, base : MetaIds, start : SnapIds,
              files : SUBSET SnapIds, target : SnapIds, unknowns : SUBSET MetaIds,
              lone : BOOLEAN, healed : BOOLEAN]
OutcomeRec == [res : Results, lone : BOOLEAN, healed : BOOLEAN]

TypeOK ==
    /\ cat \in DOMAIN metas
    /\ \A m \in DOMAIN metas : m \in MetaIds /\ metas[m] \in MetaRec
    /\ store \subseteq ObjIds
    /\ \A f \in DOMAIN content : f \in SnapIds /\ content[f] \subseteq SnapIds
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
