------------------------------ MODULE IcebergV3 ------------------------------
(***************************************************************************)
(* Iceberg format v3 commits: deletion vectors (DVs) and row lineage.      *)
(* spec/PROTOCOL.md section 19; a transliteration of model/v3.py (same     *)
(* actions, variables, ids and flawed variants) with the properties of     *)
(* model/checks/v3.py as invariants (spec/PROPERTIES.md P11-P14, and P6    *)
(* and L3 in their v3 reading). tests/tla/test_v3_agreement.py checks that *)
(* TLC and the Python explorer reach the same set of states.               *)
(*                                                                         *)
(* The table starts with data file <<0, 1>> (two rows) and, with          *)
(* DataFiles = 2, <<0, 2>> (one row). With PositionDeletes = k > 0 it was  *)
(* written as v2 and upgraded: <<0, 1>> has 2 + k rows, position delete    *)
(* file j deletes position j, no file has a first-row-id (next-row-id 0)   *)
(* until the first v3 commit assigns them. Each writer runs one operation of *)
(* the kind Roles names for it: Begin (plan at the current version),       *)
(* WriteData (data file, DV, an append's manifest), WriteMetadata (the     *)
(* operation applied to the attempt's base: first-row-id assigned here),   *)
(* Swap, and Retry (validate against what committed meanwhile, then the    *)
(* next attempt). Faults are the v2 module's concern (IcebergCommit).      *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANTS
    Roles,          \* one operation kind per writer: a sequence
    DvPolicy,       \* "conflict" | "merge": what an engine does with concurrent DVs on one file
    AttemptsMax,    \* attempts per operation (num-retries + 1)
    Variant,        \* "v3-correct" or a flawed variant (docs/variants.md)
    DataFiles,      \* 1 or 2 data files in the bootstrap table
    PositionDeletes \* 0: created as v3; 1 or 2: upgraded from v2 with that many position delete files

Writers == 1..Len(Roles)
OP == 1
NO_FILE == <<0, 0>>
NO_META == <<0, 0, 0>>
NO_ID == -1
BOOT == <<0, 1, 1>>
RowKinds == {"row_delete", "row_update", "cow_delete"}
DvKinds == {"row_delete", "row_update"}
FileKinds == {"rewrite", "cow_delete"}

VARIABLES
    cat,            \* the catalog's pointer
    metas,          \* MetaId -> [prev, files, dvs, next_row_id, op]: metadata versions written
    content,        \* FileId -> sequence of [key, id]: the rows of each data file
    writers         \* Writers -> writer record
VARIABLES           \* history (auxiliary): only the properties read them
    hist,           \* every value the pointer has taken
    outcomes        \* Writers -> [res, spurious]

vars == <<cat, metas, content, writers, hist, outcomes>>

-----------------------------------------------------------------------------
(* Reading a version *)

Row(k) == [key |-> k, id |-> NO_ID]
Upgraded == PositionDeletes > 0
BootFiles == IF Upgraded THEN (<<0, 1>> :> NO_ID)
             ELSE IF DataFiles = 1 THEN (<<0, 1>> :> 0) ELSE (<<0, 1>> :> 0 @@ <<0, 2>> :> 2)
BootRows ==
    IF Upgraded THEN (<<0, 1>> :> [i \in 1..(2 + PositionDeletes) |-> Row(<<0, 1, i>>)])
    ELSE IF DataFiles = 1 THEN (<<0, 1>> :> <<Row(<<0, 1, 1>>), Row(<<0, 1, 2>>)>>)
    ELSE (<<0, 1>> :> <<Row(<<0, 1, 1>>), Row(<<0, 1, 2>>)>> @@ <<0, 2>> :> <<Row(<<0, 2, 1>>)>>)
BootPosDeletes == {[file |-> <<0, 1>>, positions |-> {j}] : j \in 1..PositionDeletes}
BootNextRowId == IF Upgraded THEN 0 ELSE 1 + DataFiles

DvPositions(m, f) == UNION {d.positions : d \in {e \in m.dvs : e.file = f}}
PosDeletePositions(m, f) == UNION {d.positions : d \in {e \in m.pos_deletes : e.file = f}}
\* Readers ignore position delete files for a data file that has a DV (spec "Deletion Vectors").
DeletedPositions(m, f) == IF \E d \in m.dvs : d.file = f THEN DvPositions(m, f) ELSE PosDeletePositions(m, f)
RowId(m, f, i) == IF content[f][i].id # NO_ID THEN content[f][i].id
                  ELSE IF m.files[f] = NO_ID THEN NO_ID ELSE m.files[f] + i - 1
Live(m) == UNION {{<<f, i>> : i \in {j \in 1..Len(content[f]) : j \notin DeletedPositions(m, f)}} :
                  f \in DOMAIN m.files}
KeyAt(p) == content[p[1]][p[2]].key
LiveKeys(m) == {KeyAt(p) : p \in Live(m)}
Count(m, k) == Cardinality({p \in Live(m) : KeyAt(p) = k})
AllKeys == UNION {{content[f][i].key : i \in 1..Len(content[f])} : f \in DOMAIN content}

RECURSIVE SortedSeq(_)
SortedSeq(S) == IF S = {} THEN <<>>
                ELSE LET x == CHOOSE y \in S : \A z \in S : y <= z IN <<x>> \o SortedSeq(S \ {x})

RECURSIVE Since(_, _)
\* The versions committed after `start` (start is on the chain of m).
Since(m, start) == IF m = start THEN {} ELSE {m} \cup Since(metas[m].prev, start)
\* <<version, DV>> for every DV a version committed after start added.
AddedDVs(start) == UNION {{<<x, d>> : d \in metas[x].dvs \ metas[metas[x].prev].dvs} : x \in Since(cat, start)}

-----------------------------------------------------------------------------
(* Fragments *)

Finish(w, res, spurious) ==
    /\ outcomes' = [outcomes EXCEPT ![w] = [res |-> res, spurious |-> spurious]]
    /\ writers' = [writers EXCEPT ![w].phase = "done"]

Choices(kind, m) ==
    IF kind \in RowKinds THEN Live(m)
    ELSE IF kind = "rewrite" THEN {<<f, 0>> : f \in DOMAIN m.files}
    ELSE {<<NO_FILE, 0>>}

\* The rows of the data file writer w's operation writes (<<>>: none).
NewRows(m, w, kind, f, pos) ==
    IF kind = "append" THEN <<Row(<<w, OP, 1>>)>>
    ELSE LET keep == IF kind \in FileKinds
                     THEN SortedSeq({i \in 1..Len(content[f]) :
                                     i \notin DeletedPositions(m, f) /\ (kind # "cow_delete" \/ i # pos)})
                     ELSE IF kind = "row_update" THEN <<pos>> ELSE <<>>
         IN [j \in 1..Len(keep) |-> [key |-> content[f][keep[j]].key, id |-> RowId(m, f, keep[j])]]

NewFile(w) == IF <<w, OP>> \in DOMAIN content THEN <<w, OP>> ELSE NO_FILE

LexLeq(a, b) == a[1] < b[1] \/ (a[1] = b[1] /\ a[2] <= b[2])
\* files with each file of S (none has a first-row-id) assigned one from `next` on, in order.
RECURSIVE AssignIds(_, _, _)
AssignIds(files, next, S) ==
    IF S = {} THEN files
    ELSE LET f == CHOOSE g \in S : \A h \in S : LexLeq(g, h)
         IN AssignIds([files EXCEPT ![f] = next], next + Len(content[f]), S \ {f})
RECURSIVE SumRows(_)
SumRows(S) == IF S = {} THEN 0 ELSE LET f == CHOOSE g \in S : TRUE IN Len(content[f]) + SumRows(S \ {f})

ApplyActions(w) ==
    LET wr == writers[w]
        base == metas[wr.base]
        files1 == IF wr.kind \in FileKinds
                  THEN [f \in DOMAIN base.files \ {wr.file} |-> base.files[f]] ELSE base.files
        supersede == wr.kind \in FileKinds \/ (wr.kind \in DvKinds /\ Variant # "replacement-dv-keeps-old")
        dvs1 == IF supersede THEN {d \in base.dvs : d.file # wr.file} ELSE base.dvs
        pds1 == IF supersede THEN {d \in base.pos_deletes : d.file # wr.file} ELSE base.pos_deletes
        dvs2 == IF wr.kind \in DvKinds
                THEN dvs1 \cup {[id |-> <<w, OP, wr.attempt>>, file |-> wr.file, positions |-> wr.dv]}
                ELSE dvs1
        fid == NewFile(w)
        first == IF wr.kind = "append" /\ Variant = "stale-first-row-id-on-retry"
                 THEN wr.mfirst ELSE base.next_row_id
        files2 == IF fid # NO_FILE THEN (fid :> first) @@ files1 ELSE files1
        next2 == IF fid # NO_FILE THEN base.next_row_id + Len(content[fid]) ELSE base.next_row_id
        \* the manifest list assigns first-row-ids: the new manifest's, then an upgraded table's files
        unassigned == {f \in DOMAIN files2 : files2[f] = NO_ID}
    IN [prev |-> wr.base,
        files |-> AssignIds(files2, next2, unassigned),
        dvs |-> dvs2,
        pos_deletes |-> pds1,
        next_row_id |-> next2 + SumRows(unassigned),
        op |-> [kind |-> wr.kind, start |-> wr.start, file |-> wr.file, pos |-> wr.pos, new |-> fid]]

Mergeable == IF Variant = "merge-over-overwrite-dv" THEN {"row_delete", "row_update"} ELSE {"row_delete"}

Validate(w) ==
    LET wr == writers[w]
        added == AddedDVs(wr.start)
        mine == {p[1] : p \in {q \in added : q[2].file = wr.file}}
    IN IF wr.kind = "append" THEN TRUE
       ELSE IF wr.file \notin DOMAIN metas[cat].files THEN FALSE
       ELSE IF Variant = "dv-validation-over-window" /\ \E a, b \in added : a # b /\ a[2].file = b[2].file
            THEN FALSE
       ELSE IF mine = {} THEN TRUE
       ELSE IF wr.kind = "row_delete" /\ DvPolicy = "merge" THEN \A x \in mine : metas[x].op.kind \in Mergeable
       ELSE FALSE

Justified(w) ==
    \/ writers[w].file \notin DOMAIN metas[cat].files
    \/ \E p \in AddedDVs(writers[w].start) : p[2].file = writers[w].file

-----------------------------------------------------------------------------
(* Actions *)

Init ==
    /\ cat = BOOT
    /\ metas = (BOOT :> [prev |-> NO_META, files |-> BootFiles, dvs |-> {}, pos_deletes |-> BootPosDeletes,
                         next_row_id |-> BootNextRowId,
                         op |-> [kind |-> "append", start |-> NO_META, file |-> NO_FILE, pos |-> 0,
                                 new |-> NO_FILE]])
    /\ content = BootRows
    /\ writers = [w \in Writers |-> [kind |-> Roles[w], phase |-> "plan", attempt |-> 0, base |-> NO_META,
                                     start |-> NO_META, file |-> NO_FILE, pos |-> 0, dv |-> {},
                                     mfirst |-> NO_ID]]
    /\ hist = <<BOOT>>
    /\ outcomes = [w \in Writers |-> [res |-> "pending", spurious |-> FALSE]]

Begin(w) ==
    /\ writers[w].phase = "plan"
    /\ LET wr == writers[w]
           m == metas[cat]
           picks == Choices(wr.kind, m)
       IN \/ /\ picks = {}
             /\ Finish(w, "noop", FALSE)
             /\ UNCHANGED <<cat, metas, content, hist>>
          \/ \E pick \in picks :
                LET rows == NewRows(m, w, wr.kind, pick[1], pick[2])
                IN /\ content' = IF rows # <<>> THEN content @@ (<<w, OP>> :> rows) ELSE content
                   /\ writers' = [writers EXCEPT ![w] = [wr EXCEPT !.phase = "data", !.attempt = 1,
                                     !.base = cat, !.start = cat, !.file = pick[1], !.pos = pick[2]]]
                   /\ UNCHANGED <<cat, metas, hist, outcomes>>

WriteData(w) ==
    /\ writers[w].phase = "data"
    /\ LET wr == writers[w]
           base == metas[wr.base]
           seed == IF Variant = "dv-seeded-from-start" THEN metas[wr.start] ELSE base
           \* position delete files are merged into the DV (spec "Deletion Vectors")
           held == IF Variant = "dv-ignores-position-deletes" THEN DvPositions(seed, wr.file)
                   ELSE DeletedPositions(seed, wr.file)
       IN writers' = [writers EXCEPT ![w] = [wr EXCEPT !.phase = "metadata",
              !.dv = IF wr.kind \in DvKinds THEN held \cup {wr.pos} ELSE wr.dv,
              !.mfirst = IF wr.kind = "append" /\ Variant = "stale-first-row-id-on-retry"
                         THEN base.next_row_id ELSE wr.mfirst]]
    /\ UNCHANGED <<cat, metas, content, hist, outcomes>>

WriteMetadata(w) ==
    /\ writers[w].phase = "metadata"
    /\ metas' = metas @@ (<<w, OP, writers[w].attempt>> :> ApplyActions(w))
    /\ writers' = [writers EXCEPT ![w].phase = "swap"]
    /\ UNCHANGED <<cat, content, hist, outcomes>>

Swap(w) ==
    /\ writers[w].phase = "swap"
    /\ IF cat # writers[w].base
       THEN /\ writers' = [writers EXCEPT ![w].phase = "retry"]
            /\ UNCHANGED <<cat, hist, outcomes>>
       ELSE LET mid == <<w, OP, writers[w].attempt>>
            IN /\ cat' = mid
               /\ hist' = Append(hist, mid)
               /\ Finish(w, "committed", FALSE)
    /\ UNCHANGED <<metas, content>>

Retry(w) ==
    /\ writers[w].phase = "retry"
    /\ LET wr == writers[w]
       IN IF wr.attempt >= AttemptsMax THEN Finish(w, "conflict", FALSE)
          ELSE IF ~Validate(w) THEN Finish(w, "conflict", ~Justified(w))
          ELSE /\ writers' = [writers EXCEPT ![w] = [wr EXCEPT
                     !.phase = IF wr.kind \in DvKinds THEN "data" ELSE "metadata",
                     !.attempt = wr.attempt + 1, !.base = cat]]
               /\ UNCHANGED outcomes
    /\ UNCHANGED <<cat, metas, content, hist>>

\* Every writer is done: the explicit final stuttering step (no deadlock).
Terminated ==
    /\ \A w \in Writers : writers[w].phase = "done"
    /\ UNCHANGED vars

Next == \/ \E w \in Writers : Begin(w) \/ WriteData(w) \/ WriteMetadata(w) \/ Swap(w) \/ Retry(w)
        \/ Terminated

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Properties (spec/PROPERTIES.md; model/checks/v3.py) *)

Pre(i) == metas[hist[i - 1]]
Post(i) == metas[hist[i]]

\* P11: at most one live DV per data file.
OneLiveDV == \A d, e \in metas[cat].dvs : d # e => d.file # e.file

\* P12: a data file's deleted positions only grow; no deleted row is live again.
DeletedRowsStayDeleted ==
    \A i \in 2..Len(hist) :
        /\ \A f \in DOMAIN Pre(i).files \cap DOMAIN Post(i).files :
               DeletedPositions(Pre(i), f) \subseteq DeletedPositions(Post(i), f)
        /\ \A k \in LiveKeys(Post(i)) :
               (\E j \in 1..(i - 1) : k \in LiveKeys(metas[hist[j]])) => k \in LiveKeys(Pre(i))

\* P13: over every version, a _row_id names one row and a row keeps one _row_id.
RowIdsUnique ==
    LET pairs == UNION {{<<KeyAt(p), RowId(metas[hist[j]], p[1], p[2])>> :
                         p \in {q \in Live(metas[hist[j]]) : RowId(metas[hist[j]], q[1], q[2]) # NO_ID}} :
                        j \in 1..Len(hist)}
    IN \A a, b \in pairs : (a[1] = b[1]) <=> (a[2] = b[2])

\* P14: next-row-id grows by the rows added (and an upgraded table's rows given ids); those
\* files' id ranges lie in between, apart; after a v3 commit every file has a first-row-id.
NextRowIdExact ==
    \A i \in 2..Len(hist) :
        LET added == {f \in DOMAIN Post(i).files : f \notin DOMAIN Pre(i).files \/ Pre(i).files[f] = NO_ID}
            lo == Pre(i).next_row_id
            hi == Post(i).next_row_id
            first(f) == Post(i).files[f]
        IN /\ \A f \in DOMAIN Post(i).files : Post(i).files[f] # NO_ID
           /\ hi = lo + SumRows(added)
           /\ \A f \in added : lo <= first(f) /\ first(f) + Len(content[f]) <= hi
           /\ \A f, g \in added : f # g =>
                 (first(f) + Len(content[f]) <= first(g) \/ first(g) + Len(content[g]) <= first(f))

\* P6 (v3 reading): each commit's effect on the rows equals its operation applied to its base.
Isolation ==
    \A i \in 2..Len(hist) :
        LET op == Post(i).op
            want(k) ==
                IF op.kind = "append"
                THEN Count(Pre(i), k) + Cardinality({j \in 1..Len(content[op.new]) : content[op.new][j].key = k})
                ELSE IF op.kind = "rewrite" THEN Count(Pre(i), k)
                ELSE IF k = content[op.file][op.pos].key
                     THEN (IF op.kind = "row_update" THEN 1 ELSE 0)
                     ELSE Count(Pre(i), k)
        IN \A k \in AllKeys : Count(Post(i), k) = want(k)

\* L3 (v3 reading): no conflict without a commit on the file the operation names.
NoSpuriousConflict == \A w \in Writers : ~outcomes[w].spurious

\* L2, as the explorer checks it in final states.
OperationsTerminate ==
    (\A w \in Writers : writers[w].phase = "done") => \A w \in Writers : outcomes[w].res # "pending"
=============================================================================
