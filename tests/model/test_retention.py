"""The per-ref retention function (model/retention.py) against examples built from the Iceberg
table spec's "Snapshot Retention Policy" and "Snapshot References" (min-snapshots-to-keep,
max-snapshot-age-ms per branch, max-ref-age-ms per ref, the table's history.expire.*
defaults; main never expires), and the typed errors for inputs no metadata can describe."""
from __future__ import annotations

import pytest

from icefloe.model import retention as R

H = 3_600_000
NOW = 1_000 * H


def line(first_id: int, n: int, start_ms: int, step_ms: int, parent: int | None = None) -> tuple:
    """n snapshots first_id.. each the parent of the next, `step_ms` apart from `start_ms`."""
    out = []
    for i in range(n):
        out.append(R.Snapshot(first_id + i, parent if i == 0 else first_id + i - 1, start_ms + i * step_ms))
    return tuple(out)


def ids(*xs) -> frozenset:
    return frozenset(xs)


def test_branch_keeps_its_last_n_and_main_the_tables_one():
    """Goal: min-snapshots-to-keep of a branch keeps its last N however old; main keeps the
    table's default (1). Method: a branch of 5 and main of 3, all older than any age."""
    main = line(1, 3, NOW - 900 * H, H)
    b = line(10, 5, NOW - 800 * H, H, parent=1)
    t = R.Table(main + b, {"main": R.Ref(3), "b": R.Ref(14, min_snapshots_to_keep=3)})
    out = R.expire(t, NOW)
    assert out.snapshots == ids(3, 14, 13, 12) and out.refs == {"main", "b"}
    assert out.expired(t) == ids(1, 2, 10, 11)
    assert "one of the last 3 of b" in out.why[12]


def test_branch_max_snapshot_age_keeps_young_ancestors_and_stops_at_the_first_old_one():
    """Goal: max-snapshot-age-ms of a branch keeps the ancestors not older than it, past its
    min; the walk ends at the first ancestor that is neither. Method: b's snapshots 3 h apart
    under b's 10 h, main's under the table's 1 h; an old ancestor with a young parent."""
    main = line(1, 3, NOW - 20 * H, 2 * H)                        # 20, 18, 16 h old
    b = (R.Snapshot(10, 1, NOW - 12 * H), R.Snapshot(11, 10, NOW - 9 * H),
         R.Snapshot(12, 11, NOW - 6 * H), R.Snapshot(13, 12, NOW - 3 * H))
    t = R.Table(main + b, {"main": R.Ref(3), "b": R.Ref(13, max_snapshot_age_ms=10 * H)},
                {"history.expire.max-snapshot-age-ms": str(H)})
    out = R.expire(t, NOW)
    assert out.snapshots == ids(3, 13, 12, 11)                    # 10 is 12 h old: past b's 10 h
    skewed = R.Table(main + (R.Snapshot(10, 1, NOW - H), R.Snapshot(11, 10, NOW - 12 * H)) + b[2:], t.refs,
                     t.properties)
    assert R.expire(skewed, NOW).snapshots == ids(3, 13, 12)      # 11 (12 h) ends the walk: 10 (1 h) goes too


def test_tag_keeps_its_snapshot_until_its_max_ref_age():
    """Goal: a tag keeps its own snapshot only, and a ref past max-ref-age-ms is removed with
    what only it kept; main never expires. Method: two tags, one past its age; main older
    than the table's max-ref-age-ms."""
    main = line(1, 4, NOW - 100 * H, H)
    t = R.Table(main, {"main": R.Ref(4), "young": R.Ref(2, R.TAG, max_ref_age_ms=200 * H),
                       "old": R.Ref(1, R.TAG, max_ref_age_ms=50 * H)},
                {"history.expire.max-ref-age-ms": str(10 * H), "history.expire.max-snapshot-age-ms": str(H)})
    out = R.expire(t, NOW)
    assert out.refs == {"main", "young"} and out.snapshots == ids(4, 2)


def test_branch_past_its_max_ref_age_goes_with_its_line():
    """Goal: a branch whose head is older than its max-ref-age-ms (or the table's) is removed
    and its snapshots expire unless young. Method: an old branch under the table's default."""
    main = line(1, 2, NOW - 30 * H, H)
    b = line(10, 2, NOW - 20 * H, H, parent=1)
    t = R.Table(main + b, {"main": R.Ref(2), "b": R.Ref(11, min_snapshots_to_keep=5)},
                {"history.expire.max-ref-age-ms": str(10 * H), "history.expire.max-snapshot-age-ms": str(H)})
    out = R.expire(t, NOW)
    assert out.refs == {"main"} and out.snapshots == ids(2)


def test_refs_own_settings_override_the_tables_and_the_calls():
    """Goal: a ref's own retention wins over the table's properties and over an expiry call's
    older_than / retain_last, which replace the table's defaults only. Method: two branches,
    one with its own settings, expired with retain_last 2 and a cutoff in the future."""
    main = line(1, 4, NOW - 40 * H, H)
    b = line(10, 4, NOW - 30 * H, H, parent=1)
    t = R.Table(main + b, {"main": R.Ref(4), "b": R.Ref(13, min_snapshots_to_keep=1, max_snapshot_age_ms=28 * H)},
                {"history.expire.min-snapshots-to-keep": "3"})
    out = R.expire(t, NOW, older_than_ms=NOW + 1, retain_last=2)
    assert out.snapshots == ids(4, 3, 13, 12)                     # main: 2 (the call); b: 28 h (its own)
    assert R.expire(t, NOW, older_than_ms=NOW + 1).snapshots == ids(4, 3, 2, 13, 12)   # main: the table's 3


def test_snapshots_on_no_line_stay_while_young():
    """Goal: a snapshot no kept ref reaches (a rolled-back one) expires by the table's age
    only. Method: main rolled back past two snapshots, one young, one old."""
    snaps = line(1, 2, NOW - 10 * H, H) + (R.Snapshot(3, 2, NOW - 200 * H), R.Snapshot(4, 2, NOW - H))
    t = R.Table(snaps, {"main": R.Ref(2)}, {"history.expire.max-snapshot-age-ms": str(5 * H)})
    assert R.expire(t, NOW).snapshots == ids(2, 4)


@pytest.mark.parametrize("table, message", [
    (R.Table((R.Snapshot(1, None, 0),), {"main": R.Ref(1)}, {"history.expire.max-snapshot-age-ms": "soon"}),
     "not an integer"),
    (R.Table((R.Snapshot(1, None, 0),), {"main": R.Ref(1)}, {"history.expire.min-snapshots-to-keep": "0"}),
     "out of range"),
    (R.Table((R.Snapshot(1, None, 0),), {"main": R.Ref(1), "t": R.Ref(1, R.TAG, min_snapshots_to_keep=2)}),
     "branch retention"),
    (R.Table((R.Snapshot(1, 2, 0), R.Snapshot(2, 1, 0)), {"main": R.Ref(1)}), "cycle"),
    (R.Table((R.Snapshot(1, None, 0),), {"main": R.Ref(7)}), "does not have"),
    (R.Table((R.Snapshot(1, None, 0), R.Snapshot(1, None, 0)), {"main": R.Ref(1)}), "twice"),
])
def test_inputs_no_metadata_can_describe_are_refused(table, message):
    """Goal: a table the spec cannot describe is a typed error naming what, never a guess.
    Method: one bad input each."""
    with pytest.raises(R.RetentionInputError, match=message):
        R.expire(table, NOW)


def test_the_v2_models_expiry_is_the_corner_that_keeps_the_heads():
    """Goal: spec/PROTOCOL.md 11.2.1's claim that the v2 model's EXPIRE (heads of the refs
    only) is this function at retain_last 1 with every snapshot older than any age. Method:
    main, a branch and a tag over one line, expired with a cutoff past every snapshot."""
    snaps = line(1, 4, NOW - 50 * H, H) + line(10, 2, NOW - 40 * H, H, parent=2)
    t = R.Table(snaps, {"main": R.Ref(4), "b": R.Ref(11), "t": R.Ref(3, R.TAG)})
    out = R.expire(t, NOW, older_than_ms=NOW + 1, retain_last=1)
    assert out.snapshots == ids(4, 11, 3) == frozenset(r.snapshot_id for r in t.refs.values())
