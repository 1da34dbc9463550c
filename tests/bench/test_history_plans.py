"""The history bench's reading of EXPLAIN plans (bench/history_plans.py): which scans a plan uses, and
when a periodic query reads a history table whole. Canned plans of PostgreSQL 15; no database."""

from bench.history_plans import plan_is_finding, scans_of, verdict_of

SEQ_SCAN = """GroupAggregate (actual time=29.026..29.038 rows=4 loops=1)
  ->  Sort (actual time=29.015..29.019 rows=60 loops=1)
        ->  Seq Scan on fulfillment_order (actual time=19.530..28.982 rows=60 loops=1)
              Filter: ((status)::text <> ALL ('{REQUEST_COMPLETED,FAILED,DECLINED}'::text[]))
              Rows Removed by Filter: 99944
Execution Time: 29.054 ms"""

PRIMARY_KEY_WALK = """Limit (actual time=294.360..294.360 rows=0 loops=1)
  ->  LockRows (actual time=294.359..294.359 rows=0 loops=1)
        ->  Index Scan using inbox_notification_pkey on inbox_notification n (actual time=294.3..294.3 rows=0 loops=1)
              Filter: ((state)::text = 'received'::text)
              Rows Removed by Filter: 1009626
Execution Time: 294.407 ms"""

INDEX_AND_UNRUN_SEQ_SCAN = """Limit (actual time=0.009..0.009 rows=0 loops=1)
  ->  Nested Loop Anti Join (actual time=0.004..0.004 rows=0 loops=1)
        ->  Index Scan using inbox_received_at on inbox_notification (actual time=0.003 rows=0 loops=1)
              Index Cond: (received_at < '2025-11-24 05:54:23.581207+00'::timestamp with time zone)
        ->  Seq Scan on fulfillment_order u0 (never executed)
              Filter: ((status)::text <> ALL ('{REQUEST_COMPLETED,FAILED,DECLINED}'::text[]))
Execution Time: 0.028 ms"""

MIN_THROUGH_AN_INDEX = """Result (actual time=329.196..329.197 rows=1 loops=1)
  InitPlan 1 (returns $0)
    ->  Limit (actual time=329.190..329.191 rows=1 loops=1)
          ->  Index Scan using inbox_received_at on inbox_notification (actual time=329.188 rows=1 loops=1)
                Index Cond: (received_at IS NOT NULL)
                Filter: ((state)::text = ANY ('{received,queued,processing}'::text[]))
                Rows Removed by Filter: 999960"""

BITMAP_AND_PARALLEL = """Gather (actual time=1.0..2.0 rows=0 loops=1)
  ->  Bitmap Heap Scan on inbox_notification (actual time=0.057..0.058 rows=0 loops=1)
        Recheck Cond: ((state)::text = 'queued'::text)
        ->  Bitmap Index Scan on inbox_state_updated (actual time=0.034..0.034 rows=0 loops=1)
              Index Cond: ((state)::text = 'queued'::text)
  ->  Parallel Seq Scan on fulfillment_orderstep u0 (actual time=32.588..32.589 rows=0 loops=3)
        Filter: (detail <> ''::text)
        Rows Removed by Filter: 33335"""


def test_a_sequential_scan_of_a_history_table_is_a_finding():
    verdict = verdict_of(scans_of(SEQ_SCAN.splitlines()))
    assert verdict == "SEQ SCAN on fulfillment_order"
    assert plan_is_finding(verdict)


def test_a_primary_key_walked_with_a_filter_is_a_scan_in_disguise():
    scans = scans_of(PRIMARY_KEY_WALK.splitlines())
    assert scans[0]["index"] == "inbox_notification_pkey" and scans[0]["removed"] == 1009626
    assert not scans[0]["condition"]
    assert verdict_of(scans) == "FULL INDEX WALK on inbox_notification (inbox_notification_pkey)"


def test_a_min_read_through_an_index_that_filters_the_whole_table_is_a_walk():
    assert verdict_of(scans_of(MIN_THROUGH_AN_INDEX.splitlines())).startswith("FULL INDEX WALK on inbox_notification")


def test_a_scan_the_executor_never_ran_is_not_a_finding():
    verdict = verdict_of(scans_of(INDEX_AND_UNRUN_SEQ_SCAN.splitlines()))
    assert verdict == "index" and not plan_is_finding(verdict)


def test_parallel_workers_rows_are_counted_over_their_loops_and_bitmap_scans_are_index_scans():
    scans = scans_of(BITMAP_AND_PARALLEL.splitlines())
    kinds = [(scan["kind"], scan["on"]) for scan in scans]
    assert ("Bitmap Index Scan", "inbox_state_updated") in kinds
    assert scans[-1]["removed"] == 33335 * 3
    assert verdict_of(scans) == "SEQ SCAN on fulfillment_orderstep"
