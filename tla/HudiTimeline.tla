---------------------------- MODULE HudiTimeline ----------------------------
(***************************************************************************)
(* A Hudi-style timeline, parameterized by knobs: the same transition      *)
(* system as model/hudi.py (actions Begin, WriteFile, CheckKeys, Complete, *)
(* Compact) with the properties of docs/variants.md under the Python names.*)
(*                                                                         *)
(* Data files are tied to a commit only by the instant time in their name; *)
(* an instant is visible when t.commit exists (t \in Done). Two file       *)
(* groups exist at the start, G1 (key X) and G2 (key Y), by instant 0.     *)
(* Rollback deletes every data file named with its instant, whoever wrote  *)
(* it. After each completion the incremental consumer takes the visible    *)
(* files above its watermark, then moves the watermark to the largest      *)
(* completed instant.                                                      *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Writers,      \* writer ids, e.g. {1, 2}
          Ops,          \* operations per writer
          Kinds,        \* subset of {"insert", "append", "update"}
          Clock,        \* "monotonic" (may repeat a millisecond) | "skewed" (may lag)
          CC,           \* "none" | "optimistic" | "pessimistic"
          PkCheck,      \* BOOLEAN: primary-key conflict check
          PutIfAbsent,  \* BOOLEAN: instant files created only if absent
          TableType,    \* "cow" | "mor"
          Compactions   \* compaction runs (mor)

ASSUME Kinds \subseteq {"insert", "append", "update"} /\ Kinds # {}
ASSUME Clock \in {"monotonic", "skewed"} /\ CC \in {"none", "optimistic", "pessimistic"}
ASSUME PkCheck \in BOOLEAN /\ PutIfAbsent \in BOOLEAN /\ TableType \in {"cow", "mor"}

Boot == <<0, 0>>
G1 == <<0, 1>>
G2 == <<0, 2>>
X == <<"x", 0, 0>>
Y == <<"y", 0, 0>>
N == <<"n", 0, 0>>
MaxT == Cardinality(Writers) * Ops
Max(S) == CHOOSE m \in S : \A s \in S : s <= m
BootFiles == {[t |-> 0, group |-> G1, writer |-> Boot, kind |-> "base", rows |-> {<<X, Boot>>}],
              [t |-> 0, group |-> G2, writer |-> Boot, kind |-> "base", rows |-> {<<Y, Boot>>}]}
Idle(k) == [k |-> k, kind |-> "", phase |-> IF k <= Ops THEN "plan" ELSE "done", t |-> 0,
            todo |-> <<>>, keys |-> {}, groups |-> {}, beginIdx |-> 0, lone |-> FALSE]

VARIABLES
    inflight, done,   \* the timeline: t.inflight and t.commit files
    commits,          \* [0..MaxT -> files listed in t.commit]
    files,            \* data files in storage
    writers, lock, clock, compactionsDone,
    watermark, consumed,  \* the incremental consumer
    \* -- history (auxiliary) variables: only the invariants read them --
    completions,      \* Seq of [t, op, kind, keys, groups, beginIdx, files, value]
    outcomes, deleted,
    recorded, instFiles   \* instants completed at least once; their files then

vars == <<inflight, done, commits, files, writers, lock, clock, compactionsDone, watermark,
          consumed, completions, outcomes, deleted, recorded, instFiles>>

(* -- views ------------------------------------------------------------------ *)
Visible(fs, dn) == {f \in fs : f.t \in dn}
Rank(f) == <<f.t, IF f.kind = "compacted" THEN 1 ELSE 0, f.writer[1], f.writer[2]>>
RECURSIVE LexLess(_, _)
LexLess(a, b) == IF a = <<>> THEN b # <<>>
                 ELSE IF b = <<>> THEN FALSE
                 ELSE a[1] < b[1] \/ (a[1] = b[1] /\ LexLess(Tail(a), Tail(b)))
KeysOf(f) == {r[1] : r \in f.rows}
\* Per file group, the latest file (by Rank) holding a key gives its value.
Merge(fs) ==
    UNION {{<<k, (CHOOSE r \in (CHOOSE f \in {h \in fs : h.group = g /\ k \in KeysOf(h)} :
                                    \A h \in {h2 \in fs : h2.group = g /\ k \in KeysOf(h2)} :
                                        h = f \/ LexLess(Rank(h), Rank(f))).rows : r[1] = k)[2]>> :
             k \in UNION {KeysOf(f) : f \in {h \in fs : h.group = g}}} :
           g \in {f.group : f \in fs}}
SnapshotView(fs, dn) == Merge(Visible(fs, dn))
ReadOptimizedView(fs, dn) == Merge({f \in Visible(fs, dn) : f.kind # "log"})

Init ==
    /\ inflight = {} /\ done = {0}
    /\ commits = [t \in 0..MaxT |-> IF t = 0 THEN BootFiles ELSE {}]
    /\ files = BootFiles
    /\ writers = [w \in Writers |-> Idle(1)]
    /\ lock = 0 /\ clock = 0 /\ compactionsDone = 0
    /\ watermark = 0 /\ consumed = BootFiles
    /\ completions = << [t |-> 0, op |-> Boot, kind |-> "bootstrap", keys |-> {X, Y},
                         groups |-> {G1, G2}, beginIdx |-> 0, files |-> BootFiles,
                         value |-> Merge(BootFiles)] >>
    /\ outcomes = [w \in Writers |-> [k \in 1..Ops |-> <<"pending", FALSE>>]]
    /\ deleted = {}
    /\ recorded = {0} /\ instFiles = [t \in 0..MaxT |-> IF t = 0 THEN BootFiles ELSE {}]

(* -- actions ---------------------------------------------------------------- *)
InstantChoices ==
    LET ts == IF Clock = "monotonic"
              THEN {Max({clock, 1}), clock + 1}
              ELSE 1..MaxT
    IN IF PutIfAbsent THEN ts \ (inflight \cup done) ELSE ts

\* The file group of the first visible file (by instant, writer) holding key k.
GroupOf(k) ==
    LET hs == {f \in Visible(files, done) : k \in KeysOf(f)}
    IN (CHOOSE f \in hs : \A h \in hs : h = f \/ LexLess(<<f.t, f.writer[1], f.writer[2]>>,
                                                             <<h.t, h.writer[1], h.writer[2]>>)).group

Todo(w, kind) ==
    LET val == <<w, writers[w].k>>
        ftype == IF TableType = "mor" THEN "log" ELSE "base"
        known == \E f \in Visible(files, done) : N \in KeysOf(f)
    IN CASE kind = "update" -> << <<G1, ftype, {<<X, val>>}>>, <<G2, ftype, {<<Y, val>>}>> >>
         [] kind = "insert" -> << IF known THEN <<GroupOf(N), ftype, {<<N, val>>}>>
                                            ELSE <<val, "base", {<<N, val>>}>> >>
         [] kind = "append" -> << <<val, "base", {<<<<"a", w, writers[w].k>>, val>>}>> >>

\* Take the lock (pessimistic), draw an instant, create t.inflight, look up the index.
Begin(w, kind, t) ==
    LET todo == Todo(w, kind) IN
    /\ writers[w].phase = "plan"
    /\ CC # "pessimistic" \/ lock = 0
    /\ t \in InstantChoices
    /\ inflight' = IF t \in done THEN inflight ELSE inflight \cup {t}
    /\ clock' = Max({clock, t})
    /\ lock' = IF CC = "pessimistic" THEN w ELSE lock
    /\ writers' = [writers EXCEPT ![w] =
           [k |-> @.k, kind |-> kind, phase |-> "write", t |-> t, todo |-> todo,
            keys |-> UNION {{r[1] : r \in todo[i][3]} : i \in 1..Len(todo)},
            groups |-> {todo[i][1] : i \in 1..Len(todo)},
            beginIdx |-> Len(completions),
            lone |-> \A v \in Writers \ {w} : writers[v].phase = "done"]]
    /\ UNCHANGED <<done, commits, files, compactionsDone, watermark, consumed, completions,
                   outcomes, deleted, recorded, instFiles>>

WriteFile(w) ==
    LET wr == writers[w]
        f == [t |-> wr.t, group |-> wr.todo[1][1], writer |-> <<w, wr.k>>,
              kind |-> wr.todo[1][2], rows |-> wr.todo[1][3]]
    IN /\ wr.phase = "write"
       /\ files' = files \cup {f}
       /\ writers' = [writers EXCEPT ![w].todo = Tail(wr.todo),
                                     ![w].phase = IF Len(wr.todo) > 1 THEN "write"
                                                  ELSE IF CC = "none" /\ PkCheck THEN "check"
                                                  ELSE "complete"]
       /\ UNCHANGED <<inflight, done, commits, lock, clock, compactionsDone, watermark,
                      consumed, completions, outcomes, deleted, recorded, instFiles>>

Conflict(w, onKeys, onGroups) ==
    \E i \in (writers[w].beginIdx + 1)..Len(completions) :
        \/ onGroups /\ completions[i].groups \cap writers[w].groups # {}
        \/ onKeys /\ completions[i].keys \cap writers[w].keys # {}

Finish(w, res) ==
    /\ outcomes' = [outcomes EXCEPT ![w][writers[w].k] = <<res, writers[w].lone>>]
    /\ lock' = IF lock = w THEN 0 ELSE lock
    /\ writers' = [writers EXCEPT ![w] = Idle(writers[w].k + 1)]

\* Delete every data file named with this instant (whoever wrote it).
Rollback(w) ==
    LET t == writers[w].t
        gone == {f \in files : f.t = t}
    IN /\ files' = files \ gone
       /\ deleted' = deleted \cup gone
       /\ inflight' = IF t \in done THEN inflight ELSE inflight \ {t}
       /\ Finish(w, "conflict")
       /\ UNCHANGED <<done, commits, clock, compactionsDone, watermark, consumed, completions,
                      recorded, instFiles>>

Commit(w) ==
    LET wr == writers[w]
        mine == {f \in files : f.writer = <<w, wr.k>>}
        dn == done \cup {wr.t}
        vis == Visible(files, dn)
    IN /\ done' = dn
       /\ inflight' = inflight \ {wr.t}
       /\ commits' = [commits EXCEPT ![wr.t] = mine]
       /\ IF wr.t \notin done
          THEN /\ recorded' = recorded \cup {wr.t}
               /\ instFiles' = [instFiles EXCEPT ![wr.t] =
                                    {f \in files : f.t = wr.t /\ f.kind # "compacted"}]
          ELSE UNCHANGED <<recorded, instFiles>>
       /\ completions' = Append(completions,
              [t |-> wr.t, op |-> <<w, wr.k>>, kind |-> wr.kind, keys |-> wr.keys,
               groups |-> wr.groups, beginIdx |-> wr.beginIdx, files |-> mine,
               value |-> Merge(vis)])
       /\ consumed' = consumed \cup {f \in vis : f.t > watermark /\ f.kind # "compacted"}
       /\ watermark' = Max(dn)
       /\ Finish(w, "committed")
       /\ UNCHANGED <<files, clock, compactionsDone, deleted>>

CheckKeys(w) ==
    /\ writers[w].phase = "check"
    /\ IF Conflict(w, TRUE, FALSE)
       THEN Rollback(w)
       ELSE /\ writers' = [writers EXCEPT ![w].phase = "complete"]
            /\ UNCHANGED <<inflight, done, commits, files, lock, clock, compactionsDone,
                           watermark, consumed, completions, outcomes, deleted, recorded,
                           instFiles>>

Complete(w) ==
    /\ writers[w].phase = "complete"
    /\ IF \/ CC \in {"optimistic", "pessimistic"} /\ Conflict(w, PkCheck, CC = "optimistic")
          \/ PutIfAbsent /\ writers[w].t \in done      \* creating t.commit failed
       THEN Rollback(w)
       ELSE Commit(w)

Compactable ==
    LET vis == Visible(files, done) IN
    {g \in {f.group : f \in vis} :
        LET fs == {f \in vis : f.group = g}
            baseT == IF \E f \in fs : f.kind # "log" THEN Max({h.t : h \in {f \in fs : f.kind # "log"}})
                     ELSE 0
            topT == Max({f.t : f \in fs})
        IN /\ \E f \in fs : f.kind = "log" /\ f.t >= baseT
           /\ ~\E f \in fs : f.kind = "compacted" /\ f.t = topT}

\* Materialize file group g's snapshot content as a base file (read-optimized view).
Compact(g) ==
    LET fs == {f \in Visible(files, done) : f.group = g} IN
    /\ compactionsDone < Compactions
    /\ g \in Compactable
    /\ files' = files \cup {[t |-> Max({f.t : f \in fs}), group |-> g, writer |-> Boot,
                            kind |-> "compacted", rows |-> Merge(fs)]}
    /\ compactionsDone' = compactionsDone + 1
    /\ UNCHANGED <<inflight, done, commits, writers, lock, clock, watermark, consumed,
                   completions, outcomes, deleted, recorded, instFiles>>

Finished == \A w \in Writers : writers[w].phase = "done"
Terminating == Finished /\ UNCHANGED vars

Next ==
    \/ \E w \in Writers :
        \/ \E kind \in Kinds, t \in 1..(MaxT + 1) : Begin(w, kind, t)
        \/ WriteFile(w) \/ CheckKeys(w) \/ Complete(w)
    \/ \E g \in Compactable : Compact(g)
    \/ Terminating

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties (docs/variants.md, "interpreted for Hudi").                  *)
(***************************************************************************)
C(i) == completions[i]
Ops1 == 1..Len(completions)
View == SnapshotView(files, done)

LinearHistory == \A i, j \in Ops1 : C(i).t = C(j).t => C(i).op = C(j).op

NoLostCommit ==
    \A i \in Ops1 : \A f \in C(i).files : \A r \in f.rows :
        \/ r \in View
        \/ \E j \in Ops1 : r[1] \in C(j).keys /\
               LexLess(<<C(i).t, C(i).op[1], C(i).op[2]>>, <<C(j).t, C(j).op[1], C(j).op[2]>>)

NoDuplicateCommit == \A p, q \in View : p[1] = q[1] => p = q

ReadersSeeCommitted ==
    /\ \A f \in Visible(files, done) : f.kind = "compacted" \/ \E i \in Ops1 : C(i).op = f.writer
    /\ TableType = "mor" => \E i \in Ops1 : C(i).value = ReadOptimizedView(files, done)

ValidationSound ==
    \A i \in Ops1 : \A j \in (C(i).beginIdx + 1)..(i - 1) :
        C(i).groups \cap C(j).groups = {} /\ C(i).keys \cap C(j).keys = {}

Isolation ==
    \A i \in 2..Len(completions) :
        C(i).value = {kv \in C(i - 1).value : kv[1] \notin C(i).keys}
                     \cup UNION {f.rows : f \in C(i).files}

TimeTravelImmutable ==
    \A t \in recorded : {f \in files : f.t = t /\ f.kind # "compacted"} = instFiles[t]

NoDanglingRefs == \A t \in done : commits[t] \subseteq files

CleanupSafe == \A i \in Ops1 : C(i).files \cap deleted = {}

IncrementalComplete ==
    \A f \in Visible(files, done) :
        (f.t <= watermark /\ f.kind # "compacted") => f \in consumed

OperationsTerminate ==
    Finished => \A w \in Writers, k \in 1..Ops : outcomes[w][k][1] # "pending"

LoneWriterCommits ==
    Finished => \A w \in Writers, k \in 1..Ops :
                    outcomes[w][k][2] => outcomes[w][k][1] = "committed"
=============================================================================
