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
(* "Bounds of the model" (the constants); 1.6 sequence numbers, 7.3 row-   *)
(* level deletes and 8 refs (section "Rows" below). spec/PROPERTIES.md:    *)
(* P1..P10 and L3 (invariants), L1, L2 (liveness).                         *)
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
    Variant,        \* "correct" or one of the Iceberg-shaped flawed variants
    Partitions,     \* partitions of the table (1 or 2)
    Refs            \* TRUE: branch "b" (at main's head) and tag "t" exist or may

OpKinds == {"append", "overwrite", "delete", "rewrite", "rollback", "expire", "row_delete", "row_update", "upsert", "tag", "fast_forward", "cdc_update"}
FaultKinds == {"write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash"}
IcebergVariants == {"correct", "no-revalidate", "cleanup-after-unknown",
                    "rename-commit", "pointer-status-check", "no-lineage-check",
                    "expire-deleted-entries", "orphans-no-threshold",
                    "row-delete-ignores-concurrent-deletes", "rewrite-ignores-new-deletes",
                    "rewrite-takes-new-sequence", "stale-sequence-number-on-retry",
                    "expire-keeps-main-only", "validation-ignores-partitions",
                    "branch-commit-on-main"}
SnapshotKinds == {"append", "overwrite", "delete", "rewrite", "row_delete", "row_update", "upsert", "cdc_update"}
PartitionKinds == SnapshotKinds
DataKinds == {"append", "overwrite", "rewrite", "row_update", "upsert", "cdc_update"}
DeleteFileKinds == {"row_delete", "row_update", "upsert", "cdc_update"}
RefNames == {"main", "b", "t"}
\* Orphan removal by age (spec/PROTOCOL.md 12.2; Python: Bounds.orphan_age). Off here;
\* a configuration turns it on by substitution: `OrphanAge <- OrphanAgeOn`.
OrphanAge == FALSE

ASSUME /\ Writers = 1..Cardinality(Writers) /\ Writers # {}
       /\ Ops \in Nat \ {0} /\ AttemptsMax \in Nat \ {0}
       /\ Kinds \subseteq OpKinds /\ Kinds # {}
       /\ Faults \subseteq FaultKinds
       /\ FaultBudget \in Nat /\ OrphanRunsMax \in Nat
       /\ IsolationLevel \in {"serializable", "snapshot"}
       /\ Variant \in IcebergVariants
       /\ Partitions \in {1, 2} /\ Refs \in BOOLEAN
       /\ (Refs \/ Kinds \cap {"tag", "fast_forward"} = {})

(***************************************************************************)
(* Protocol variables.                                                     *)
(***************************************************************************)
VARIABLES
    cat,        \* the catalog's pointer: a MetaId
    metas,      \* [MetaId -> Meta]: every metadata file ever written
    store,      \* set of ObjIds present in storage
    content,    \* [FileId -> set of row ids]: what each data file holds
    parts,      \* [FileId -> partition]: each data file's partition
    dels,       \* [FileId -> DelFile]: what each delete file deletes
    inflight,   \* delayed swap requests <<writer, expected MetaId, new MetaId>>
    writers,    \* [Writers -> Writer]
    faultsOn,   \* faults may still occur
    faultsUsed, \* faults spent from FaultBudget
    orphanRuns, \* orphan-removal runs so far
    aged        \* ObjIds written before the orphan-removal threshold (AgeFiles)

(***************************************************************************)
(* History (auxiliary) variables: written by the actions, read only by the *)
(* properties. They never enable or disable an action.                     *)
(***************************************************************************)
VARIABLES
    hist,       \* every value the pointer has taken, in order
    acked,      \* MetaIds acknowledged to their writer as committed
    outcomes,   \* [Writers -> [1..Ops -> OpResult]]
    deleted,    \* ObjIds ever deleted
    consumed,   \* SnapIds an incremental reader of main has consumed
    readerAt    \* that reader's position

tableFiles == <<content, parts, dels>>
protocolVars == <<cat, metas, store, tableFiles, inflight, writers, faultsOn,
                  faultsUsed, orphanRuns, aged>>
historyVars == <<hist, acked, outcomes, deleted, consumed, readerAt>>
vars == <<protocolVars, historyVars>>

(***************************************************************************)
(* Values (model/state.py). Ids are sequences so that two runs taking the  *)
(* same steps reach equal states, here and in Python:                      *)
(*   SnapId = FileId = RowId = <<w, k>>, MetaId = <<w, k, attempt>>,       *)
(*   ObjId = <<kind, w, k, attempt>> with kind "d" data file, "x" delete   *)
(*   file, "m" manifest, "l" manifest list, "j" metadata JSON.             *)
(* Records: Snap [id, parent, files, mlist, manifests, seq, deletes, dseq  *)
(* (a function from its files and deletes to data sequence numbers)];      *)
(* DelFile [kind, part, targets]; OpInfo [kind, start, files, target,      *)
(* part, ref, row]; Meta [prev, head, snaps, op, last_seq, refs (a         *)
(* function from the branch and tag names to SnapIds)]; Writer [k, kind,   *)
(* phase, attempt, base, start, files, target, unknowns, lone, healed,     *)
(* part, ref, row, mseq]; OpResult [res, lone, healed, spurious].          *)
(***************************************************************************)
NO_SNAP == <<0, 0>>
NO_META == <<0, 0, 0>>
NO_ROW == <<>>
NO_PART == 0
WritePhases == {"data", "manifests", "list", "metadata"}

DataObj(f) == <<"d", f[1], f[2], 0>>
DeleteObj(f) == <<"x", f[1], f[2], 0>>
MetaObj(m) == <<"j", m[1], m[2], m[3]>>

\* Objects a reader of snapshot x opens (manifest list, manifests, data files,
\* delete files).
Reach(x) == {x.mlist} \cup x.manifests \cup {DataObj(f) : f \in x.files}
                \cup {DeleteObj(f) : f \in x.deletes}

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
FileLeq(f, g) == f[1] < g[1] \/ (f[1] = g[1] /\ f[2] <= g[2])
MinFile(S) == CHOOSE f \in S : \A g \in S : FileLeq(f, g)
\* (data file, row) pairs, also lexicographically (Python: min of tuples). A cdc_update's
\* first version <<w, k, 0>> is never live, so never a row MinPair compares.
PairLeq(p, q) == (p[1] # q[1] /\ FileLeq(p[1], q[1])) \/ (p[1] = q[1] /\ FileLeq(p[2], q[2]))
MinPair(S) == CHOOSE p \in S : \A q \in S : PairLeq(p, q)
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
     target |-> NO_SNAP, unknowns |-> {}, lone |-> FALSE, healed |-> FALSE,
     part |-> NO_PART, ref |-> "main", row |-> NO_ROW, mseq |-> 0]

Pending == [res |-> "pending", lone |-> FALSE, healed |-> FALSE, spurious |-> FALSE]

(***************************************************************************)
(* Refs (spec/PROTOCOL.md 8): main's head is meta.head; meta.refs maps the *)
(* branch "b" and the tag "t" to their snapshots.                          *)
(***************************************************************************)
RefHead(meta, ref) ==
    IF ref = "main" THEN meta.head
    ELSE IF ref \in DOMAIN meta.refs THEN meta.refs[ref] ELSE NO_SNAP
RefHeads(meta) == {meta.head} \cup {meta.refs[n] : n \in DOMAIN meta.refs}
Retained(meta) == {SnapOf(meta, h) : h \in RefHeads(meta)}
RefSnap(meta, ref) ==   \* a set: {} when the ref does not exist
    {x \in meta.snaps : x.id = RefHead(meta, ref) /\ RefHead(meta, ref) # NO_SNAP}

(***************************************************************************)
(* Rows (model/rows.py): delete files applied by data sequence number. A  *)
(* position delete applies to the data files it names when its data       *)
(* sequence number is >= theirs; an equality delete to every data file of  *)
(* its partition with a smaller one, and deletes all its rows.             *)
(***************************************************************************)
DeletedRows(x, f) ==
    IF \E d \in x.deletes : dels[d].kind = "equality" /\ dels[d].part = parts[f]
                            /\ x.dseq[d] > x.dseq[f]
    THEN content[f]
    ELSE {r \in content[f] : \E d \in x.deletes : dels[d].kind = "position"
                              /\ x.dseq[d] >= x.dseq[f] /\ <<f, r>> \in dels[d].targets}
LiveOf(x, f) == content[f] \ DeletedRows(x, f)
LivePairs(x) == UNION {{<<f, r>> : r \in LiveOf(x, f)} : f \in x.files}
FilesIn(files, p) == {f \in files : parts[f] = p}
\* The rows a reader of x sees in `files`, as a bag [row -> copies].
LiveBag(x, files) ==
    LET fs == files \cap x.files
    IN [r \in UNION {LiveOf(x, f) : f \in fs} |-> Cardinality({f \in fs : r \in LiveOf(x, f)})]

\* What snapshot x (of meta) changed relative to its parent.
ParentOf(meta, x) == SnapOf(meta, x.parent)
Touches(meta, x, p) ==
    LET par == ParentOf(meta, x) IN
    \/ \E f \in (x.files \ par.files) \cup (par.files \ x.files) : parts[f] = p
    \/ \E d \in x.deletes \ par.deletes : dels[d].part = p
AddsDataIn(meta, x, p) == \E f \in x.files \ ParentOf(meta, x).files : parts[f] = p
AddsDeleteFor(meta, x, files) ==
    \E d \in x.deletes \ ParentOf(meta, x).deletes :
        IF dels[d].kind = "position" THEN \E t \in dels[d].targets : t[1] \in files
        ELSE \E f \in files : parts[f] = dels[d].part
AddsPositionDeleteFor(meta, x, files) ==
    \E d \in x.deletes \ ParentOf(meta, x).deletes :
        dels[d].kind = "position" /\ \E t \in dels[d].targets : t[1] \in files
\* The snapshots on head's ancestry after start (PROTOCOL 7.2); assumes start is one.
Between(meta, head, start) ==
    {SnapOf(meta, sid) : sid \in Range(Before(Ancestors(meta, head), start))}
IsAncestor(meta, head, start) == start \in Range(Ancestors(meta, head))

(***************************************************************************)
(* The initial table: two appends by the bootstrap writer 0.               *)
(***************************************************************************)
Snap01 == [id |-> <<0, 1>>, parent |-> NO_SNAP, files |-> {<<0, 1>>},
           mlist |-> <<"l", 0, 1, 1>>, manifests |-> {<<"m", 0, 1, 0>>},
           seq |-> 1, deletes |-> {}, dseq |-> (<<0, 1>> :> 1)]
Snap02 == [id |-> <<0, 2>>, parent |-> <<0, 1>>, files |-> {<<0, 1>>, <<0, 2>>},
           mlist |-> <<"l", 0, 2, 1>>,
           manifests |-> {<<"m", 0, 1, 0>>, <<"m", 0, 2, 0>>},
           seq |-> 2, deletes |-> {}, dseq |-> (<<0, 1>> :> 1) @@ (<<0, 2>> :> 2)]
NoRefs == [n \in {} |-> NO_SNAP]
Meta011 == [prev |-> NO_META, head |-> <<0, 1>>, snaps |-> {Snap01},
            op |-> [kind |-> "append", start |-> NO_SNAP, files |-> {}, target |-> NO_SNAP,
                    part |-> 1, ref |-> "main", row |-> NO_ROW],
            last_seq |-> 1, refs |-> NoRefs]
\* The second bootstrap file is in the last partition; the branch starts at main's head.
Meta021 == [prev |-> <<0, 1, 1>>, head |-> <<0, 2>>, snaps |-> {Snap01, Snap02},
            op |-> [kind |-> "append", start |-> <<0, 1>>, files |-> {}, target |-> NO_SNAP,
                    part |-> Partitions, ref |-> "main", row |-> NO_ROW],
            last_seq |-> 2, refs |-> IF Refs THEN ("b" :> <<0, 2>>) ELSE NoRefs]

Init ==
    /\ cat = <<0, 2, 1>>
    /\ metas = (<<0, 1, 1>> :> Meta011) @@ (<<0, 2, 1>> :> Meta021)
    /\ store = {<<"d", 0, 1, 0>>, <<"d", 0, 2, 0>>, <<"m", 0, 1, 0>>, <<"m", 0, 2, 0>>,
                <<"l", 0, 1, 1>>, <<"l", 0, 2, 1>>, <<"j", 0, 1, 1>>, <<"j", 0, 2, 1>>}
    /\ content = (<<0, 1>> :> {<<0, 1>>}) @@ (<<0, 2>> :> {<<0, 2>>})
    /\ parts = (<<0, 1>> :> 1) @@ (<<0, 2>> :> Partitions)
    /\ dels = [f \in {} |-> 0]
    /\ inflight = {}
    /\ writers = [w \in Writers |-> IdleWriter(1)]
    /\ faultsOn = (Faults # {} /\ FaultBudget > 0)
    /\ faultsUsed = 0
    /\ orphanRuns = 0
    /\ aged = {}
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
FinishS(w, wr, res, spurious) ==
    /\ Assert(outcomes[w][wr.k].res = "pending", <<"operation ended twice", w, wr.k>>)
    /\ outcomes' = [outcomes EXCEPT ![w][wr.k] =
                        [res |-> res, lone |-> wr.lone, healed |-> wr.healed, spurious |-> spurious]]
    /\ writers' = [writers EXCEPT ![w] = IdleWriter(wr.k + 1)]
Finish(w, wr, res) == FinishS(w, wr, res, FALSE)

\* Sets store, deleted.
DeleteObjects(objs) ==
    /\ store' = store \ objs
    /\ deleted' = deleted \cup (objs \cap store)

\* Sets store, deleted, outcomes, writers. The operation gives up; it cleans
\* up only when the failure is definite: no attempt landed, and no attempt of
\* unknown outcome can still land (its base is no longer the pointer, and
\* versions are never reused).
FinishFailedS(w, wr, spurious) ==
    IF Variant # "pointer-status-check"
       /\ (cat \in wr.unknowns \/ OwnLanded(w, wr.k) # NO_META)
    THEN /\ Finish(w, wr, "unknown")
         /\ UNCHANGED <<store, deleted>>
    ELSE /\ DeleteObjects(OpObjects(w, wr.k))
         /\ FinishS(w, wr, "conflict", spurious)
FinishFailed(w, wr) == FinishFailedS(w, wr, FALSE)

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
(* Retry validation (model/operations.py validate): the operation's        *)
(* validations, checked over every snapshot committed to its ref between   *)
(* its starting snapshot and the ref's head in the refreshed base.         *)
(***************************************************************************)
Validate(wr) ==
    LET meta == Current
        head == RefHead(meta, wr.ref)
        btw == Between(meta, head, wr.start)
        filesLive == \A x \in btw : wr.files \subseteq x.files
    IN IF wr.kind \in {"append", "expire", "upsert", "cdc_update"} THEN TRUE
       ELSE IF wr.kind = "tag"
            THEN RefHead(meta, "t") = wr.start /\ HasSnap(meta, wr.target)
       ELSE IF wr.kind = "fast_forward"   \* still a fast-forward among retained snapshots
            THEN meta.head = wr.start /\ IsAncestor(meta, wr.target, wr.start)
       ELSE IF ~IsAncestor(meta, head, wr.start) THEN FALSE  \* rolled back or expired
       ELSE IF wr.kind = "rollback" THEN btw = {} /\ HasSnap(meta, wr.target)
       ELSE IF wr.kind = "overwrite"
            THEN \/ IsolationLevel = "snapshot"
                 \/ IF Variant = "validation-ignores-partitions" THEN btw = {}
                    ELSE \A x \in btw : ~Touches(meta, x, wr.part)
       ELSE IF ~filesLive THEN FALSE
       ELSE IF wr.kind = "delete" THEN TRUE
       ELSE IF wr.kind = "rewrite"
            THEN \/ Variant = "rewrite-ignores-new-deletes"
                 \/ \A x \in btw : ~AddsPositionDeleteFor(meta, x, wr.files)
       ELSE \* row_delete, row_update
            /\ (wr.kind = "row_delete" /\ Variant = "row-delete-ignores-concurrent-deletes")
               \/ \A x \in btw : ~AddsDeleteFor(meta, x, wr.files)
            /\ IsolationLevel = "serializable" =>
                 IF Variant = "validation-ignores-partitions"
                 THEN \A x \in btw : x.files \subseteq ParentOf(meta, x).files
                 ELSE \A x \in btw : ~AddsDataIn(meta, x, wr.part)

\* A failed validation is justified when the starting snapshot left the ref's
\* ancestry or a snapshot in between overlaps the operation's partition.
Justified(wr) ==
    LET meta == Current
        head == RefHead(meta, wr.ref)
    IN \/ wr.part = NO_PART
       \/ ~IsAncestor(meta, head, wr.start)
       \/ \E x \in Between(meta, head, wr.start) : Touches(meta, x, wr.part)

\* The operation's actions as a pure function of the base metadata.
ApplyActions(w, wr) ==
    LET base == metas[wr.base]
        head == SnapOf(base, IF Variant = "branch-commit-on-main" THEN base.head
                             ELSE RefHead(base, wr.ref))
        op == [kind |-> wr.kind, start |-> wr.start, files |-> wr.files, target |-> wr.target,
               part |-> wr.part, ref |-> wr.ref, row |-> wr.row]
        fid == <<w, wr.k>>
        mobj == ManifestObj(w, wr)
        seq == base.last_seq + 1
        files == CASE wr.kind = "append" -> head.files \cup {fid}
                   [] wr.kind = "overwrite" -> (head.files \ FilesIn(head.files, wr.part)) \cup {fid}
                   [] wr.kind = "delete" -> head.files \ wr.files
                   [] wr.kind = "rewrite" -> (head.files \ wr.files) \cup {fid}
                   [] wr.kind = "row_delete" -> head.files
                   [] wr.kind \in {"row_update", "upsert", "cdc_update"} -> head.files \cup {fid}
        deletes == IF wr.kind \in DeleteFileKinds THEN head.deletes \cup {fid} ELSE head.deletes
        manifests == IF wr.kind \in {"append", "row_delete", "row_update", "upsert", "cdc_update"}
                     THEN head.manifests \cup {mobj} ELSE {mobj}
        dseq == [f \in files \cup deletes |->
                    IF f \in head.files \cup head.deletes THEN head.dseq[f]
                    ELSE IF wr.mseq # 0 THEN wr.mseq ELSE seq]
        snap == [id |-> fid, parent |-> head.id, files |-> files,
                 mlist |-> <<"l", w, wr.k, wr.attempt>>, manifests |-> manifests,
                 seq |-> seq, deletes |-> deletes, dseq |-> dseq]
    IN CASE wr.kind \in {"rollback", "fast_forward"} ->
              [prev |-> wr.base, head |-> wr.target, snaps |-> base.snaps, op |-> op,
               last_seq |-> base.last_seq, refs |-> base.refs]
         [] wr.kind = "tag" ->
              [prev |-> wr.base, head |-> base.head, snaps |-> base.snaps, op |-> op,
               last_seq |-> base.last_seq, refs |-> Put(base.refs, "t", wr.target)]
         [] wr.kind = "expire" ->
              [prev |-> wr.base, head |-> base.head, snaps |-> Retained(base), op |-> op,
               last_seq |-> base.last_seq, refs |-> base.refs]
         [] wr.ref = "main" ->
              [prev |-> wr.base, head |-> fid, snaps |-> base.snaps \cup {snap}, op |-> op,
               last_seq |-> seq, refs |-> base.refs]
         [] OTHER ->
              [prev |-> wr.base, head |-> base.head, snaps |-> base.snaps \cup {snap}, op |-> op,
               last_seq |-> seq, refs |-> Put(base.refs, wr.ref, fid)]

\* Sets store, deleted. After an acknowledged expiry: delete what only the
\* expired snapshots reached (the flawed variant: what they removed).
ExpireCleanup(pre, post) ==
    LET expired == pre.snaps \ post.snaps
        kept == IF Variant = "expire-keeps-main-only"
                THEN {SnapOf(post, sid) : sid \in Range(Ancestors(post, post.head))}
                ELSE post.snaps
        gone == IF Variant = "expire-deleted-entries"
                THEN {DataObj(f) : f \in UNION {SnapOf(pre, x.parent).files \ x.files :
                                      x \in {y \in expired : HasSnap(pre, y.parent)}}}
                ELSE UNION {Reach(x) : x \in expired} \ UNION {Reach(x) : x \in kept}
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

\* Refresh (read the pointer) and plan the operation at its starting snapshot
\* (the head of its ref; model/operations.py plan_operation). An operation
\* with nothing to do ends at once as a no-op.
PartChoices(kind) == IF kind \in PartitionKinds THEN 1..Partitions ELSE {NO_PART}
RefChoices(kind) == IF Refs /\ kind = "append" THEN {"main", "b"} ELSE {"main"}

Begin(w, kind, part, ref) ==
    LET wr == writers[w]
        meta == Current
        startId == RefHead(meta, IF kind = "tag" THEN "t" ELSE ref)
        start == SnapOf(meta, startId)
        fid == <<w, wr.k>>
        new == [k |-> wr.k, kind |-> kind, phase |-> "data", attempt |-> 1,
                base |-> cat, start |-> startId, files |-> {}, target |-> NO_SNAP,
                unknowns |-> {},
                lone |-> (\A i \in Writers \ {w} : writers[i].phase = "done") /\ inflight = {},
                healed |-> ~faultsOn, part |-> part, ref |-> ref, row |-> NO_ROW, mseq |-> 0]
        Plan(nw) == writers' = [writers EXCEPT ![w] = nw] /\ UNCHANGED outcomes
        Noop == Finish(w, new, "noop") /\ UNCHANGED tableFiles
        \* The operation writes a data file holding `rows`.
        Rows(rows) == /\ content' = Put(content, fid, rows)
                      /\ parts' = Put(parts, fid, part)
        inPart == FilesIn(start.files, part)
        pairs == {pr \in LivePairs(start) : parts[pr[1]] = part}
        branch == RefHead(meta, "b")
    IN /\ wr.phase = "plan"
       /\ part \in PartChoices(kind) /\ ref \in RefChoices(kind)
       /\ CASE kind = "append" ->
                 Plan(new) /\ Rows({fid}) /\ UNCHANGED dels
            [] kind = "overwrite" ->
                 Plan([new EXCEPT !.files = inPart]) /\ Rows({fid}) /\ UNCHANGED dels
            [] kind = "delete" ->
                 IF inPart = {} THEN Noop
                 ELSE Plan([new EXCEPT !.files = {MinFile(inPart)}, !.phase = "manifests"])
                      /\ UNCHANGED tableFiles
            [] kind = "rewrite" ->
                 IF Cardinality(inPart) < 2 /\ \A f \in inPart : DeletedRows(start, f) = {}
                 THEN Noop
                 ELSE Plan([new EXCEPT !.files = inPart,
                                       !.mseq = IF Variant = "rewrite-takes-new-sequence"
                                                THEN 0 ELSE start.seq])
                      /\ Rows(UNION {LiveOf(start, f) : f \in inPart}) /\ UNCHANGED dels
            [] kind \in {"row_delete", "row_update"} ->
                 IF pairs = {} THEN Noop
                 ELSE LET row == MinPair(pairs) IN
                      /\ Plan([new EXCEPT !.files = {row[1]}, !.row = row])
                      /\ dels' = Put(dels, fid, [kind |-> "position", part |-> part, targets |-> {row}])
                      \* An update writes the row again under its own id, in a new data file.
                      /\ IF kind = "row_update" THEN Rows({row[2]}) ELSE UNCHANGED <<content, parts>>
            [] kind = "upsert" ->
                 /\ Plan(new) /\ Rows({fid})
                 /\ dels' = Put(dels, fid, [kind |-> "equality", part |-> part, targets |-> {}])
            \* The row written twice in one commit: its first version <<w, k, 0>> is deleted
            \* by position in the data file the same commit adds (one sequence number).
            [] kind = "cdc_update" ->
                 LET first == <<w, wr.k, 0>> IN
                 /\ Plan([new EXCEPT !.row = <<fid, first>>]) /\ Rows({first, fid})
                 /\ dels' = Put(dels, fid, [kind |-> "position", part |-> part, targets |-> {<<fid, first>>}])
            [] kind = "rollback" ->
                 IF ~HasSnap(meta, start.parent) THEN Noop
                 ELSE Plan([new EXCEPT !.target = start.parent, !.phase = "metadata"])
                      /\ UNCHANGED tableFiles
            [] kind = "expire" ->
                 IF meta.snaps = Retained(meta) THEN Noop
                 ELSE Plan([new EXCEPT !.phase = "metadata"]) /\ UNCHANGED tableFiles
            [] kind = "tag" ->
                 IF startId = meta.head THEN Noop
                 ELSE Plan([new EXCEPT !.target = meta.head, !.phase = "metadata"])
                      /\ UNCHANGED tableFiles
            [] kind = "fast_forward" ->
                 IF branch = meta.head \/ ~IsAncestor(meta, branch, meta.head) THEN Noop
                 ELSE Plan([new EXCEPT !.target = branch, !.phase = "metadata"])
                      /\ UNCHANGED tableFiles
       /\ UNCHANGED <<cat, metas, store, inflight, faultsOn, faultsUsed, orphanRuns, aged,
                      hist, acked, deleted, consumed, readerAt>>

\* Write the operation's data file and / or delete file (written once, reused).
WriteData(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "data"
    /\ store' = store \cup (IF wr.kind \in DataKinds THEN {<<"d", w, wr.k, 0>>} ELSE {})
                      \cup (IF wr.kind \in DeleteFileKinds THEN {<<"x", w, wr.k, 0>>} ELSE {})
    /\ writers' = [writers EXCEPT ![w].phase = "manifests"]
    /\ UNCHANGED <<cat, metas, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged,
                   historyVars>>

\* The flawed stale-sequence-number-on-retry variant writes the append's data
\* sequence number into its (reused) manifest now.
WriteManifests(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "manifests"
    /\ Assert(~(wr.kind = "append" /\ wr.attempt > 1), "an append reuses its manifest")
    /\ store' = store \cup {ManifestObj(w, wr)}
    /\ writers' = [writers EXCEPT ![w].phase = "list",
                                  ![w].mseq = IF wr.kind = "append"
                                                 /\ Variant = "stale-sequence-number-on-retry"
                                              THEN metas[wr.base].last_seq + 1 ELSE wr.mseq]
    /\ UNCHANGED <<cat, metas, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged,
                   historyVars>>

WriteManifestList(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "list"
    /\ store' = store \cup {<<"l", w, wr.k, wr.attempt>>}
    /\ writers' = [writers EXCEPT ![w].phase = "metadata"]
    /\ UNCHANGED <<cat, metas, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged,
                   historyVars>>

\* Write this attempt's metadata file: immutable once written.
WriteMetadata(w) ==
    LET wr == writers[w]
        mid == <<w, wr.k, wr.attempt>>
    IN /\ wr.phase = "metadata"
       /\ metas' = Put(metas, mid, ApplyActions(w, wr))
       /\ store' = store \cup {MetaObj(mid)}
       /\ writers' = [writers EXCEPT ![w].phase = "swap"]
       /\ UNCHANGED <<cat, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged,
                      historyVars>>

\* The catalog's compare-and-swap, acknowledged to the writer. The flawed
\* rename-commit variant only checks here and renames later (Rename).
Swap(w) ==
    LET wr == writers[w]
        mid == <<w, wr.k, wr.attempt>>
    IN /\ wr.phase = "swap"
       /\ IF cat # wr.base
          THEN /\ writers' = [writers EXCEPT ![w].phase = "retry"]
               /\ UNCHANGED <<cat, metas, store, tableFiles, inflight, faultsOn,
                              faultsUsed, orphanRuns, aged, historyVars>>
          ELSE IF Variant = "rename-commit"
          THEN /\ writers' = [writers EXCEPT ![w].phase = "rename"]
               /\ UNCHANGED <<cat, metas, store, tableFiles, inflight, faultsOn,
                              faultsUsed, orphanRuns, aged, historyVars>>
          ELSE /\ CommitAcknowledged(w, wr, mid)
               /\ UNCHANGED <<metas, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged>>

\* Variant rename-commit: the second half of check-then-rename; it overwrites.
Rename(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "rename"
    /\ CommitAcknowledged(w, wr, <<w, wr.k, wr.attempt>>)
    /\ UNCHANGED <<metas, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged>>

NextPhase(kind) ==
    CASE kind = "append" -> "list"       \* data file and manifest are reused
      [] kind \in {"rollback", "expire", "tag", "fast_forward"} -> "metadata"
      [] OTHER -> "manifests"

\* Retry (after a conflict) and Resolve (after an unknown outcome): refresh;
\* if an earlier attempt landed, the operation committed; otherwise validate
\* against the refreshed base and start the next attempt.
Reconcile(w) ==
    LET wr == writers[w]
        resolving == wr.phase = "resolve"
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
          ELSE IF Variant # "no-revalidate" /\ ~Validate(wr)
          THEN FinishFailedS(w, wr, ~Justified(wr)) /\ UNCHANGED acked
          ELSE IF wr.kind \in {"rollback", "tag", "fast_forward"} /\ ~HasSnap(Current, wr.target)
          THEN Failed   \* even without validation: nothing to point at
          ELSE /\ writers' = [writers EXCEPT ![w] =
                       [wr EXCEPT !.phase = NextPhase(wr.kind),
                                  !.attempt = wr.attempt + 1, !.base = cat]]
               /\ UNCHANGED <<store, deleted, acked, outcomes>>
       /\ UNCHANGED <<cat, metas, tableFiles, inflight, faultsOn, faultsUsed, orphanRuns, aged,
                      hist, consumed, readerAt>>

Retry(w) == writers[w].phase = "retry" /\ Reconcile(w)
Resolve(w) == writers[w].phase = "resolve" /\ Reconcile(w)

(***************************************************************************)
(* Faults. Each spends one unit of FaultBudget.                            *)
(***************************************************************************)

\* Sets store, deleted, outcomes, writers: the writer does not know whether
\* its swap landed (the flawed variant takes it as failure and cleans up).
UnknownOutcome(w, wr) ==
    IF Variant = "cleanup-after-unknown"
    THEN DeleteObjects(OpObjects(w, wr.k)) /\ Finish(w, wr, "conflict")
    ELSE /\ writers' = [writers EXCEPT ![w] =
                [wr EXCEPT !.phase = "resolve", !.unknowns = wr.unknowns \cup {wr.base}]]
         /\ UNCHANGED <<store, deleted, outcomes>>

\* A storage write fails (definitely not written): the operation gives up.
WriteFails(w) ==
    LET wr == writers[w] IN
    /\ wr.phase \in WritePhases
    /\ FaultEnabled("write_fail")
    /\ SpendFault
    /\ FinishFailed(w, wr)
    /\ UNCHANGED <<cat, metas, tableFiles, inflight, orphanRuns, aged, hist, acked, consumed, readerAt>>

\* The swap request is rejected before it could have any effect.
SwapFails(w) ==
    /\ writers[w].phase = "swap"
    /\ FaultEnabled("swap_fail")
    /\ SpendFault
    /\ writers' = [writers EXCEPT ![w].phase = "retry"]
    /\ UNCHANGED <<cat, metas, store, tableFiles, inflight, orphanRuns, aged, historyVars>>

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
    /\ UNCHANGED <<metas, tableFiles, inflight, orphanRuns, aged, acked>>

\* The client times out; its request is still in flight and may land later.
SwapDelayed(w) ==
    LET wr == writers[w] IN
    /\ wr.phase = "swap"
    /\ FaultEnabled("swap_delayed")
    /\ SpendFault
    /\ inflight' = inflight \cup {<<w, wr.base, <<w, wr.k, wr.attempt>>>>}
    /\ UnknownOutcome(w, wr)
    /\ UNCHANGED <<cat, metas, tableFiles, orphanRuns, aged, hist, acked, consumed, readerAt>>

\* A writer dies between two phases; its files stay behind (orphans).
Crash(w) ==
    LET wr == writers[w] IN
    /\ wr.phase \notin {"plan", "done"}
    /\ FaultEnabled("crash")
    /\ SpendFault
    /\ Finish(w, wr, "crashed")
    /\ UNCHANGED <<cat, metas, store, tableFiles, inflight, orphanRuns, aged,
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
    /\ UNCHANGED <<metas, store, tableFiles, writers, faultsOn, faultsUsed, orphanRuns, aged,
                   acked, outcomes, deleted>>

\* A delayed swap request is lost for good.
Drop(req) ==
    /\ req \in inflight
    /\ inflight' = inflight \ {req}
    /\ UNCHANGED <<cat, metas, store, tableFiles, writers, faultsOn, faultsUsed,
                   orphanRuns, aged, historyVars>>

\* Faults stop before the budget is spent.
Heal ==
    /\ faultsOn
    /\ faultsOn' = FALSE
    /\ UNCHANGED <<cat, metas, store, tableFiles, inflight, writers, faultsUsed,
                   orphanRuns, aged, historyVars>>

\* No writer is working and no swap request is in flight (Python: quiet).
Quiet == (\A w \in Writers : writers[w].phase \in {"plan", "done"}) /\ inflight = {}

\* Delete data, delete, manifest and manifest-list objects no retained
\* snapshot reaches: while no writer is working, every one (the threshold is
\* "now"); while writers work, with OrphanAge, only those older than the
\* threshold (aged); the flawed variant: every one, any time.
RemoveOrphans ==
    LET live == UNION {Reach(x) : x \in Current.snaps}
        old == IF Quiet \/ Variant = "orphans-no-threshold" THEN store ELSE aged
    IN /\ orphanRuns < OrphanRunsMax
       /\ Quiet \/ Variant = "orphans-no-threshold" \/ (OrphanAge /\ aged # {})
       /\ DeleteObjects({o \in store : o[1] \in {"d", "x", "m", "l"} /\ o \notin live /\ o \in old})
       /\ orphanRuns' = orphanRuns + 1
       /\ UNCHANGED <<cat, metas, tableFiles, inflight, writers, faultsOn, faultsUsed, aged,
                      hist, acked, outcomes, consumed, readerAt>>

\* Time passes the orphan-removal threshold (12.2): every file in storage now
\* is older than it. Only while quiet: the threshold is older than the start
\* of every operation that works after it.
AgeFiles ==
    /\ OrphanAge /\ orphanRuns < OrphanRunsMax /\ Quiet /\ aged # store
    /\ aged' = store
    /\ UNCHANGED <<cat, metas, store, tableFiles, inflight, writers, faultsOn, faultsUsed,
                   orphanRuns, historyVars>>

\* Every writer is done and nothing is in flight: the system stops here. An
\* explicit stuttering step, so that TLC's deadlock check stays on and still
\* reports any other state without successors (Python: is_terminal).
Terminated ==
    /\ \A w \in Writers : writers[w].phase = "done"
    /\ inflight = {}
    /\ UNCHANGED vars

WriterNext(w) ==
    \/ \E kind \in Kinds, p \in {NO_PART} \cup 1..Partitions, r \in {"main", "b"} : Begin(w, kind, p, r)
    \/ WriteData(w) \/ WriteManifests(w) \/ WriteManifestList(w) \/ WriteMetadata(w)
    \/ Swap(w) \/ Rename(w) \/ Retry(w) \/ Resolve(w)
    \/ SwapFails(w) \/ AckLost(w) \/ SwapDelayed(w) \/ WriteFails(w) \/ Crash(w)

Delivery == \E req \in inflight : Deliver(req) \/ Drop(req)

Next ==
    \/ \E w \in Writers : WriterNext(w)
    \/ Delivery
    \/ Heal
    \/ RemoveOrphans
    \/ AgeFiles
    \/ Terminated

\* Writers keep taking steps and the network eventually delivers or drops
\* every delayed request. Heal, RemoveOrphans and AgeFiles need no fairness: nothing
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
\* parent is the head of its ref in the version it replaced.
LinearHistory ==
    /\ hist[Len(hist)] = cat
    /\ \A i \in 2..Len(hist) : metas[hist[i]].prev = hist[i - 1]
    /\ \A i \in Changes : \A x \in Post(i).snaps :
           x.id \notin Ids(Pre(i)) => x.parent = RefHead(Pre(i), Post(i).op.ref)

\* P2: every version acknowledged as committed is in the current version's chain.
NoLostCommit == acked \subseteq Range(Chain(metas, cat))

\* P3: snapshot ids are unique per version and introduced once along the
\* history; no row is live twice (delete files applied).
Introduced(i) == Ids(metas[hist[i]]) \ (IF i = 1 THEN {} ELSE Ids(metas[hist[i - 1]]))
NoDuplicateCommit ==
    /\ \A i \in 1..Len(hist) : \A x, y \in metas[hist[i]].snaps : x.id = y.id => x = y
    /\ \A i, j \in 1..Len(hist) : i < j => Introduced(i) \cap Introduced(j) = {}
    /\ \A x \in Current.snaps : \A f, g \in x.files :
           f # g => LiveOf(x, f) \cap LiveOf(x, g) = {}

\* P4: a reader (one pointer read, no listing) of any ref sees a committed
\* snapshot and no file of an operation that has not committed: every data or
\* delete file visible at a ref's head was written by an operation with a
\* version in the pointer's history, and none by an operation that ended
\* aborted (writer 0, the bootstrap, has no outcome).
ReadersSeeCommitted ==
    LET committedOps == {<<hist[i][1], hist[i][2]>> : i \in 1..Len(hist)}
    IN \A ref \in RefNames : \A x \in RefSnap(Current, ref) : \A f \in x.files \cup x.deletes :
           /\ f \in committedOps
           /\ f[1] # 0 => outcomes[f[1]][f[2]].res # "conflict"

\* P5: every commit's validations held over all snapshots between its starting
\* snapshot and the head of its ref in the version it replaced.
ValidationsHold(pre, post) ==
    LET op == post.op
        head == RefHead(pre, op.ref)
        btw == Between(pre, head, op.start)
    IN IF op.kind \in {"append", "expire", "upsert", "cdc_update"} THEN TRUE
       ELSE IF op.kind = "tag" THEN RefHead(pre, "t") = op.start
       ELSE IF op.kind = "fast_forward"
            THEN pre.head = op.start /\ IsAncestor(pre, op.target, op.start)
       ELSE IF ~IsAncestor(pre, head, op.start) THEN FALSE
       ELSE /\ op.kind \in {"delete", "rewrite", "row_delete", "row_update"} =>
                   \A x \in btw : op.files \subseteq x.files
            /\ op.kind = "rewrite" => \A x \in btw : ~AddsPositionDeleteFor(pre, x, op.files)
            /\ op.kind \in {"row_delete", "row_update"} =>
                   \A x \in btw : /\ ~AddsDeleteFor(pre, x, op.files)
                                 /\ IsolationLevel = "serializable" => ~AddsDataIn(pre, x, op.part)
            /\ (op.kind = "overwrite" /\ IsolationLevel = "serializable") =>
                   \A x \in btw : ~Touches(pre, x, op.part)
            /\ op.kind = "rollback" => btw = {}
ValidationSound == \A i \in Changes : ValidationsHold(Pre(i), Post(i))

\* P6: each commit's effect on the rows of its ref equals its operation applied
\* to the version it replaced. Rows are bags: [row -> number of live copies].
RowBag(files) ==
    [r \in UNION {content[f] : f \in files} |-> Cardinality({f \in files : r \in content[f]})]
BagCount(b, r) == IF r \in DOMAIN b THEN b[r] ELSE 0
BagPlus(a, b) == [r \in DOMAIN a \cup DOMAIN b |-> BagCount(a, r) + BagCount(b, r)]
BagMinus(a, b) == [r \in {x \in DOMAIN a : a[x] > BagCount(b, x)} |-> a[r] - BagCount(b, r)]
EmptyBag == [r \in {} |-> 0]
\* The rows a reader of ref sees in meta (an empty bag when the ref does not exist).
RefBag(meta, ref) ==
    IF RefSnap(meta, ref) = {} THEN EmptyBag
    ELSE LET x == CHOOSE y \in RefSnap(meta, ref) : TRUE IN LiveBag(x, x.files)
RefFiles(meta, ref) == UNION {x.files : x \in RefSnap(meta, ref)}
OtherRefsKept(pre, post, moved) ==
    \A ref \in RefNames \ moved : RefHead(pre, ref) = RefHead(post, ref)
IsolationHolds(pre, post, mid) ==
    LET op == post.op
        ref == op.ref
        fid == <<mid[1], mid[2]>>
        moved == CASE op.kind = "tag" -> {"t"}
                   [] op.kind \in {"fast_forward", "rollback"} -> {"main"}
                   [] op.kind = "expire" -> {}
                   [] OTHER -> {ref}
        before == RefBag(pre, ref)
        after == RefBag(post, ref)
        preSnap == CHOOSE y \in RefSnap(pre, ref) : TRUE
        outside == LiveBag(preSnap, preSnap.files \ FilesIn(preSnap.files, op.part))
        r == op.row[2]
        withoutR == [x \in DOMAIN before \ {r} |-> before[x]]
    IN /\ OtherRefsKept(pre, post, moved)
       /\ CASE op.kind \in {"rollback", "fast_forward"} ->
                 /\ pre.head = op.start /\ post.head = op.target
                 /\ op.kind = "fast_forward" => IsAncestor(post, op.target, op.start)
            [] op.kind = "tag" -> RefHead(pre, "t") = op.start /\ RefHead(post, "t") = op.target
            [] op.kind = "append" -> after = BagPlus(before, RowBag({fid}))
            [] op.kind = "overwrite" ->
                 /\ IsolationLevel = "serializable" => op.files = FilesIn(preSnap.files, op.part)
                 /\ after = BagPlus(outside, RowBag({fid}))
            [] op.kind = "upsert" -> after = BagPlus(outside, RowBag({fid}))
            \* The row's last version is added; the first, deleted in the same commit, is not.
            [] op.kind = "cdc_update" -> after = BagPlus(before, (fid :> 1))
            [] op.kind = "delete" ->
                 op.files \subseteq RefFiles(pre, ref) /\ after = BagMinus(before, LiveBag(preSnap, op.files))
            [] op.kind = "rewrite" -> op.files \subseteq RefFiles(pre, ref) /\ after = before
            \* DELETE / UPDATE ... WHERE key = r, applied to the version it replaced:
            \* every copy of row r goes (an update writes it once more).
            [] op.kind = "row_delete" -> after = withoutR
            [] op.kind = "row_update" -> after = BagPlus(withoutR, (r :> 1))
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

\* L3: an operation scoped to a partition ends in conflict by a failed
\* validation only if a commit in between overlapped its partition (or its
\* starting snapshot left its ref's ancestry): operations on disjoint
\* partitions both commit. An outcome never changes once recorded, so this
\* is an invariant.
NoSpuriousConflict == \A w \in Writers, k \in 1..Ops : ~outcomes[w][k].spurious

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
