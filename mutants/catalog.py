"""The curated mutants: bugs a contributor could plausibly write in the reference
implementation, one per class of commit-protocol bug (mutants/__init__.py).

Each mutant replaces one exact snippet of one file. `area` says which part of the code it
breaks; `model_covers` says whether the conformance model has that area (a mutant there
must be killed by `icefloe conform` itself; the others are killed by unit tests). Since
issue 12 the model has partitions, row deltas with sequence numbers and refs, and the
suite's table with them (conformance/coverage/rows.py): conform's directed programs kill
the mutants of those areas, position-delete-same-sequence among them since the model's
cdc_update (a row written twice in one commit, its first version deleted by position in
the data file the same commit adds, as Flink's CDC writer does) gives a position delete
its data file's sequence number. The blind position-delete-path-spelling is left to its
unit test and is not a conformance bug: a spec-conforming position delete or DV names its
data file exactly as the manifest entry does (spec "Position Delete Files": file_path
"must match the file_path of the target data file in a manifest entry"), which Iceberg-Java
and pyiceberg compare exactly, so no spec-legal table makes the two spellings meet where
icefloe's one-spelling comparison matters (docs/conformance.md, "Blind mutants"); the
suite's table merges manifests (EXISTING entries), so scan-skips-existing-entries is
conform's since;
`unit_tests` are the tests the gate runs when conform lets the mutant through; `like`
names the real bug of the same class.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_OF = {"impl": "icefloe.impl", "model": "icefloe.model", "conformance": "icefloe.conformance"}

# Areas of the reference implementation.
COMMIT, VALIDATION, EXPIRY, ORPHANS, SCAN, DELETES = (
    "commit path", "validation", "expiry", "orphan removal", "scan planning", "delete application")
S3_STORE, S3_CATALOG, SQL_CATALOG, HANDLE = "S3 store", "S3 catalog", "SQL catalog", "table handle"
PARTITIONS, ROW_DELTAS, REFS = "partitions", "row deltas", "refs"
REST_SERVER = "REST server"
FORMAT_V3 = "format v3"
# Since issue 30 the model has file ages (AgeFiles, Bounds.orphan_age): the orphans-in-flight
# family runs orphan removal while a writer works, with a threshold from the suite's clock.
ORPHAN_AGE = "orphan age threshold"
AREAS = (COMMIT, VALIDATION, EXPIRY, ORPHANS, SCAN, DELETES, S3_STORE, S3_CATALOG, SQL_CATALOG,
         HANDLE, PARTITIONS, ROW_DELTAS, REFS, ORPHAN_AGE, REST_SERVER, FORMAT_V3)

TABLE_TESTS = "tests/impl/table"
S3_TESTS = "tests/s3"
CATALOG_TESTS = "tests/impl/catalog"


class SnippetError(Exception):
    """A mutant's snippet does not occur exactly once in its file (the code moved)."""


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str                   # relative to the project root
    old: str                    # must occur exactly once
    new: str
    area: str
    bug: str                    # the bug, in one line
    like: str = ""              # the real-world bug of the same class
    model_covers: bool = True
    unit_tests: tuple = field(default=(TABLE_TESTS,))
    blind: bool = False         # written after the suite, without tuning it (the gate's honesty check)

    @property
    def module(self) -> str:
        top, *rest = Path(self.file).with_suffix("").parts
        return ".".join([PACKAGE_OF[top], *rest])

    def apply(self, source: str) -> str:
        found = source.count(self.old)
        if found != 1:
            raise SnippetError(f"mutant {self.name}: its snippet occurs {found} times in {self.file}, not once")
        return source.replace(self.old, self.new)

    def mutated_source(self) -> str:
        return self.apply((ROOT / self.file).read_text())


COMMIT_PY = "impl/table/commit.py"
PRODUCER_PY = "impl/table/producer.py"
VALIDATION_PY = "impl/table/validation.py"
MAINTENANCE_PY = "impl/table/maintenance.py"
SCAN_PY = "impl/table/scan.py"
DELETES_PY = "impl/table/deletes.py"
EVALUATORS_PY = "impl/format/evaluators.py"

MUTANTS: tuple[Mutant, ...] = (
    # -- the commit path (spec/PROTOCOL.md 5, 6, 9) -------------------------------------------
    Mutant("unknown-deletes-written", COMMIT_PY,
           "    def _finish_unknown(self, reason: str) -> None:\n",
           "    def _finish_unknown(self, reason: str) -> None:\n"
           "        for obj in reversed(self.written):  # mutant: tidy up after an unknown outcome\n"
           "            try:\n                self.io.delete(obj)\n            except StoreError:\n"
           "                pass\n",
           COMMIT, "an operation that ends Unknown deletes what it wrote (it may have landed, or land later)",
           "apache/iceberg #2317, #4666; duckdb-iceberg #1120"),
    Mutant("retry-skips-chain-walk", COMMIT_PY,
           "landed = self._own_attempt_in_chain(location, metadata) if self.unknown_bases else None",
           "landed = None  # mutant: no lineage check after an unknown outcome",
           COMMIT, "a retry after an unknown outcome re-applies the snapshot without looking for it",
           "apache/iceberg #2808; iceberg-go #1603"),
    Mutant("fresh-snapshot-id-per-attempt", COMMIT_PY,
           "        self.attempt += 1\n        self.phase = self.operation.restart_phase",
           "        self.attempt += 1\n        if self.operation.produces_snapshot:\n"
           "            self._draw_snapshot_id()  # mutant: every attempt gets its own snapshot id\n"
           "        self.phase = self.operation.restart_phase",
           COMMIT, "each attempt draws a new snapshot id, so a landed attempt is not the one reported",
           "spec 1.5 (snapshot id kept across attempts)"),
    Mutant("no-revalidate", COMMIT_PY,
           "problem = check_all(self.operation.validations(self), metadata, self.starting_snapshot_id, self.tree)",
           "problem = None  # mutant: a retry re-applies its actions without re-validating",
           COMMIT, "a retry re-applies its actions on the refreshed base without re-checking its validations",
           "apache/iceberg #10312 class"),
    Mutant("cleanup-while-unknown-may-land", COMMIT_PY,
           "            if canonical_location(location) in self.unknown_bases:\n",
           "            if False:  # mutant: forgets that a parked request can still land\n",
           COMMIT, "definite failure (and cleanup) while the pointer is still the base of an unknown attempt",
           "apache/iceberg #3717"),
    Mutant("unknown-taken-as-rejected", COMMIT_PY,
           "            self.unknown_bases.add(canonical_location(self.base_location))\n"
           "            self.phase = RESOLVE",
           "            self.phase = RETRY  # mutant: an unknown swap answer read as a rejection",
           COMMIT, "SwapUnknown handled as SwapRejected: no lineage check, cleanup allowed",
           "apache/iceberg #7151; apache/polaris #5145"),
    Mutant("overwrite-retry-reuses-manifests", PRODUCER_PY,
           "    restart_phase = MANIFESTS\n    operation = \"overwrite\"",
           "    restart_phase = LIST  # mutant: a retry keeps manifests filtered against the old base\n"
           "    operation = \"overwrite\"",
           COMMIT, "a retry of a file-removing operation reuses manifests built for the previous base",
           "spec 5.2 (manifests of deletes depend on the base)"),
    Mutant("append-lists-starting-snapshot", PRODUCER_PY,
           "        return [self.manifest] + list(c.tree.manifests(c.head()))",
           "        return [self.manifest] + list(c.tree.manifests(c.starting_snapshot))  # mutant",
           COMMIT, "an append's retry carries the manifests of its starting snapshot, not of the new base",
           "apache/iceberg #970 class (lost appends)"),
    Mutant("stale-sequence-number-on-retry", PRODUCER_PY,
           "        entries = [ManifestEntry(ManifestEntryStatus.ADDED, f) for f in self.files]\n"
           "        self.manifest = _write_manifest(c, entries, c.base.default_spec_id)",
           "        seq = c.base.last_sequence_number + 1  # mutant: explicit, fixed at the first attempt\n"
           "        entries = [ManifestEntry(ManifestEntryStatus.ADDED, f, sequence_number=seq) for f in self.files]\n"
           "        self.manifest = _write_manifest(c, entries, c.base.default_spec_id)",
           ROW_DELTAS, "a reused manifest carries an explicit data sequence number from a stale base",
           "spec: sequence-number inheritance",
           unit_tests=("tests/impl/table/test_table_commit.py",)),
    # -- validation (7.3) ----------------------------------------------------------------------
    Mutant("files-live-checks-one-snapshot", VALIDATION_PY,
           "        wanted = {comparable_location(p) for p in self.paths}\n        for snap in between:",
           "        wanted = {comparable_location(p) for p in self.paths}\n        for snap in between[:1]:  # mutant",
           VALIDATION, "a validation looks at one snapshot in between instead of all of them",
           "apache/iceberg #10312"),
    Mutant("serializable-ignores-appends", VALIDATION_PY,
           "                if metrics.might_match(e.data_file):\n",
           "                if False:  # mutant: concurrent appends never conflict\n",
           VALIDATION, "a serializable overwrite ignores a concurrent append matching its filter",
           "Java validateNoConflictingData"),
    Mutant("ref-assertion-ignored", VALIDATION_PY,
           "        if found != self.snapshot_id:\n",
           "        if False:  # mutant: the ref may have moved\n",
           VALIDATION, "a rollback / set-ref commits although the ref moved since it read it",
           "REST AssertRefSnapshotId"),
    Mutant("rewrite-ignores-new-deletes", VALIDATION_PY,
           "                    if delete_may_apply(e.data_file, f):\n",
           "                    if False:  # mutant\n",
           ROW_DELTAS, "a compaction commits over delete files added after it read (deleted rows come back)",
           "apache/iceberg #10312",
           unit_tests=("tests/impl/table/test_table_commit.py",)),
    # -- expiry and orphan removal (11, 12) ------------------------------------------------------
    Mutant("expire-ignores-retained-reach", MAINTENANCE_PY,
           "            if c not in keep and not x.endswith(_PROTECTED_SUFFIXES):",
           "            if not x.endswith(_PROTECTED_SUFFIXES):  # mutant",
           EXPIRY, "expiry deletes every object an expired snapshot reached, even those retained ones reach",
           "apache/iceberg #17304, #13568"),
    Mutant("expire-keeps-main-only", MAINTENANCE_PY,
           "        keep = reachable(tree, post)\n    except _READ_ERRORS",
           "        keep = {canonical_location(x) for s in post.ancestors_of(post.current_snapshot_id)\n"
           "                for x in tree.reach(s)}  # mutant: blind to tags and branches\n    except _READ_ERRORS",
           REFS, "expiry keeps only what main's ancestry reaches, deleting files a tag or branch still reaches",
           "apache/iceberg #13568",
           unit_tests=("tests/impl/table/test_table_maintenance.py",)),
    Mutant("orphans-keep-current-only", MAINTENANCE_PY,
           "    keep = reachable(tree, metadata)\n    gone: dict[str, str] = {}",
           "    current = metadata.current_snapshot()\n"
           "    keep = set() if current is None else {canonical_location(x) for x in tree.reach(current)}  # mutant\n"
           "    gone: dict[str, str] = {}",
           ORPHANS, "orphan removal keeps only the current snapshot's files (time travel breaks)",
           "spec 12.1"),
    # -- reads (10) -----------------------------------------------------------------------------
    Mutant("time-travel-plans-current", SCAN_PY,
           "    for m in tree.manifests(snapshot):\n        spec, manifest_eval",
           "    for m in tree.manifests(metadata.current_snapshot() or snapshot):  # mutant\n        spec, manifest_eval",
           SCAN, "planning a time-travel read lists the current snapshot's manifests",
           "P7 TimeTravelImmutable"),
    Mutant("incremental-takes-overwrites", SCAN_PY,
           "        if snap.operation != \"append\":\n            continue\n",
           "",
           SCAN, "an incremental append read also returns rows added by overwrites and compactions",
           "P10 IncrementalComplete"),
    Mutant("position-delete-same-sequence", DELETES_PY,
           "    if delete_seq < data_seq:\n        return False\n    if not (unpartitioned_delete",
           "    if delete_seq <= data_seq:  # mutant\n        return False\n    if not (unpartitioned_delete",
           DELETES, "a position delete skips data files of its own sequence number",
           "spec: position deletes apply to data sequence numbers <= theirs (Flink's CDC writer deletes a key "
           "written again in the same checkpoint by position, in the file it is writing)",
           unit_tests=("tests/impl/table/test_table_scan.py",)),
    Mutant("equality-delete-same-sequence", DELETES_PY,
           "    if delete_seq <= data_seq:\n        return False\n    return unpartitioned_delete",
           "    if delete_seq < data_seq:  # mutant\n        return False\n    return unpartitioned_delete",
           DELETES, "an equality delete also deletes rows added in its own commit",
           "spec: equality deletes apply to data sequence numbers < theirs",
           unit_tests=("tests/impl/table/test_table_scan.py",)),
    Mutant("rewrite-takes-new-sequence", PRODUCER_PY,
           "        self.data_sequence_number = start.sequence_number\n",
           "        self.data_sequence_number = None  # mutant: compacted files get a new sequence number\n",
           ROW_DELTAS, "compacted files take a new data sequence number, escaping earlier equality deletes",
           "spec: rewrite keeps the starting snapshot's data sequence number",
           unit_tests=("tests/impl/table/test_table_scan.py",)),
    Mutant("partition-pruning-inverted", SCAN_PY,
           "entries = tree.matching_entries(m, partition_eval.might_match)",
           "entries = tree.matching_entries(m, lambda p: not partition_eval.might_match(p))  # mutant",
           PARTITIONS, "a filtered scan prunes the partitions that match instead of those that cannot",
           "scan planning",
           unit_tests=("tests/impl/table/test_table_scan.py",)),
    Mutant("metrics-lower-bound-strict", EVALUATORS_PY,
           "(lower < lits[0] if op == LT else lower <= lits[0])",
           "(lower < lits[0] if op == LT else lower < lits[0])  # mutant",
           SCAN, "pruning by column bounds reads `<=` as `<`: a file whose lower bound equals the value is pruned",
           "metrics evaluators (inclusive bounds)", unit_tests=("tests/impl/format",)),
    Mutant("metrics-upper-bound-strict", EVALUATORS_PY,
           "(upper > lits[0] if op == GT else upper >= lits[0])",
           "(upper > lits[0] if op == GT else upper > lits[0])  # mutant",
           SCAN, "pruning by column bounds reads `>=` as `>`: a file whose upper bound equals the value is pruned",
           "metrics evaluators (inclusive bounds)", unit_tests=("tests/impl/format",)),
    # -- storage and catalogs (2, 3, 4) ---------------------------------------------------------
    Mutant("s3-cas-without-if-match", "impl/s3/store.py",
           "        return self._conditional_put(\"compare_and_swap\", location, data,\n"
           "                                     IfMatch=f'\"{_etag(expected_etag)}\"')",
           "        return self._conditional_put(\"compare_and_swap\", location, data)  # mutant: blind put",
           S3_STORE, "the S3 pointer swap is a plain PUT: two writers from one base both win",
           "delta-io/delta #1410 class", unit_tests=(S3_TESTS,)),
    Mutant("s3-no-read-back", "impl/s3/store.py",
           "        return self._read_back(kind, location, data, tries.ambiguous, tries.last)",
           "        raise StoreUnavailable(location, f\"{kind}: gave up; last: {tries.last}\")  # mutant",
           S3_STORE, "a write whose response was lost is reported as definitely not written",
           "apache/iceberg #7151", unit_tests=(S3_TESTS,)),
    Mutant("s3-catalog-unknown-as-rejected", "impl/catalog/s3.py",
           "                return self._reconcile(identifier, expected_location, new_location, str(e))",
           "                return SwapRejected(expected_location, None, f\"not applied: {e}\")  # mutant",
           S3_CATALOG, "the S3 catalog reports a pointer write with a lost response as rejected",
           "apache/iceberg #3717, #12818", unit_tests=(S3_TESTS,)),
    Mutant("s3-catalog-status-check", "impl/catalog/s3.py",
           "        if current.previous_metadata_location == new_location:\n"
           "            return Swapped(new_location)",
           "        if current.previous_metadata_location == new_location:\n"
           "            return SwapRejected(expected_location, current.metadata_location, \"moved on\")  # mutant",
           S3_CATALOG, "a status check that only compares the pointer declares a landed swap rejected",
           "apache/iceberg #3717", unit_tests=(S3_TESTS,)),
    Mutant("sql-blind-update", "impl/catalog/sql.py",
           "                \" WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?\"\n"
           "                + self._type_filter()), (new_location, expected_location, *key, expected_location))",
           "                \" WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?\"\n"
           "                + self._type_filter()), (new_location, expected_location, *key))  # mutant",
           SQL_CATALOG, "the SQL swap updates the pointer without comparing it with the expected location",
           "apache/iceberg #970 class (lost commits)", unit_tests=(CATALOG_TESTS,)),
    Mutant("sql-commit-error-as-rejected", "impl/catalog/sql.py",
           "            if stage == \"commit\":\n                return SwapUnknown(",
           "            if False:  # mutant: an error on COMMIT read as a rejection\n                return SwapUnknown(",
           SQL_CATALOG, "a driver error on COMMIT is reported as a rejected swap",
           "pyiceberg commit_table; apache/iceberg #2317", unit_tests=(CATALOG_TESTS, "tests/postgres")),
    # -- the table handle ------------------------------------------------------------------------
    Mutant("handle-adopts-unlanded-metadata", "impl/table/table.py",
           "        if (isinstance(outcome, Committed) and commit.new_metadata is not None\n"
           "                and outcome.metadata_location == commit.new_metadata_location):",
           "        if commit.new_metadata is not None:  # mutant: the handle trusts its last attempt",
           HANDLE, "a table handle shows the metadata of its last attempt whatever the outcome",
           "a handle never shows a commit that did not land"),
)

# -- blind mutants ---------------------------------------------------------------------------
# Written in one sitting after the suite was built, each a bug a contributor could plausibly
# write, and recorded with what conform did with them on the first try (docs/conformance.md).
# The suite is never changed to kill one of these by name: a survivor is a class of bug the
# suite misses, fixed (if at all) by a fault schedule, an observation or a coverage class.
SQL_PY, S3_CATALOG_PY, S3_STORE_PY, TABLE_PY = (
    "impl/catalog/sql.py", "impl/catalog/s3.py", "impl/s3/store.py", "impl/table/table.py")
BLIND: tuple[Mutant, ...] = (
    Mutant("chain-walk-last-attempt-only", COMMIT_PY,
           "location, metadata, self.attempted,\n",
           "location, metadata, self.attempted[-1:],  # mutant: only the last attempt\n",
           COMMIT, "after an unknown outcome the chain walk looks for the last attempt only, not every attempt",
           "apache/iceberg #2808 class", blind=True),
    Mutant("parent-from-starting-snapshot", COMMIT_PY,
           "            head = self.head()\n            snapshot = Snapshot(",
           "            head = self.head(self.base_at_start)  # mutant\n            snapshot = Snapshot(",
           COMMIT, "a retried snapshot names the starting snapshot as its parent, not the head it replaces",
           "spec 7.4; P1 LinearHistory", blind=True),
    Mutant("retry-keeps-old-base-location", COMMIT_PY,
           "        self.base, self.base_location = metadata, location\n",
           "        self.base = metadata  # mutant: the next swap still expects the old location\n",
           COMMIT, "a retry rebuilds on the refreshed metadata but swaps against the old pointer value",
           "lost retries (every attempt rejected)", blind=True),
    Mutant("list-sequence-number-from-start", COMMIT_PY,
           "            sequence_number = snapshot_sequence_number(self.base)   # 0 in v1, which has none\n",
           "            sequence_number = snapshot_sequence_number(self.base_at_start)  # mutant\n",
           ROW_DELTAS, "a retried manifest list carries the first attempt's sequence number (files inherit it)",
           "spec: sequence-number inheritance", blind=True),
    Mutant("validation-lost-start-is-empty", VALIDATION_PY,
           "        return None, f\"starting snapshot {start} is no longer an ancestor of {ref!r}\"",
           "        return [], None  # mutant: a start off the ancestry means nothing happened in between",
           VALIDATION, "a validation whose starting snapshot was rolled back past sees nothing in between",
           "apache/iceberg validateFromSnapshot", blind=True),
    Mutant("orphans-without-refresh", TABLE_PY,
           "        self.refresh()\n        if older_than_ms is None:",
           "        if older_than_ms is None:  # mutant: the handle's metadata, however old",
           ORPHANS, "orphan removal judges reachability from the handle's metadata without refreshing it",
           "apache/iceberg #4240 class (orphans of concurrent commits)", blind=True),
    Mutant("orphans-age-inverted", MAINTENANCE_PY,
           "info.last_modified_ms >= older_than_ms:",
           "info.last_modified_ms < older_than_ms:  # mutant",
           ORPHAN_AGE, "orphan removal keeps the old files and deletes the young ones (the threshold inverted)",
           "spec 12.2", unit_tests=("tests/impl/table/test_table_maintenance.py",), blind=True),
    Mutant("incremental-from-inclusive", SCAN_PY,
           "        line = line[: ids.index(from_snapshot_id)]",
           "        line = line[: ids.index(from_snapshot_id) + 1]  # mutant",
           SCAN, "an incremental read includes the rows of its starting snapshot (from is exclusive)",
           "P10 IncrementalComplete", blind=True),
    Mutant("scan-skips-existing-entries", SCAN_PY,
           "                if e.status in (0, 1) and e.data_file.record_count != 0:",
           "                if e.status == 1 and e.data_file.record_count != 0:  # mutant: ADDED only",
           SCAN, "an unfiltered scan takes only ADDED entries, dropping the EXISTING ones of merged and "
           "rewritten manifests", "manifest entry status", blind=True),
    Mutant("s3-read-back-existence-only", S3_STORE_PY,
           "        if current == data:\n            assert info.size == len(data)\n            return info",
           "        if current:  # mutant: something is there, so our write landed\n            return info",
           S3_STORE, "after an ambiguous write the read-back takes any object there for the one it wrote",
           "apache/iceberg #7151 class", unit_tests=(S3_TESTS,), blind=True),
    Mutant("s3-catalog-own-swap-as-rival", S3_CATALOG_PY,
           "        if current.metadata_location == new_location:\n"
           "            return Swapped(new_location)  # `new` is ours alone (a fresh name): our request landed\n",
           "        if current.previous_metadata_location == expected_location:  # mutant: checked first\n"
           "            return SwapRejected(expected_location, current.metadata_location, \"another swap landed\")\n"
           "        if current.metadata_location == new_location:\n"
           "            return Swapped(new_location)\n",
           S3_CATALOG, "the S3 catalog's reconcile asks 'built on my base?' before 'is it mine?'",
           "apache/iceberg #3717 class", unit_tests=(S3_TESTS,), blind=True),
    Mutant("sql-rejected-swap-leaves-transaction-open", SQL_PY,
           "            row = cur.fetchone()\n            cur.execute(\"ROLLBACK\")",
           "            row = cur.fetchone()  # mutant: no ROLLBACK after a swap that matched no row",
           SQL_CATALOG, "a rejected SQL swap leaves its write transaction open on the shared connection",
           "driver state after a conflict", unit_tests=(CATALOG_TESTS,), blind=True),
    Mutant("handle-keeps-stale-after-failure", TABLE_PY,
           "        else:\n            self._refresh_after(commit)\n        return outcome",
           "        return outcome  # mutant: no refresh after a failed or unknown commit",
           HANDLE, "a table handle keeps its old metadata after its commit failed or ended unknown",
           "a handle shows the table as it is after each outcome", blind=True),
    Mutant("position-delete-path-spelling", DELETES_PY,
           "        key = canonical_location(path)",
           "        key = path  # mutant: paths compared as spelled",
           DELETES, "position deletes compare paths as spelled (file:/ vs file:///): another engine's deletes miss",
           # Beyond the spec, so no conformance bug: file_path "must match the file_path of
           # the target data file in a manifest entry", every writer copies the entry's
           # spelling (Java's _file is task.file().location()), and Java (Deletes.DataFileFilter,
           # DeleteFileIndex.posDeletesByPath / dvByPath) and pyiceberg compare exactly. icefloe's
           # leniency serves only writers that break that rule; a unit test keeps it.
           "beyond the spec: a position delete's file_path must match its data file's manifest entry, "
           "and Iceberg-Java compares it exactly", model_covers=False, blind=True,
           unit_tests=("tests/impl/table/test_table_scan.py",)),
)

# -- the second blind batch (2026-11-27) -----------------------------------------------------
# Written in one sitting before the suite was run against them, by an engineer who had not
# changed the suite this session beyond the seed gate's fixes; recorded with what conform did
# on the first try (docs/conformance.md, "Blind mutants"). Same rule: never killed by name.
FILES_PY = "impl/table/files.py"
BLIND_2: tuple[Mutant, ...] = (
    Mutant("between-skips-head", FILES_PY,
           "    return line[: ids.index(start_id)]\n",
           "    return line[1: ids.index(start_id)]  # mutant: the ref's head is the base, not 'in between'\n",
           VALIDATION, "validations look at the snapshots between the start and the head, but not at the head",
           "off-by-one in validationHistory (Java: snapshots since the starting snapshot, head included)",
           blind=True),
    Mutant("incremental-takes-replace", SCAN_PY,
           "        if snap.operation != \"append\":\n",
           "        if snap.operation not in (\"append\", \"replace\"):  # mutant: compactions add files too\n",
           SCAN, "an incremental read takes the files a compaction added, so compacted rows come twice",
           "Spark streaming reads of rewritten files (streaming-skip-overwrite-snapshots)", blind=True),
    Mutant("reach-skips-delete-manifests", FILES_PY,
           "        for m in self.manifests(snapshot):\n            out.add(m.manifest_path)\n",
           "        for m in self.manifests(snapshot):\n            if m.content != ManifestContent.DATA:\n"
           "                continue  # mutant: a snapshot's reach is its data files\n            out.add(m.manifest_path)\n",
           EXPIRY, "reachability ignores delete manifests, so expiry and orphan removal delete live delete files",
           "expiry/orphan removal that walks data manifests only", blind=True),
    Mutant("retry-bound-off-by-one", COMMIT_PY,
           "        if self.attempt >= policy.commit_attempts_max or time_up:\n",
           "        if self.attempt > policy.commit_attempts_max or time_up:  # mutant\n",
           COMMIT, "one attempt more than commit.retry.num-retries allows",
           "spec 6.1 bounded retry", blind=True),
    Mutant("rewrite-refuses-equality-deletes", PRODUCER_PY,
           "NoNewDeletesForFiles(files, self.ref, ignore_equality=True)]",
           "NoNewDeletesForFiles(files, self.ref)]  # mutant: any new delete aborts a compaction",
           ROW_DELTAS, "a compaction conflicts with an equality delete committed meanwhile (which still applies "
           "to its output by sequence number): a spurious conflict", "apache/iceberg #10312 (over-strict)",
           blind=True),
    Mutant("position-bounds-exclusive", DELETES_PY,
           "    return any(lo <= p.encode() <= hi for p in {path, comparable_location(path)})\n",
           "    return any(lo <= p.encode() < hi for p in {path, comparable_location(path)})  # mutant\n",
           DELETES, "a position delete's file_path upper bound read as exclusive: a delete naming one file misses it",
           "spec: metrics bounds are inclusive", blind=True),
    Mutant("plan-on-handle-not-pointer", COMMIT_PY,
           "        if self._known is not None and self._known[0] == location:\n",
           "        if self._known is not None:  # mutant: the handle's metadata, whatever the pointer says\n",
           COMMIT, "a commit plans on the handle's cached metadata even when the pointer has moved",
           "a stale base: a commit built on metadata older than the pointer", blind=True),
)

# -- issue 30: the areas the last wave's unseen mutations passed ---------------------------------
# Written against the code as it is, one per structural blind spot the issue names: the REST
# server's requirements, status codes and drop-and-re-create (judged at the wire by
# conformance.rest.wire on every default run), the S3 catalog's race paths (the races family's
# directed programs on moto S3), refs that must not exist yet, and retention per ref.
SERVE_REQUIREMENTS_PY, SERVE_COMMIT_PY = "impl/serve/requirements.py", "impl/serve/commit.py"
SERVE_TESTS = "tests/rest"
ISSUE_30: tuple[Mutant, ...] = (
    Mutant("serve-ref-absent-ignored", SERVE_REQUIREMENTS_PY,
           "            if found != self.value:\n                if self.value is None:",
           "            if found != self.value and self.value is not None:  # mutant: null read as 'any'\n"
           "                if self.value is None:",
           REST_SERVER, "assert-ref-snapshot-id with snapshot-id null (the ref must not exist) passes whatever the "
           "ref holds: two creators of one branch both land, the second moving it",
           "REST spec AssertRefSnapshotId: null means the ref must not exist", unit_tests=(SERVE_TESTS,)),
    Mutant("serve-uuid-skipped", SERVE_REQUIREMENTS_PY,
           "    for r in requirements:\n        found = r.check(metadata)",
           "    for r in requirements:\n        if r.kind == \"assert-table-uuid\":\n"
           "            continue  # mutant: the path names the table already\n        found = r.check(metadata)",
           REST_SERVER, "the server skips assert-table-uuid: a commit planned on a table dropped and re-created "
           "under its name lands on the new table", "Iceberg-Java sends AssertTableUUID with every update",
           unit_tests=(SERVE_TESTS,)),
    Mutant("serve-requirement-failed-400", SERVE_COMMIT_PY,
           "        if failure is not None:\n            raise E.commit_failed(failure)",
           "        if failure is not None:\n            raise E.bad_request(failure)  # mutant: a failed requirement is bad input",
           REST_SERVER, "a failed requirement is answered 400 BadRequest, not 409 CommitFailed: clients give up "
           "instead of refreshing and retrying", "REST spec updateTable 409", unit_tests=(SERVE_TESTS,)),
    Mutant("serve-refused-update-409", SERVE_COMMIT_PY,
           "            raise E.bad_request(f\"Cannot apply the updates to {ident}: {e}\") from None",
           "            raise E.commit_failed(f\"Cannot apply the updates to {ident}: {e}\") from None  # mutant",
           REST_SERVER, "an update that cannot apply is answered 409 CommitFailed: a client refreshes and retries a "
           "request that can never apply", "REST spec updateTable 400", unit_tests=(SERVE_TESTS,)),
    Mutant("serve-stale-sequence-400", SERVE_COMMIT_PY,
           "        except (U.StaleSequenceNumber, U.SnapshotStillReferenced) as e:",
           "        except U.SnapshotStillReferenced as e:  # mutant: a stale sequence number is bad input",
           REST_SERVER, "a snapshot numbered for an older version is answered 400, not 409: the writer gives up "
           "though a refresh would commit", "apache/iceberg #15001, #15126", unit_tests=(SERVE_TESTS,)),
    Mutant("serve-partition-id-assert-copy", SERVE_REQUIREMENTS_PY,
           "    \"assert-last-assigned-partition-id\": (\"last-assigned-partition-id\", \"last_partition_id\"),",
           "    \"assert-last-assigned-partition-id\": (\"last-assigned-partition-id\", \"last_column_id\"),  # mutant",
           REST_SERVER, "assert-last-assigned-partition-id compares with the last column id (a copy-paste): a "
           "commit of a spec built on a stale partition field id lands, or a fresh one is refused",
           "REST spec AssertLastAssignedPartitionId", unit_tests=(SERVE_TESTS,)),
    Mutant("serve-retry-skips-requirements", SERVE_COMMIT_PY,
           "                    planned.append(self.plan(ident, requirements, updates))",
           "                    planned.append(self.plan(ident, requirements if attempt == 1 else [], updates))  # mutant",
           REST_SERVER, "a server-side retry after a lost swap re-applies the updates without re-checking the "
           "requirements (checked once, on the first read)", "requirements checked at the swap's own base",
           unit_tests=(SERVE_TESTS,)),
    Mutant("overwrite-ignores-deletes-of-removed", PRODUCER_PY,
           "        checked = tuple(self.removed.values()) if self.rows is not None and self.isolation == SERIALIZABLE \\\n"
           "            else tuple(rewritten)\n",
           "        checked = tuple(rewritten)  # mutant: only the files it copies forward\n",
           VALIDATION, "an overwrite by filter validates new delete files only for the files it rewrites, not for "
           "those it removes whole: a row delete committed meanwhile on a removed file is silently undone",
           "Iceberg-Java validateNoConflictingDeletes (overwrite racing a row delete)"),
    Mutant("s3-catalog-refresh-after-any-412", S3_CATALOG_PY,
           "        if current.pointer.metadata_location == expected_location and current.etag != sent.etag:\n"
           "            return current",
           "        if current.etag != sent.etag:  # mutant: a fresh etag after a 412, so send again with it\n"
           "            return current",
           S3_CATALOG, "after a 412 the S3 catalog takes any fresh etag as its remembered one gone stale and sends "
           "its pointer again with it, over the rival's commit that caused the 412",
           "apache/iceberg #7151 class (a refusal retried blind)", unit_tests=(S3_TESTS,)),
    Mutant("s3-catalog-moved-on-as-rejected", S3_CATALOG_PY,
           "            return Swapped(new_location)  # ours landed and the next swap was built on it\n",
           "            return Swapped(new_location)  # ours landed and the next swap was built on it\n"
           "        return SwapRejected(expected_location, current.metadata_location,  # mutant\n"
           "                            \"the pointer moved on: ours can no longer land\")\n",
           S3_CATALOG, "the S3 catalog's reconcile takes a pointer two or more swaps on as 'ours did not land' "
           "(it may have landed under the rivals' commits): a retry re-applies it or a cleanup deletes it",
           "apache/iceberg #3717 class (pointer status check)", unit_tests=(S3_TESTS,)),
    Mutant("ref-absent-assertion-ignored", VALIDATION_PY,
           "        if found != self.snapshot_id:\n            return f\"ref {self.ref!r} is at {found}, expected",
           "        if self.snapshot_id is not None and found != self.snapshot_id:  # mutant: None means 'any'\n"
           "            return f\"ref {self.ref!r} is at {found}, expected",
           REFS, "a ref's creation retried after a rival created the same ref passes its 'must not exist' check "
           "and moves the rival's ref", "REST AssertRefSnapshotId(ref, null); branch create racing"),
    Mutant("retention-ignores-branch-min-keep", "impl/table/operations.py",
           "ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else min_keep_default",
           "min_keep_default  # mutant: the table's default for every branch",
           REFS, "expiry keeps the table's min-snapshots-to-keep on every branch, ignoring a branch's own",
           "Iceberg spec 'Snapshot Retention Policy': per-ref min-snapshots-to-keep"),
    Mutant("retention-ignores-branch-age", "impl/table/operations.py",
           "now_ms - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else cutoff_default",
           "cutoff_default  # mutant: the table's age (or the call's) for every branch",
           REFS, "expiry ages every branch by the table's max-snapshot-age-ms, ignoring a branch's own",
           "Iceberg spec 'Snapshot Retention Policy': per-ref max-snapshot-age-ms"),
    Mutant("retention-ignores-ref-age", "impl/table/operations.py",
           "        if head is None or (max_age is not None and now_ms - head.timestamp_ms > max_age):\n",
           "        if head is None:  # mutant: max-ref-age-ms never expires a ref\n",
           REFS, "expiry keeps every ref, however old its snapshot (max-ref-age-ms ignored)",
           "Iceberg spec 'Snapshot References': max-ref-age-ms; found by the per-ref retention model (issue 30)"),
)
# Format v3 (issue 30 item 8): the classes of this year's v3 bugs, planted in icefloe's own
# v3 commit path; the suite's v3 phase (conformance/v3, families dvs and lineage) must kill each.
V3 = (
    Mutant("v3-first-row-id-kept-on-retry", COMMIT_PY,
           "            self.first_row_id = self.added_rows = None\n"
           "            if self.base.format_version >= 3:\n"
           "                self.first_row_id = self.base.next_row_id\n",
           "            first = self.first_row_id  # mutant: the first attempt's first_row_id kept on retry\n"
           "            self.first_row_id = self.added_rows = None\n"
           "            if self.base.format_version >= 3:\n"
           "                self.first_row_id = self.base.next_row_id if first is None else first\n",
           FORMAT_V3, "a retry after a concurrent append keeps the first_row_id its first attempt took from an "
           "older base: row ids collide", "apache/iceberg-go #1021 (review); Delta #7506, Paimon #8506",
           unit_tests=("tests/impl/table", "tests/impl/format")),
    Mutant("v3-replacement-dv-keeps-old", "impl/table/row_deletes.py",
           "                self.removed_deletes.add(delete_key(task.deletion_vector))\n",
           "                pass  # mutant: the superseded DV stays live\n",
           FORMAT_V3, "a new DV for a file that has one holds its positions but the old DV is not removed: "
           "two live DVs on one file", "apache/iceberg-go #1868",
           unit_tests=("tests/impl/table",)),
    Mutant("v3-rewrite-drops-row-ids", PRODUCER_PY,
           "    return lineage_schema(schema) if c.base.format_version >= 3 else schema\n",
           "    return schema  # mutant: rows moved to a new file lose their _row_id\n",
           FORMAT_V3, "compaction and copy-on-write write moved rows without their _row_id: the rows get new ids "
           "from the new file's first_row_id", "Iceberg spec 'Row Lineage': ids stable through compaction",
           unit_tests=("tests/impl/table",)),
)
# Format v3, the paths conform drives since the v3 adapter goes through them (issue 30 items
# 3, 8): the merge-on-read update (row_updates.UpdateRows, what Table.update runs) and the row
# delta of DVs an engine wrote itself (producer.RowDelta with superseding.supersede), which
# the adapter's writer 1 takes for its row deletes (conformance/engines/icefloe_v3.py).
V3_PATHS = (
    Mutant("v3-update-new-row-ids", "impl/table/row_updates.py",
           "            parts.append(updated(raw.take(pa.array(positions, pa.int64())), with_lineage, checked))\n",
           "            part = updated(raw.take(pa.array(positions, pa.int64())), with_lineage, checked)\n"
           "            parts.append(part.set_column(part.schema.get_field_index(ROW_ID), part.schema.field(ROW_ID),\n"
           "                                         pa.nulls(part.num_rows, pa.int64())))  # mutant: new ids\n",
           FORMAT_V3, "a merge-on-read update writes the updated rows without their _row_id: each gets a new id "
           "from the new file's first_row_id, as if deleted and inserted",
           "Iceberg spec 'Row Lineage': an updated row keeps its _row_id", unit_tests=("tests/impl/table",)),
    Mutant("v3-update-keeps-old-dv", "impl/table/row_updates.py",
           "        if not super().plan(c):  # the DVs (UnsupportedFormatVersion below v3)\n"
           "            return False\n",
           "        if not super().plan(c):  # the DVs (UnsupportedFormatVersion below v3)\n"
           "            return False\n"
           "        self.removed_deletes.clear()  # mutant: the update's DV leaves what it supersedes live\n",
           FORMAT_V3, "a merge-on-read update's new DV holds the file's earlier positions but the DV (or the "
           "position delete files) it replaces stay live", "apache/iceberg-go #1868",
           unit_tests=("tests/impl/table",)),
    Mutant("v3-row-delta-superseded-dv-live", "impl/table/superseding.py",
           "            superseded.append(task.deletion_vector)\n",
           "            pass  # mutant: the DV an engine's new DV replaces stays live\n",
           FORMAT_V3, "a row delta of an engine's DV for a file that has one does not remove the old DV: two "
           "live DVs on one file", "apache/iceberg-go #1868", unit_tests=("tests/impl/table",)),
    Mutant("v3-row-delta-dvs-skip-new-deletes-check", PRODUCER_PY,
           "            self.reqs.append(NoNewDeletesForFiles(named, self.ref))\n",
           "            if not dvs:  # mutant: an engine's DVs are not validated against deletes added meanwhile\n"
           "                self.reqs.append(NoNewDeletesForFiles(named, self.ref))\n",
           FORMAT_V3, "a row delta of an engine's DVs skips the check for delete files added for its data files "
           "since its start: a rival's DV for the same file and ours both live", "apache/iceberg-go #1868",
           unit_tests=("tests/impl/table",)),
    # On a table upgraded from v2 (spec/PROTOCOL.md 19.8): the DV merges the file's position
    # delete files' positions but leaves those files live beside it (rows read right, the
    # table's delete structures wrong); conform sees them since read_v3 reports them (A0).
    Mutant("v3-row-delta-position-deletes-live", "impl/table/superseding.py",
           "                if names_only(d, task.data_file.file_path):\n"
           "                    superseded.append(d)\n",
           "                pass  # mutant: the position delete files an engine's DV merges stay live\n",
           FORMAT_V3, "a row delta of an engine's DV for a file of an upgraded table holds its position delete "
           "files' positions but leaves those files live beside the DV",
           "Iceberg spec 'Deletion Vectors' (PROTOCOL 19.8); the class of apache/iceberg-go #1868",
           unit_tests=("tests/impl/table",)),
    Mutant("v3-dv-delete-position-deletes-live", "impl/table/row_deletes.py",
           "                    if names_only(d, path):\n"
           "                        self.removed_deletes.add(delete_key(d))\n",
           "                    pass  # mutant: the position delete files the new DV merges stay live\n",
           FORMAT_V3, "a merge-on-read delete's (and update's) DV for a file of an upgraded table holds its position "
           "delete files' positions but leaves those files live beside the DV",
           "Iceberg spec 'Deletion Vectors' (PROTOCOL 19.8); the class of apache/iceberg-go #1868",
           unit_tests=("tests/impl/table",)),
)
# Session 12 (issue 29): DeleteReader's position arrays and DV arrays, the one reading of
# position delete files and DVs (sorted int64 arrays grouped in Arrow/numpy, in place of
# Python sets), written blind after that code, before running the suite against them.
DELETE_ARRAYS = (
    Mutant("position-arrays-drop-singletons", DELETES_PY,
           "        if bounds[g] < bounds[g + 1]:\n",
           "        if bounds[g] + 1 < bounds[g + 1]:  # mutant: a group of one position is dropped\n",
           DELETES, "a position delete file naming one position of a data file is read as naming none of it: "
           "that row stays live", "an off-by-one in grouping a delete file's rows by data file", blind=True),
    Mutant("position-deletes-skip-first-row", DELETES_PY,
           "            lo, hi = np.searchsorted(positions, [0, n])",
           "            lo, hi = np.searchsorted(positions, [1, n])  # mutant: position 0 never applied",
           DELETES, "a position delete of a data file's first row (position 0) is not applied by the scan",
           "an off-by-one at a file's first row (0-based positions)", blind=True),
    Mutant("dv-positions-drop-last", DELETES_PY,
           "        return np.frombuffer(bitmap.to_array(), dtype=np.uint64).view(np.int64)",
           "        return np.frombuffer(bitmap.to_array(), dtype=np.uint64).view(np.int64)[:-1]  # mutant",
           FORMAT_V3, "a deletion vector's largest position is lost when its bitmap is read: that row comes back",
           "an off-by-one exporting a roaring bitmap's contents", blind=True),
)
# Session 13: row lineage told by reserved field ids and refused below v3 (scan.check_lineage_columns,
# lineage_named, producer.carries_lineage, the reserved field-id range, row ids derived from
# first_row_id + position) and the rest of DeleteReader's arrays, written blind after that code
# (commits 9c022e7..132acbb), before reading the tests that cover it. Refusals of input the
# model never makes (lineage columns named below v3, columns named like lineage columns, field
# ids in the reserved range, corrupt DVs and delete files) are outside the model: unit tests.
LINEAGE_TESTS = ("tests/impl/table/test_scan_lineage_refusal.py", "tests/impl/table/test_reserved_lineage_names.py",
                 "tests/impl/table/test_table_v3.py", "tests/impl/table/test_table_row_updates.py",
                 "tests/impl/cli/test_cli_lineage_refusal.py")
DELETE_ARRAY_TESTS = ("tests/impl/table/test_delete_arrays.py",)
LINEAGE_AND_ARRAYS = (
    Mutant("lineage-refused-v1-only", SCAN_PY,
           "    if asked and version < LINEAGE_FORMAT_VERSION_MIN:\n",
           "    if asked and version < LINEAGE_FORMAT_VERSION_MIN - 1:  # mutant: v2 reads lineage as nulls\n",
           SCAN, "_row_id / _last_updated_sequence_number asked of a v2 table read as nulls, not refused "
           "(only v1 is refused)", "a version check one below the version that brought the feature",
           model_covers=False, unit_tests=LINEAGE_TESTS, blind=True),
    Mutant("lineage-asked-by-name", SCAN_PY,
           "    return [c for c in (columns or ()) if c in LINEAGE_COLUMNS\n"
           "            and (schema is None or schema.field_by_name(c) is None)]\n",
           "    return [c for c in (columns or ()) if c in LINEAGE_COLUMNS]  # mutant: told by name alone\n",
           SCAN, "a column the table itself names _row_id is taken for row lineage: refused on v2, "
           "SchemaMismatch on v3, where it is the table's own column to read",
           "lineage told by name instead of by reserved field id", model_covers=False, unit_tests=LINEAGE_TESTS,
           blind=True),
    Mutant("lineage-named-row-id-only", SCAN_PY,
           "    return [f for f in schema.fields if f.name in LINEAGE_COLUMNS]\n",
           "    return [f for f in schema.fields if f.name == ROW_ID]  # mutant: the sequence number's name forgotten\n",
           SCAN, "a v3 table's own column named _last_updated_sequence_number is not seen as clashing: lineage "
           "is read or rows moved beside it under the same name", "a check of one of two reserved names",
           model_covers=False, unit_tests=LINEAGE_TESTS, blind=True),
    Mutant("carries-lineage-by-name", PRODUCER_PY,
           "    assert (i < 0) == (j < 0), \"the lineage columns travel together\"\n    return i >= 0\n",
           "    return \"_row_id\" in rows.column_names  # mutant: lineage told by a column's name\n",
           FORMAT_V3, "rows with a user column named _row_id are taken for rows carrying lineage: an append to a "
           "v1/v2 table with such a column is refused, on v3 written as lineage",
           "lineage told by name instead of by reserved field id (the bug f248fd7 fixed)",
           model_covers=False, unit_tests=LINEAGE_TESTS, blind=True),
    Mutant("field-id-max-top-level-only", "impl/format/metadata.py",
           "    for f, path in walk_fields(schema):\n        if f.field_id > FIELD_ID_MAX:\n",
           "    for f, path in ((f, f.name) for f in schema.fields):  # mutant: nested fields unchecked\n"
           "        if f.field_id > FIELD_ID_MAX:\n",
           FORMAT_V3, "a nested field (struct member, list element, map key/value) with a field id in the reserved "
           "range is accepted at create / schema evolution", "a schema check over top-level fields only",
           model_covers=False, unit_tests=("tests/impl/table/test_reserved_lineage_names.py",
                                           "tests/impl/format/test_format_versions.py",
                                           "tests/impl/format/test_format_metadata.py"), blind=True),
    Mutant("row-ids-after-deletes", SCAN_PY,
           "    if schema.field_by_id(ROW_ID_FIELD_ID) is not None:\n"
           "        rows = _with_lineage(rows, task)\n"
           "    deletes = deletes or DeleteReader(io)\n"
           "    return deletes.apply(rows, task.data_file, task.position_deletes, task.equality_deletes, schema,\n"
           "                         task.deletion_vector)\n",
           "    deletes = deletes or DeleteReader(io)\n"
           "    rows = deletes.apply(rows, task.data_file, task.position_deletes, task.equality_deletes, schema,\n"
           "                         task.deletion_vector)\n"
           "    if schema.field_by_id(ROW_ID_FIELD_ID) is not None:  # mutant: positions counted after deletes\n"
           "        rows = _with_lineage(rows, task)\n"
           "    return rows\n",
           FORMAT_V3, "_row_id derived from a row's index among the live rows, not its position in the file: every "
           "row after a deleted one takes its neighbour's id", "row lineage assigned after the delete filter",
           blind=True),
    Mutant("streamed-scan-lineage-unchecked", SCAN_PY,
           "    lineage = bool(check_lineage_columns(metadata, columns, schema))  # before planning\n",
           "    lineage = bool(lineage_asked(columns, schema))  # mutant: the streamed scan skips the check\n",
           SCAN, "the streamed scan (icefloe scan) reads _row_id of a v1/v2 table as nulls and lineage beside a "
           "column of its name on v3, where Table.scan refuses both", "a check made on one read path of two",
           model_covers=False, unit_tests=LINEAGE_TESTS, blind=True),
    Mutant("merged-positions-first-file-only", DELETES_PY,
           "        if len(found) == 1:\n            return found[0]\n",
           "        if found:  # mutant: the first delete file's positions stand for all\n            return found[0]\n",
           DELETES, "of several position delete files naming one data file only the first is applied: the rows "
           "the others delete stay live", "a fast path for one array taken for any number", blind=True),
    Mutant("dv-spares-last-row", DELETES_PY,
           "            keep[positions[:np.searchsorted(positions, rows.num_rows)]] = False\n",
           "            keep[positions[:np.searchsorted(positions, rows.num_rows - 1)]] = False  # mutant\n",
           FORMAT_V3, "a deletion vector deleting a data file's last row (position n-1) does not delete it",
           "an off-by-one at a file's last row", blind=True),
    Mutant("dv-position-max-checks-min", "impl/format/puffin.py",
           "    if bitmap and bitmap.max() > POSITION_MAX:",
           "    if bitmap and bitmap.min() > POSITION_MAX:  # mutant: the smallest position checked",
           FORMAT_V3, "a deletion vector holding a position above 2^63-1 beside smaller ones is accepted: read as "
           "int64 it wraps negative", "a range check of the wrong end",
           model_covers=False, unit_tests=DELETE_ARRAY_TESTS + ("tests/impl/format/test_puffin.py",), blind=True),
    Mutant("position-groups-16-bit-keys", DELETES_PY,
           "        order = np.argsort(code.astype(np.uint16) if len(groups) <= 1 << 16 else code, kind=\"stable\")\n",
           "        order = np.argsort(code.astype(np.uint16), kind=\"stable\")  # mutant: 16-bit keys for any count\n",
           DELETES, "a position delete file out of path order naming more than 65,536 data files is grouped by "
           "its paths' numbers mod 2^16: positions land on other files", "a narrowing cast of sort keys",
           model_covers=False, unit_tests=DELETE_ARRAY_TESTS, blind=True),
    Mutant("row-ids-null-for-first-file", SCAN_PY,
           "    if first is None:\n        return rows.set_column(i",
           "    if not first:  # mutant: a first_row_id of 0 taken for none\n        return rows.set_column(i",
           FORMAT_V3, "the rows of a file whose first_row_id is 0 (a v3 table's first file) read null _row_id and "
           "_last_updated_sequence_number, as if written before an upgrade", "a falsy test of an id that may be 0",
           blind=True),
    Mutant("cow-delete-clash-above-v3", PRODUCER_PY,
           "        clash = c.base.format_version >= 3 and bool(lineage_named(schema))\n",
           "        clash = c.base.format_version > 3 and bool(lineage_named(schema))  # mutant\n",
           FORMAT_V3, "on a v3 table with a column named like a lineage column every copy-on-write delete or "
           "overwrite is refused, also one that drops files whole and moves no row", "a version check > for >=",
           model_covers=False, unit_tests=LINEAGE_TESTS, blind=True),
    # Spark's merge-on-read (outside the model: conform drives no Spark): the bitset filter's
    # per-file constants (linked_files.py gives each row its file's WORD and ROWS).
    Mutant("bitset-rows-guard-dropped", "impl/spark/native_dvs.py",
           "    at = F.expr(f\"if({row_index} < {rows}, {word} + cast(shiftright({row_index}, 6) as int), -1)\")\n",
           "    at = F.expr(f\"{word} + cast(shiftright({row_index}, 6) as int)\")  # mutant: ROWS not consulted\n",
           DELETES, "Spark's merge-on-read looks every row up in the bitset, also rows of files the bitset does not "
           "cover (ROWS 0, WORD 0): a file without deletes loses the rows at the first covered file's deleted "
           "positions", "a per-file constant's guard dropped", model_covers=False,
           unit_tests=("tests/spark/test_spark_mor_read.py",), blind=True),
    Mutant("spark-lineage-target-current-schema", "impl/spark/lineage.py",
           "    return ReadTarget(metadata, snapshot, S.snapshot_schema(metadata, snapshot))\n",
           "    return ReadTarget(metadata, snapshot, S.snapshot_schema(metadata, metadata.current_snapshot()))  # mutant\n",
           SCAN, "Spark's read tells lineage from a table column named _row_id by the current schema, also when "
           "it reads an older snapshot (time travel) whose schema had no such column, or had one since renamed",
           "a time-travel read resolved against the current schema", model_covers=False,
           unit_tests=("tests/spark/test_spark_reserved_lineage_names.py", "tests/spark/test_spark_lineage.py",
                       "tests/spark/test_spark_lineage_refusal.py"), blind=True),
)
# Session 13: Spark's copy-on-write delete (impl/spark/cow_delete.py; outside the model:
# conform drives no Spark). Written with its tests, so not blind.
COW_DELETE_PY = "impl/spark/cow_delete.py"
COW_DELETE_TESTS = ("tests/spark/test_spark_cow_delete.py",)
SPARK_COW_DELETE = (
    Mutant("spark-cow-delete-skips-new-deletes-check", COW_DELETE_PY,
           "        if self.rewritten:  # rows copied forward must not escape a delete committed meanwhile\n",
           "        if False:  # mutant: rows copied forward may escape a delete committed meanwhile\n",
           VALIDATION, "Spark's copy-on-write delete does not check for deletes added meanwhile to the files whose "
           "survivors it rewrites: a row another writer deleted comes back", "a row-level validation skipped",
           model_covers=False, unit_tests=COW_DELETE_TESTS),
    Mutant("spark-cow-delete-checks-files-removed-whole", COW_DELETE_PY,
           "            self.reqs.append(NoNewDeletesForFiles(tuple(self.rewritten), self.ref))\n",
           "            self.reqs.append(NoNewDeletesForFiles(tuple(self.planned_removed), self.ref))  # mutant\n",
           VALIDATION, "Spark's copy-on-write delete also refuses deletes added meanwhile to files it removes whole "
           "(none of their rows is copied forward): a spurious conflict Table.delete does not raise",
           "a validation over too many files", model_covers=False, unit_tests=COW_DELETE_TESTS),
    Mutant("spark-cow-delete-survivors-new-row-ids", COW_DELETE_PY,
           "        out += [F.col(ROW_ID), F.col(LAST_UPDATED_SEQUENCE_NUMBER)]\n",
           "        out += [F.lit(None).cast('long').alias(ROW_ID), F.col(LAST_UPDATED_SEQUENCE_NUMBER)]  # mutant\n",
           FORMAT_V3, "Spark's copy-on-write delete writes the survivors without their _row_id: they get new ids from "
           "the new file's first_row_id", "row lineage lost on a rewrite", model_covers=False,
           unit_tests=COW_DELETE_TESTS),
    Mutant("spark-cow-delete-keeps-empty-files", COW_DELETE_PY,
           "        if matched or not live:\n",
           "        if matched:  # mutant\n",
           DELETES, "Spark's copy-on-write delete keeps the files in the filter's range with no live row left, "
           "which Table.delete removes", "files left behind by a delete", model_covers=False,
           unit_tests=COW_DELETE_TESTS),
)

MUTANTS = MUTANTS + BLIND + BLIND_2 + ISSUE_30 + V3 + V3_PATHS + DELETE_ARRAYS + LINEAGE_AND_ARRAYS + SPARK_COW_DELETE

_BY_NAME = {m.name: m for m in MUTANTS}
assert len(_BY_NAME) == len(MUTANTS), "mutant names are unique"
assert all(m.area in AREAS for m in MUTANTS)


def by_name(name: str) -> Mutant:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no mutant {name!r}; mutants: {', '.join(sorted(_BY_NAME))}") from None
