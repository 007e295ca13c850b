--------------------------- MODULE IcebergCommit ---------------------------
(***************************************************************************)
(* The Apache Iceberg commit protocol as a transition system.              *)
(*                                                                         *)
(* spec/PROTOCOL.md sections: 1 "The table as a tree of immutable files"  *)
(* (Values), 3 "The catalog's swap" (Swap, Deliver), 5 "Writer phases"    *)
(* (Begin .. WriteMetadata), 6 "Bounded retry" and 7 "Retry validation"        *)
(* (Retry, Resolve, Validate), 9 "Commit outcomes" (Finish, FinishFailed), *)
(* 10 "Readers" (MovePointer's incremental reader), 11 "Expiry", 12        *)
(* "Orphan removal", 13 "Faults", 14 "Negative controls" (Variant), 16     *)
(* "Bounds of the model" (the constants). spec/PROPERTIES.md: P1..P10      *)
(* (invariants) and L1, L2 (liveness).                                     *)
(*                                                                         *)
(* This module mirrors model/iceberg.py action for action and variable for *)
(* variable: the same names, the same ids (tuples of small integers derived *)
(* from writer, operation and attempt), the same branches in the same      *)
(* order. tests/tla/test_agreement.py checks that TLC and the Python       *)
(* explorer reach exactly the same set of states; docs/model-tla-mapping.md *)
(* documents the correspondence. When the two disagree, the Python model   *)
(* is the ground truth: fix this module (or fix a bug in both).            *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Writers,        \* 1..W; writer 0 is the bootstrap that created the table
    Ops,            \* operations per writer
    Kinds,          \* operation kinds writers may begin
    Faults,         \* fault kinds that may occur
    FaultBudget,    \* faults in all; once spent, faults have stopped (healed)
    AttemptsMax,    \* attempts per operation (commit.retry.num-retries + 1)
    IsolationLevel, \* "serializable" | "snapshot" (Python: Bounds.isolation;
                    \* renamed here because P6 is the definition Isolation)
    OrphanRunsMax,  \* orphan-removal runs
    Variant         \* "correct" or one of the Iceberg-shaped flawed variants

OpKinds == {"append", "overwrite", "delete", "rewrite", "rollback", "expire"}
FaultKinds == {"write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash"}
IcebergVariants == {"correct", "no-revalidate", "cleanup-after-unknown",
                    "rename-commit", "pointer-status-check", "no-lineage-check",
                    "expire-deleted-entries", "orphans-no-threshold"}

ASSUME /\ Writers = 1..Cardinality(Writers) /\ Writers # {}
       /\ Ops \in Nat \ {0} /\ AttemptsMax \in Nat \ {0}
       /\ Kinds \subseteq OpKinds /\ Kinds # {}
       /\ Faults \subseteq FaultKinds
       /\ FaultBudget \in Nat /\ OrphanRunsMax \in Nat
       /\ IsolationLevel \in {"serializable", "snapshot"}
       /\ Variant \in IcebergVariants

(***************************************************************************)
(* Protocol variables.                                                     *)
(***************************************************************************)
VARIABLES
    cat,        \* the catalog's pointer: a MetaId
    metas,      \* [MetaId -> Meta]: every metadata file ever written
    store,      \* set of ObjIds present in storage
    content,    \* [FileId -> set of row ids]: what each data file holds
    inflight,   \* delayed swap requests <<writer, expected MetaId, new MetaId>>
    writers,    \* [Writers -> Writer]
    faultsOn,   \* faults may still occur
    faultsUsed, \* faults spent from FaultBudget
    orphanRuns  \* orphan-removal runs so far

(***************************************************************************)
(* History (auxiliary) variables: written by the actions, read only by the *)
(* properties. They never enable or disable an action.                     *)
(***************************************************************************)
VARIABLES
    hist,       \* every value the pointer has taken, in order
    acked,      \* MetaIds acknowledged to their writer as committed
    outcomes,   \* [Writers -> [1..Ops -> Outcome]]
    deleted,    \* ObjIds ever deleted
    consumed,   \* SnapIds an incremental reader of main has consumed
    readerAt    \* that reader's position

protocolVars == <<cat, metas, store, content, inflight, writers, faultsOn,
                  faultsUsed, orphanRuns>>
historyVars == <<hist, acked, outcomes, deleted, consumed, readerAt>>
vars == <<protocolVars, historyVars>>

(***************************************************************************)
(* Values (model/state.py). Ids are sequences so that two runs taking the  *)
(* same steps reach equal states, here and in Python:                      *)
(*   SnapId = FileId = <<w, k>>, MetaId = <<w, k, attempt>>,               *)
(*   ObjId = <<kind, w, k, attempt>> with kind "d" data file, "m" manifest, *)
(*   "l" manifest list, "j" metadata JSON.                                  *)
(* Records: Snap [id, parent, files, mlist, manifests]; OpInfo [kind,      *)
(* start, files, target]; Meta [prev, head, snaps, op]; Writer [k, kind,   *)
(* phase, attempt, base, start, files, target, unknowns, lone, healed];    *)
(* Outcome [res, lone, healed].                                            *)
(***************************************************************************)
NO_SNAP == <<0, 0>>
NO_META == <<0, 0, 0>>
WritePhases == {"data", "manifests", "list", "metadata"}

DataObj(f) == <<"d", f[1], f[2], 0>>
MetaObj(m) == <<"j", m[1], m[2], m[3]>>

\* Objects a reader of snapshot x opens (manifest list, manifests, data files).
Reach(x) == {x.mlist} \cup x.manifests \cup {DataObj(f) : f \in x.files}

Ids(meta) == {x.id : x \in meta.snaps}
HasSnap(meta, sid) == sid \in Ids(meta)
\* Snapshot ids are unique within a committed version (P3), so CHOOSE picks the
\* one record Python's snap_of finds.
SnapOf(meta, sid) == CHOOSE x \in meta.snaps : x.id = sid
\* Python asserts the head is retained; an empty CHOOSE makes TLC stop likewise.
HeadSnap(meta) == SnapOf(meta, meta.head)
HeadFiles(meta) == IF HasSnap(meta, meta.head) THEN HeadSnap(meta).files ELSE {}

Range(s) == {s[i] : i \in DOMAIN s}
MinOf(S) == CHOOSE i \in S : \A j \in S : i <= j
\* The elements of s before the first occurrence of e (Python: s[:s.index(e)]).
Before(s, e) == SubSeq(s, 1, MinOf({i \in DOMAIN s : s[i] = e}) - 1)
\* Python orders FileIds as tuples: lexicographically.
MinFile(S) == CHOOSE f \in S : \A g \in S : f[1] < g[1] \/ (f[1] = g[1] /\ f[2] <= g[2])
\* f with key set to v (Python: mput on a sorted tuple of pairs).
Put(f, key, v) == (key :> v) @@ f

\* sid and its ancestors still retained in meta, newest first.
RECURSIVE AncestorsFrom(_, _, _)
AncestorsFrom(meta, sid, out) ==
    IF HasSnap(meta, sid) /\ sid \notin Range(out)
    THEN AncestorsFrom(meta, SnapOf(meta, sid).parent, Append(out, sid))
    ELSE out
Ancestors(meta, sid) == AncestorsFrom(meta, sid, <<>>)

\* m and every metadata version reachable from it through prev, newest first.
RECURSIVE ChainFrom(_, _, _)
ChainFrom(ms, m, out) ==
    IF m \in DOMAIN ms /\ m \notin Range(out)
    THEN ChainFrom(ms, ms[m].prev, Append(out, m))
    ELSE out
Chain(ms, m) == ChainFrom(ms, m, <<>>)

IdleWriter(k) ==
    [k |-> k, kind |-> "", phase |-> IF k <= Ops THEN "plan" ELSE "done",
     attempt |-> 0, base |-> NO_META, start |-> NO_SNAP, files |-> {},
     target |-> NO_SNAP, unknowns |-> {}, lone |-> FALSE, healed |-> FALSE]

Pending == [res |-> "pending", lone |-> FALSE, healed |-> FALSE]

(***************************************************************************)
(* The initial table: two appends by the bootstrap writer 0.               *)
(***************************************************************************)
Snap01 == [id |-> <<0, 1>>, parent |-> NO_SNAP, files |-> {<<0, 1>>},
           mlist |-> <<"l", 0, 1, 1>>, manifests |-> {<<"m", 0, 1, 0>>}]
Snap02 == [id |-> <<0, 2>>, parent |-> <<0, 1>>, files |-> {<<0, 1>>, <<0, 2>>},
           mlist |-> <<"l", 0, 2, 1>>,
           manifests |-> {<<"m", 0, 1, 0>>, <<"m", 0, 2, 0>>}]
Meta011 == [prev |-> NO_META, head |-> <<0, 1>>, snaps |-> {Snap01},
            op |-> [kind |-> "append", start |-> NO_SNAP, files |-> {}, target |-> NO_SNAP]]
Meta021 == [prev |-> <<0, 1, 1>>, head |-> <<0, 2>>, snaps |-> {Snap01, Snap02},
            op |-> [kind |-> "append", start |-> <<0, 1>>, files |-> {}, target |-> NO_SNAP]]

Init ==
    /\ cat = <<0, 2, 1>>
    /\ metas = (<<0, 1, 1>> :> Meta011) @@ (<<0, 2, 1>> :> Meta021)
    /\ store = {<<"d", 0, 1, 0>>, <<"d", 0, 2, 0>>, <<"m", 0, 1, 0>>, <<"m", 0, 2, 0>>,
                <<"l", 0, 1, 1>>, <<"l", 0, 2, 1>>, <<"j", 0, 1, 1>>, <<"j", 0, 2, 1>>}
    /\ content = (<<0, 1>> :> {<<0, 1>>}) @@ (<<0, 2>> :> {<<0, 2>>})
    /\ inflight = {}
    /\ writers = [w \in Writers |-> IdleWriter(1)]
    /\ faultsOn = (Faults # {} /\ FaultBudget > 0)
    /\ faultsUsed = 0
    /\ orphanRuns = 0
    /\ hist = <<<<0, 1, 1>>, <<0, 2, 1>>>>
    /\ acked = {}
    /\ outcomes = [w \in Writers |-> [k \in 1..Ops |-> Pending]]
    /\ deleted = {}
    /\ consumed = {<<0, 1>>, <<0, 2>>}
    /\ readerAt = <<0, 2>>

(***************************************************************************)
(* Action fragments shared by several actions. Each sets a fixed group of  *)
(* primed variables, named in its comment; the calling action leaves the   *)
(* rest UNCHANGED.                                                         *)
(***************************************************************************)
Current == metas[cat]

\* Everything operation (w, k) has written that is still in storage.
OpObjects(w, k) == {o \in store : o[2] = w /\ o[3] = k}

\* The newest version in the pointer's lineage written by operation (w, k),
\* or NO_META when none landed (Python: own_landed returns None).
OwnLanded(w, k) ==
    LET ch == Chain(metas, cat)
        idx == {i \in DOMAIN ch : ch[i][1] = w /\ ch[i][2] = k}
    IN IF idx = {} THEN NO_META ELSE ch[MinOf(idx)]

\* Sets outcomes, writers: the operation ends and the writer moves on.
\* wr is the writer record the outcome is taken from (Begin passes the
\* planned record of a no-op, which is not yet in writers).
Finish(w, wr, res) ==
    /\ Assert(outcomes[w][wr.k].res = "pending", <<"operation ended twice", w, wr.k>>)
    /\ outcomes' = [outcomes EXCEPT ![w][wr.k] =
                        [res |-> res, lone |-> wr.lone, healed |-> wr.healed]]
    /\ writers' = [writers EXCEPT ![w] = IdleWriter(wr.k + 1)]

\* Sets store, deleted.
DeleteObjects(objs) ==
    /\ store' = store \ objs
    /\ deleted' = deleted \cup (objs \cap store)

\* Sets store, deleted, outcomes, writers. The operation gives up; it cleans
\* up only when the failure is definite: no attempt landed, and no attempt of
\* unknown outcome can still land (its base is no longer the pointer, and
\* versions are never reused).
FinishFailed(w, wr) ==
    IF Variant # "pointer-status-check"
       /\ (cat \in wr.unknowns \/ OwnLanded(w, wr.k) # NO_META)
    THEN /\ Finish(w, wr, "unknown")
         /\ UNCHANGED <<store, deleted>>
    ELSE /\ DeleteObjects(OpObjects(w, wr.k))
         /\ Finish(w, wr, "conflict")

\* Sets cat, hist, consumed, readerAt. The pointer takes a new value and the
\* incremental reader of main polls: it consumes main's ancestry down to where
\* it was, if it is still an ancestor (otherwise main was rolled back past it).
MovePointer(new) ==
    LET meta == metas[new]
        line == Ancestors(meta, meta.head)
    IN /\ cat' = new
       /\ hist' = Append(hist, new)
       /\ consumed' = IF readerAt \in Range(line)
                      THEN consumed \cup Range(Before(line, readerAt))
                      ELSE consumed
       /\ readerAt' = meta.head

\* Sets faultsUsed, faultsOn: faults come from a budget; once it is spent,
\* faults have stopped.
SpendFault ==
    /\ faultsUsed' = faultsUsed + 1
    /\ faultsOn' = (faultsUsed + 1 < FaultBudget)

FaultEnabled(kind) == faultsOn /\ kind \in Faults

ManifestObj(w, wr) ==
    \* An append's manifest does not depend on the base: written once, reused.
    IF wr.kind = "append" THEN <<"m", w, wr.k, 0>> ELSE <<"m", w, wr.k, wr.attempt>>

(***************************************************************************)
(* Retry validation: the operation's assumptions, checked over every       *)
(* snapshot committed between its starting snapshot and the head of the   *)
(* refreshed base.                                                         *)
(***************************************************************************)
Validate(wr) ==
    LET meta == Current
        line == Ancestors(meta, meta.head)
        between == {SnapOf(meta, sid) : sid \in Range(Before(line, wr.start))}
    IN IF wr.kind \in {"append", "expire"} THEN TRUE
       ELSE IF wr.start \notin Range(line) THEN FALSE  \* rolled back or expired
       ELSE IF wr.kind \in {"delete", "rewrite"}
            THEN \A x \in between : wr.files \subseteq x.files
       ELSE IF wr.kind = "overwrite"
            THEN IsolationLevel = "snapshot" \/ between = {}
       ELSE between = {} /\ HasSnap(meta, wr.target)   \* rollback

\* The operation's actions as a pure function of the base metadata.
ApplyActions(w, wr) ==
    LET base == metas[wr.base]
        head == HeadSnap(base)
        op == [kind |-> wr.kind, start |-> wr.start, files |-> wr.files, target |-> wr.target]
        fid == <<w, wr.k>>
        mobj == ManifestObj(w, wr)
        files == CASE wr.kind = "append" -> head.files \cup {fid}
                   [] wr.kind = "overwrite" -> {fid}
                   [] wr.kind = "delete" -> head.files \ wr.files
                   [] wr.kind = "rewrite" -> (head.files \ wr.files) \cup {fid}
        manifests == IF wr.kind = "append" THEN head.manifests \cup {mobj} ELSE {mobj}
        snap == [id |-> fid, parent |-> head.id, files |-> files,
                 mlist |-> <<"l", w, wr.k, wr.attempt>>, manifests |-> manifests]
    IN CASE wr.kind = "rollback" ->
              [prev |-> wr.base, head |-> wr.target, snaps |-> base.snaps, op |-> op]
         [] wr.kind = "expire" ->
              [prev |-> wr.base, head |-> base.head, snaps |-> {head}, op |-> op]
         [] OTHER ->
              [prev |-> wr.base, head |-> fid, snaps |-> base.snaps \cup {snap}, op |-> op]

\* Sets store, deleted. After an acknowledged expiry: delete what only the
\* expired snapshots reached (the flawed variant: what they removed).
ExpireCleanup(pre, post) ==
    LET expired == pre.snaps \ post.snaps
        gone == IF Variant = "expire-deleted-entries"
                THEN {DataObj(f) : f \in UNION {SnapOf(pre, x.parent).files \ x.files :
                                      x \in {y \in expired : HasSnap(pre, y.parent)}}}
                ELSE UNION {Reach(x) : x \in expired} \ UNION {Reach(x) : x \in post.snaps}
    IN DeleteObjects(gone)

\* Sets cat, hist, consumed, readerAt, acked, store, deleted, outcomes, writers.
CommitAcknowledged(w, wr, mid) ==
    /\ MovePointer(mid)
    /\ acked' = acked \cup {mid}
    /\ IF wr.kind = "expire"
       THEN ExpireCleanup(metas[wr.base], metas[mid])
       ELSE UNCHANGED <<store, deleted>>
    /\ Finish(w, wr, "committed")

(***************************************************************************)
(* Writer actions.                                                         *)
(***************************************************************************)

\* Refresh (read the pointer) and plan the operation at its starting snapshot.
\* An operation with nothing to do ends at once as a no-op.
Begin(w, kind) ==
    LET wr == writers[w]
        meta == Current
        start == HeadSnap(meta)
        fid == <<w, wr.k>>
        new == [k |-> wr.k, kind |-> kind, phase |-> "data", attempt |-> 1,
                base |-> cat, start |-> start.id, files |-> {}, target |-> NO_SNAP,
                unknowns |-> {},
                lone |-> (\A i \in Writers \ {w} : writers[i].phase = "done") /\ inflight = {},
                healed |-> ~faultsOn]
        Plan(nw) == writers' = [writers EXCEPT ![w] = nw] /\ UNCHANGED outcomes
        Noop == Finish(w, new, "noop") /\ UNCHANGED content
    IN /\ wr.phase = "plan"
       /\ CASE kind = "append" ->
                 Plan(new) /\ content' = Put(content, fid, {fid})
            [] kind = "overwrite" ->
                 Plan([new EXCEPT !.files = start.files])
                 /\ content' = Put(content, fid, {fid})
            [] kind = "delete" ->
                 IF start.files = {} THEN Noop
                 ELSE Plan([new EXCEPT !.files = {MinFile(start.files)}, !.phase = "manifests"])
                      /\ UNCHANGED content
            [] kind = "rewrite" ->
                 IF Cardinality(start.files) < 2 THEN Noop
                 ELSE Plan([new EXCEPT !.files = start.files])
                      /\ content' = Put(content, fid, UNION {content[f] : f \in start.files})
            [] kind = "rollback" ->
                 IF ~HasSnap(meta, start.parent) THEN Noop
                 ELSE Plan([new EXCEPT !.target = start.parent, !.phase = "metadata"])
                      /\ UNCHANGED content
            [] kind = "expire" ->
                 IF Cardinality(meta.snaps) = 1 THEN Noop
                 ELSE Plan([new EXCEPT !.phase = "metadata"]) /\ UNCHANGED content
       /\ UNCHANGED <<cat, metas, store, inflight, faultsOn, faultsUsed, orphanRuns,
                      hist, acked, deleted, consumed, readerAt>>

WriteData(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "data"
    /\ store' = store \cup {<<"d", w, wr.k, 0>>}
    /\ writers' = [writers EXCEPT ![w].phase = "manifests"]
    /\ UNCHANGED <<cat, metas, content, inflight, faultsOn, faultsUsed, orphanRuns,
                   historyVars>>

WriteManifests(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "manifests"
    /\ Assert(~(wr.kind = "append" /\ wr.attempt > 1), "an append reuses its manifest")
    /\ store' = store \cup {ManifestObj(w, wr)}
    /\ writers' = [writers EXCEPT ![w].phase = "list"]
    /\ UNCHANGED <<cat, metas, content, inflight, faultsOn, faultsUsed, orphanRuns,
                   historyVars>>

WriteManifestList(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "list"
    /\ store' = store \cup {<<"l", w, wr.k, wr.attempt>>}
    /\ writers' = [writers EXCEPT ![w].phase = "metadata"]
    /\ UNCHANGED <<cat, metas, content, inflight, faultsOn, faultsUsed, orphanRuns,
                   historyVars>>

\* Write this attempt's metadata file: immutable once written.
WriteMetadata(w) ==
    LET wr == writers[w]
        mid == <<w, wr.k, wr.attempt>>
    IN /\ wr.phase = "metadata"
       /\ metas' = Put(metas, mid, ApplyActions(w, wr))
       /\ store' = store \cup {MetaObj(mid)}
       /\ writers' = [writers EXCEPT ![w].phase = "swap"]
       /\ UNCHANGED <<cat, content, inflight, faultsOn, faultsUsed, orphanRuns,
                      historyVars>>

\* The catalog's compare-and-swap, acknowledged to the writer. The flawed
\* rename-commit variant only checks here and renames later (Rename).
Swap(w) ==
    LET wr == writers[w]
        mid == <<w, wr.k, wr.attempt>>
    IN /\ wr.phase = "swap"
       /\ IF cat # wr.base
          THEN /\ writers' = [writers EXCEPT ![w].phase = "retry"]
               /\ UNCHANGED <<cat, metas, store, content, inflight, faultsOn,
                              faultsUsed, orphanRuns, historyVars>>
          ELSE IF Variant = "rename-commit"
          THEN /\ writers' = [writers EXCEPT ![w].phase = "rename"]
               /\ UNCHANGED <<cat, metas, store, content, inflight, faultsOn,
                              faultsUsed, orphanRuns, historyVars>>
          ELSE /\ CommitAcknowledged(w, wr, mid)
               /\ UNCHANGED <<metas, content, inflight, faultsOn, faultsUsed, orphanRuns>>

\* Variant rename-commit: the second half of check-then-rename; it overwrites.
Rename(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "rename"
    /\ CommitAcknowledged(w, wr, <<w, wr.k, wr.attempt>>)
    /\ UNCHANGED <<metas, content, inflight, faultsOn, faultsUsed, orphanRuns>>

NextPhase(kind) ==
    CASE kind = "append" -> "list"       \* data file and manifest are reused
      [] kind \in {"overwrite", "delete", "rewrite"} -> "manifests"
      [] kind \in {"rollback", "expire"} -> "metadata"

\* Retry (after a conflict) and Resolve (after an unknown outcome): refresh;
\* if an earlier attempt landed, the operation committed; otherwise validate
\* against the refreshed base and start the next attempt.
Reconcile(w) ==
    LET wr == writers[w]
        resolving == wr.phase = "unknown"
        landed == OwnLanded(w, wr.k)
        Committed(m) == /\ acked' = acked \cup {m}
                        /\ Finish(w, wr, "committed")
                        /\ UNCHANGED <<store, deleted>>
        Failed == FinishFailed(w, wr) /\ UNCHANGED acked
    IN /\ Assert(~(resolving /\ Variant = "cleanup-after-unknown"),
                 "that variant never waits in phase unknown")
       /\ IF resolving /\ Variant = "pointer-status-check"
          THEN IF cat = <<w, wr.k, wr.attempt>> THEN Committed(cat) ELSE Failed
          ELSE IF ~(Variant = "no-lineage-check" /\ resolving) /\ landed # NO_META
          THEN Committed(landed)
          ELSE IF wr.attempt >= AttemptsMax THEN Failed
          ELSE IF Variant # "no-revalidate" /\ ~Validate(wr) THEN Failed
          ELSE IF wr.kind = "rollback" /\ ~HasSnap(Current, wr.target)
          THEN Failed   \* even without validation: nothing to point at
          ELSE /\ writers' = [writers EXCEPT ![w] =
                       [wr EXCEPT !.phase = NextPhase(wr.kind),
                                  !.attempt = wr.attempt + 1, !.base = cat]]
               /\ UNCHANGED <<store, deleted, acked, outcomes>>
       /\ UNCHANGED <<cat, metas, content, inflight, faultsOn, faultsUsed, orphanRuns,
                      hist, consumed, readerAt>>

Retry(w) == writers[w].phase = "retry" /\ Reconcile(w)
Resolve(w) == writers[w].phase = "unknown" /\ Reconcile(w)

(***************************************************************************)
(* Faults. Each spends one unit of FaultBudget.                            *)
(***************************************************************************)

\* Sets store, deleted, outcomes, writers: the writer does not know whether
\* its swap landed (the flawed variant takes it as failure and cleans up).
UnknownOutcome(w, wr) ==
    IF Variant = "cleanup-after-unknown"
    THEN DeleteObjects(OpObjects(w, wr.k)) /\ Finish(w, wr, "conflict")
    ELSE /\ writers' = [writers EXCEPT ![w] =
                [wr EXCEPT !.phase = "unknown", !.unknowns = wr.unknowns \cup {wr.base}]]
         /\ UNCHANGED <<store, deleted, outcomes>>

\* A storage write fails (definitely not written): the operation gives up.
WriteFails(w) ==
    LET wr == writers[w] IN
    /\ wr.phase \in WritePhases
    /\ FaultEnabled("write_fail")
    /\ SpendFault
    /\ FinishFailed(w, wr)
    /\ UNCHANGED <<cat, metas, content, inflight, orphanRuns, hist, acked, consumed, readerAt>>

\* The swap request is rejected before it could have any effect.
SwapFails(w) ==
    /\ writers[w].phase = "swap"
    /\ FaultEnabled("swap_fail")
    /\ SpendFault
    /\ writers' = [writers EXCEPT ![w].phase = "retry"]
    /\ UNCHANGED <<cat, metas, store, content, inflight, orphanRuns, historyVars>>

\* The swap is applied (if the pointer matched) but its acknowledgement is lost.
AckLost(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "swap"
    /\ FaultEnabled("ack_lost")
    /\ SpendFault
    /\ IF cat = wr.base
       THEN MovePointer(<<w, wr.k, wr.attempt>>)
       ELSE UNCHANGED <<cat, hist, consumed, readerAt>>
    /\ UnknownOutcome(w, wr)
    /\ UNCHANGED <<metas, content, inflight, orphanRuns, acked>>

\* The client times out; its request is still in flight and may land later.
SwapDelayed(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "swap"
    /\ FaultEnabled("swap_delayed")
    /\ SpendFault
    /\ inflight' = inflight \cup {<<w, wr.base, <<w, wr.k, wr.attempt>>>>}
    /\ UnknownOutcome(w, wr)
    /\ UNCHANGED <<cat, metas, content, orphanRuns, hist, acked, consumed, readerAt>>

\* A writer dies between two phases; its files stay behind (orphans).
Crash(w) ==
    LET wr == writers[w] IN
    /\ wr.phase \notin {"plan", "done"}
    /\ FaultEnabled("crash")
    /\ SpendFault
    /\ Finish(w, wr, "crashed")
    /\ UNCHANGED <<cat, metas, store, content, inflight, orphanRuns,
                   hist, acked, deleted, consumed, readerAt>>

(***************************************************************************)
(* The network and the environment.                                        *)
(***************************************************************************)

\* A delayed swap request reaches the catalog and is compared-and-swapped there.
Deliver(req) ==
    /\ req \in inflight
    /\ inflight' = inflight \ {req}
    /\ IF cat = req[2]
       THEN MovePointer(req[3])
       ELSE UNCHANGED <<cat, hist, consumed, readerAt>>
    /\ UNCHANGED <<metas, store, content, writers, faultsOn, faultsUsed, orphanRuns,
                   acked, outcomes, deleted>>

\* A delayed swap request is lost for good.
Drop(req) ==
    /\ req \in inflight
    /\ inflight' = inflight \ {req}
    /\ UNCHANGED <<cat, metas, store, content, writers, faultsOn, faultsUsed,
                   orphanRuns, historyVars>>

\* Faults stop before the budget is spent.
Heal ==
    /\ faultsOn
    /\ faultsOn' = FALSE
    /\ UNCHANGED <<cat, metas, store, content, inflight, writers, faultsUsed,
                   orphanRuns, historyVars>>

\* Delete data, manifest and manifest-list objects no retained snapshot
\* reaches; only while no writer is working (the flawed variant: any time).
RemoveOrphans ==
    LET live == UNION {Reach(x) : x \in Current.snaps}
        quiet == (\A w \in Writers : writers[w].phase \in {"plan", "done"}) /\ inflight = {}
    IN /\ orphanRuns < OrphanRunsMax
       /\ quiet \/ Variant = "orphans-no-threshold"
       /\ DeleteObjects({o \in store : o[1] \in {"d", "m", "l"} /\ o \notin live})
       /\ orphanRuns' = orphanRuns + 1
       /\ UNCHANGED <<cat, metas, content, inflight, writers, faultsOn, faultsUsed,
                      hist, acked, outcomes, consumed, readerAt>>

\* Every writer is done and nothing is in flight: the system stops here. An
\* explicit stuttering step, so that TLC's deadlock check stays on and still
\* reports any other state without successors (Python: is_terminal).
Terminated ==
    /\ \A w \in Writers : writers[w].phase = "done"
    /\ inflight = {}
    /\ UNCHANGED vars

WriterNext(w) ==
    \/ \E kind \in Kinds : Begin(w, kind)
    \/ WriteData(w) \/ WriteManifests(w) \/ WriteManifestList(w) \/ WriteMetadata(w)
    \/ Swap(w) \/ Rename(w) \/ Retry(w) \/ Resolve(w)
    \/ SwapFails(w) \/ AckLost(w) \/ SwapDelayed(w) \/ WriteFails(w) \/ Crash(w)

Delivery == \E req \in inflight : Deliver(req) \/ Drop(req)

Next ==
    \/ \E w \in Writers : WriterNext(w)
    \/ Delivery
    \/ Heal
    \/ RemoveOrphans
    \/ Terminated

\* Writers keep taking steps and the network eventually delivers or drops
\* every delayed request. Heal and RemoveOrphans need no fairness: nothing
\* waits for them.
Fairness == (\A w \in Writers : WF_vars(WriterNext(w))) /\ WF_vars(Delivery)

Spec == Init /\ [][Next]_vars /\ Fairness

(***************************************************************************)
(* Properties (spec/PROPERTIES.md; model/checks.py check_<snake_name>).    *)
(* hist[1] and hist[2] are the bootstrap's versions, so the pointer        *)
(* changes made by writers are hist[i-1] -> hist[i] for i in 3..Len(hist). *)
(***************************************************************************)
Changes == 3..Len(hist)
Pre(i) == metas[hist[i - 1]]
Post(i) == metas[hist[i]]
CommittedHeads == {metas[hist[i]].head : i \in 1..Len(hist)}

\* P1: the pointer's values form one chain through prev; each new snapshot's
\* parent is the head of main in the version it replaced.
LinearHistory ==
    /\ hist[Len(hist)] = cat
    /\ \A i \in 2..Len(hist) : metas[hist[i]].prev = hist[i - 1]
    /\ \A i \in Changes : \A x \in Post(i).snaps :
           x.id \notin Ids(Pre(i)) => x.parent = Pre(i).head

\* P2: every version acknowledged as committed is in the current version's chain.
NoLostCommit == acked \subseteq Range(Chain(metas, cat))

\* P3: snapshot ids are unique per version and introduced once along the
\* history; no row is live twice.
Introduced(i) == Ids(metas[hist[i]]) \ (IF i = 1 THEN {} ELSE Ids(metas[hist[i - 1]]))
NoDuplicateCommit ==
    /\ \A i \in 1..Len(hist) : \A x, y \in metas[hist[i]].snaps : x.id = y.id => x = y
    /\ \A i, j \in 1..Len(hist) : i < j => Introduced(i) \cap Introduced(j) = {}
    /\ \A x \in Current.snaps : \A f, g \in x.files :
           f # g => content[f] \cap content[g] = {}

\* P4: a reader (one pointer read, no listing) sees a committed snapshot and no
\* file of an operation that has not committed: every visible file was written
\* by an operation with a version in the pointer's history, and none by an
\* operation that ended aborted (writer 0, the bootstrap, has no outcome).
ReadersSeeCommitted ==
    LET committedOps == {<<hist[i][1], hist[i][2]>> : i \in 1..Len(hist)}
    IN \A f \in HeadFiles(Current) :
           /\ f \in committedOps
           /\ f[1] # 0 => outcomes[f[1]][f[2]].res # "conflict"

\* P5: every commit's assumptions held over all snapshots between its starting
\* snapshot and the head of the version it replaced.
AssumptionsHold(pre, post) ==
    LET op == post.op
        line == Ancestors(pre, pre.head)
        between == {SnapOf(pre, sid) : sid \in Range(Before(line, op.start))}
    IN IF op.kind \in {"append", "expire"} THEN TRUE
       ELSE IF op.start \notin Range(line) THEN FALSE
       ELSE /\ op.kind \in {"delete", "rewrite"} =>
                   \A x \in between : op.files \subseteq x.files
            /\ (op.kind = "overwrite" /\ IsolationLevel = "serializable") => between = {}
            /\ op.kind = "rollback" => between = {}
ValidationSound == \A i \in Changes : AssumptionsHold(Pre(i), Post(i))

\* P6: each commit's effect on the table's rows equals its operation applied to
\* the version it replaced. Rows are bags: [row -> number of live copies].
RowBag(files) ==
    [r \in UNION {content[f] : f \in files} |-> Cardinality({f \in files : r \in content[f]})]
BagCount(b, r) == IF r \in DOMAIN b THEN b[r] ELSE 0
BagPlus(a, b) == [r \in DOMAIN a \cup DOMAIN b |-> BagCount(a, r) + BagCount(b, r)]
BagMinus(a, b) == [r \in {x \in DOMAIN a : a[x] > BagCount(b, x)} |-> a[r] - BagCount(b, r)]
IsolationHolds(pre, post, mid) ==
    LET op == post.op
        before == RowBag(HeadFiles(pre))
        after == RowBag(HeadFiles(post))
        fid == <<mid[1], mid[2]>>
    IN CASE op.kind = "append" -> after = BagPlus(before, RowBag({fid}))
         [] op.kind = "overwrite" ->
              /\ IsolationLevel = "serializable" => op.files = HeadFiles(pre)
              /\ after = RowBag({fid})
         [] op.kind = "delete" ->
              op.files \subseteq HeadFiles(pre) /\ after = BagMinus(before, RowBag(op.files))
         [] op.kind = "rewrite" -> op.files \subseteq HeadFiles(pre) /\ after = before
         [] op.kind = "rollback" -> pre.head = op.start /\ post.head = op.target
         [] op.kind = "expire" -> after = before
Isolation == \A i \in Changes : IsolationHolds(Pre(i), Post(i), hist[i])

\* P7: a snapshot id means the same snapshot in every committed version.
TimeTravelImmutable ==
    LET all == UNION {metas[hist[i]].snaps : i \in 1..Len(hist)}
    IN \A x, y \in all : x.id = y.id => x = y

\* P8: the current metadata file and every object its snapshots reach exist.
NoDanglingRefs ==
    /\ MetaObj(cat) \in store
    /\ \A x \in Current.snaps : Reach(x) \subseteq store

\* P9: nothing reachable from a retained snapshot was ever deleted.
CleanupSafe ==
    /\ \A x \in Current.snaps : Reach(x) \cap deleted = {}
    /\ MetaObj(cat) \notin deleted

\* P10: an incremental reader following main's ancestry misses no snapshot
\* that main's head has passed through.
IncrementalComplete == CommittedHeads \subseteq consumed

(***************************************************************************)
(* Liveness. Under Fairness every behaviour ends stuttering with all       *)
(* writers done and nothing in flight, where outcomes no longer change; so *)
(* "eventually always P" over the outcome records is the Python explorer's *)
(* check of P on every final state (its state graph is acyclic).           *)
(***************************************************************************)

\* L1: an operation that ran alone after faults stopped commits (or is a no-op).
LoneWriterCommits ==
    \A w \in Writers, k \in 1..Ops :
        <>[](outcomes[w][k].lone /\ outcomes[w][k].healed
                 => outcomes[w][k].res \in {"committed", "noop"})

\* L2: every operation ends; one that began after faults stopped ends
\* committed, aborted (conflict) or as a no-op, never unknown.
OperationsTerminate ==
    \A w \in Writers, k \in 1..Ops :
        <>[](/\ outcomes[w][k].res # "pending"
             /\ outcomes[w][k].healed => outcomes[w][k].res \in {"committed", "conflict", "noop"})

=============================================================================
