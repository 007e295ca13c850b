----------------------------- MODULE HiveTable -----------------------------
(***************************************************************************)
(* A Hive-style table whose state is a directory listing: no pointer, no   *)
(* snapshots, no commit point. Writers put data files straight into the    *)
(* table directory; an overwrite (INSERT OVERWRITE ... SELECT from the     *)
(* table) reads the rows, deletes whatever is listed, then writes one file *)
(* (1, 0) holding the rows it read plus one new row; readers list the      *)
(* directory and open the files later. The same transition system as      *)
(* model/hive.py (actions Begin, DeleteOld, WriteFile, ReadList, ReadOpen) *)
(* with the properties of docs/variants.md under the Python names.         *)
(* P1 LinearHistory and P10 IncrementalComplete are n/a for this format.   *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets

CONSTANTS Writers,       \* writer ids, e.g. {1, 2}
          Ops,           \* operations per writer
          Kinds,         \* subset of {"append", "overwrite"}
          AppendFiles,   \* files (tasks) per append
          Reads,         \* list-then-open reads by the one reader
          MaxCopies      \* bound on the copy-suffix search (never reached)

ASSUME Kinds \subseteq {"append", "overwrite"} /\ Kinds # {}
ASSUME AppendFiles \in Nat \ {0} /\ Ops \in Nat \ {0} /\ Reads \in Nat

BootRow == <<0, 1, 1>>
BootFile == <<1, 0>>
NoReader == <<>>   \* else <<names>>: a set of names listed and not yet opened
Idle(k) == [k |-> k, kind |-> "", phase |-> IF k <= Ops THEN "plan" ELSE "done",
            written |-> 0, read |-> {}, lone |-> FALSE]

VARIABLES
    dir,         \* set of <<name, rows>>: the directory listing
    writers,     \* [Writers -> writer record]
    reader,      \* <<names listed and not yet opened>>, or NoReader
    readsDone,
    \* -- history (auxiliary) variables: only the invariants read them --
    hist,        \* Seq of [op, kind, read, listing]: the committed values
    ackedRows,   \* rows written by completed operations
    outcomes,    \* [Writers -> [1..Ops -> <<result, lone>>]]
    replaced     \* <<name, rows>> deleted or overwritten since the last completion

vars == <<dir, writers, reader, readsDone, hist, ackedRows, outcomes, replaced>>

Names(d) == {p[1] : p \in d}
RowSet(d) == UNION {p[2] : p \in d}
\* The listing's rows as a bag (row -> number of files holding it).
Bag(d) == [r \in RowSet(d) |-> Cardinality({p \in d : r \in p[2]})]

Init ==
    /\ dir = {<<BootFile, {BootRow}>>}
    /\ writers = [w \in Writers |-> Idle(1)]
    /\ reader = NoReader
    /\ readsDone = 0
    /\ hist = << [op |-> <<0, 0>>, kind |-> "append", read |-> {},
                  listing |-> {<<BootFile, {BootRow}>>}] >>
    /\ ackedRows = {BootRow}
    /\ outcomes = [w \in Writers |-> [k \in 1..Ops |-> <<"pending", FALSE>>]]
    /\ replaced = {}

Begin(w, kind) ==
    /\ writers[w].phase = "plan"
    /\ writers' = [writers EXCEPT ![w] =
           [k |-> @.k, kind |-> kind,
            phase |-> IF kind = "overwrite" THEN "delete" ELSE "write",
            written |-> 0, read |-> IF kind = "overwrite" THEN RowSet(dir) ELSE {},
            lone |-> \A v \in Writers \ {w} : writers[v].phase = "done"]]
    /\ UNCHANGED <<dir, reader, readsDone, hist, ackedRows, outcomes, replaced>>

\* Delete whatever is listed now, not only what the overwrite read.
DeleteOld(w) ==
    /\ writers[w].phase = "delete"
    /\ dir' = {}
    /\ replaced' = replaced \cup dir
    /\ writers' = [writers EXCEPT ![w].phase = "write"]
    /\ UNCHANGED <<reader, readsDone, hist, ackedRows, outcomes>>

FreeCopy(d, i) == CHOOSE c \in 0..MaxCopies :
                      /\ <<i, c>> \notin Names(d)
                      /\ \A c2 \in 0..(c - 1) : <<i, c2>> \in Names(d)

\* An append writes its next file; an overwrite its one file. The last write
\* completes the operation: the listing then is a committed value.
WriteFile(w) ==
    LET wr == writers[w]
        i == wr.written + 1
        name == IF wr.kind = "append" THEN <<i, FreeCopy(dir, i)>> ELSE BootFile
        rows == IF wr.kind = "append" THEN {<<w, wr.k, i>>} ELSE wr.read \cup {<<w, wr.k, 1>>}
        old == {p \in dir : p[1] = name}
        newDir == (dir \ old) \cup {<<name, rows>>}
        last == wr.kind = "overwrite" \/ i = AppendFiles
        newRows == IF wr.kind = "append" THEN {<<w, wr.k, j>> : j \in 1..i} ELSE {<<w, wr.k, 1>>}
    IN /\ wr.phase = "write"
       /\ dir' = newDir
       /\ IF last
          THEN /\ hist' = Append(hist, [op |-> <<w, wr.k>>, kind |-> wr.kind,
                                        read |-> wr.read, listing |-> newDir])
               /\ ackedRows' = ackedRows \cup newRows
               /\ outcomes' = [outcomes EXCEPT ![w][wr.k] = <<"committed", wr.lone>>]
               /\ replaced' = {}
               /\ writers' = [writers EXCEPT ![w] = Idle(wr.k + 1)]
          ELSE /\ replaced' = replaced \cup old
               /\ writers' = [writers EXCEPT ![w].written = i]
               /\ UNCHANGED <<hist, ackedRows, outcomes>>
       /\ UNCHANGED <<reader, readsDone>>

ReadList ==
    /\ reader = NoReader /\ readsDone < Reads
    /\ reader' = <<Names(dir)>>
    /\ UNCHANGED <<dir, writers, readsDone, hist, ackedRows, outcomes, replaced>>

ReadOpen ==
    /\ reader # NoReader
    /\ reader' = NoReader /\ readsDone' = readsDone + 1
    /\ UNCHANGED <<dir, writers, hist, ackedRows, outcomes, replaced>>

Finished == (\A w \in Writers : writers[w].phase = "done") /\ reader = NoReader

\* An explicit terminal step, so that a final state is not a deadlock.
Terminating == Finished /\ UNCHANGED vars

Next ==
    \/ \E w \in Writers : \/ \E kind \in Kinds : Begin(w, kind)
                          \/ DeleteOld(w)
                          \/ WriteFile(w)
    \/ ReadList \/ ReadOpen
    \/ Terminating

Spec == Init /\ [][Next]_vars

(***************************************************************************)
(* Properties (docs/variants.md, "interpreted for Hive").                  *)
(***************************************************************************)
Quiescent == \A w \in Writers : writers[w].phase \in {"plan", "done"}

NoLostCommit == Quiescent => ackedRows \subseteq RowSet(dir)

NoDuplicateCommit == \A r \in RowSet(dir) : Bag(dir)[r] = 1

ReadersSeeCommitted == \E i \in 1..Len(hist) : Bag(hist[i].listing) = Bag(dir)

ValidationSound ==
    \A i \in 2..Len(hist) :
        hist[i].kind = "overwrite" => hist[i].read = RowSet(hist[i - 1].listing)

\* Serializable: append adds its rows; overwrite keeps the rows, adds its row.
Expected(prev, c) ==
    LET new == IF c.kind = "append"
               THEN {r \in RowSet(c.listing) : r[1] = c.op[1] /\ r[2] = c.op[2]}
               ELSE {<<c.op[1], c.op[2], 1>>}
    IN [r \in RowSet(prev) \cup new |-> IF r \in new THEN 1 ELSE Bag(prev)[r]]

Isolation ==
    \A i \in 2..Len(hist) : Bag(hist[i].listing) = Expected(hist[i - 1].listing, hist[i])

TimeTravelImmutable ==
    \A i, j \in 1..Len(hist) :
        \A p \in hist[i].listing, q \in hist[j].listing : p[1] = q[1] => p[2] = q[2]

NoDanglingRefs == reader # NoReader => reader[1] \subseteq Names(dir)

CleanupSafe == hist[Len(hist)].listing \cap replaced = {}

OperationsTerminate ==
    Finished => \A w \in Writers, k \in 1..Ops : outcomes[w][k][1] # "pending"

LoneWriterCommits ==
    Finished => \A w \in Writers, k \in 1..Ops :
                    outcomes[w][k][2] => outcomes[w][k][1] = "committed"
=============================================================================
