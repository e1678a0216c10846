"""compare_test.py: unit tests of bench/compare's pure parts (no server, no peers).

compare_stats computes every peer's figures with `rlock bench`'s definitions, and compare_monitor
counts client requests from MONITOR lines: the comparison is only as fair as these two. Run by
ctest (bench_compare_python), or: cd bench && python3 -m unittest -v compare_test
"""
import unittest

import compare_monitor
import compare_profile
import compare_stats


class percentile_and_thin(unittest.TestCase):
    def test_percentile_is_the_nearest_rank_sample_as_in_rlock_bench(self):
        values = list(range(1, 101))
        self.assertEqual(compare_stats.percentile(values, 0.5), 50)
        self.assertEqual(compare_stats.percentile(values, 0.99), 99)
        self.assertEqual(compare_stats.percentile(values, 1.0), 100)
        self.assertEqual(compare_stats.percentile([7, 8, 9, 10], 0.5), 8)
        self.assertEqual(compare_stats.percentile([7, 8, 9, 10], 0.51), 9)
        self.assertEqual(compare_stats.percentile([7], 0.0), 7)
        self.assertEqual(compare_stats.percentile([], 0.5), 0.0)

    def test_thin_keeps_the_ends_and_at_most_the_limit(self):
        values = list(range(100000))
        thinned = compare_stats.thin(values, limit=1000)
        self.assertEqual(len(thinned), 1000)
        self.assertEqual(thinned[0], 0)
        self.assertEqual(thinned[-1], 99999)
        self.assertEqual(thinned, sorted(thinned))
        self.assertEqual(compare_stats.thin([3, 4], limit=1000), [3, 4])


class uncontended(unittest.TestCase):
    def test_cycles_per_second_and_latencies_in_microseconds(self):
        f = compare_stats.uncontended_figures([2000, 1000, 3000, 4000], 2.0)
        self.assertEqual(f["cycles"], 4)
        self.assertEqual(f["cycles_per_s"], 2.0)
        self.assertEqual(f["latency_us"]["p50"], 2.0)
        self.assertEqual(f["latency_us"]["max"], 4.0)
        self.assertEqual(f["samples_us"], [1.0, 2.0, 3.0, 4.0])


class contended(unittest.TestCase):
    def test_hand_off_utilisation_fairness_across_workers(self):
        # Worker 0 holds [0, 100) and [300, 400); worker 1 holds [150, 250).
        f = compare_stats.contended_figures([[(0, 100), (300, 400)], [(150, 250)]], 3, 1.0)
        self.assertEqual(f["acquisitions"], 3)
        self.assertEqual(f["overlaps"], 0)
        # Gaps of 50 ns each: hand-offs are next acquire - previous release, in microseconds.
        self.assertEqual(f["handoff_us"]["p50"], 0.05)
        self.assertEqual(f["handoff_us"]["max"], 0.05)
        self.assertAlmostEqual(f["utilisation"], 300 / 400)
        self.assertEqual(f["per_worker"], [2, 1])
        self.assertEqual(f["fairness"], 0.5)
        self.assertEqual(f["lost_updates"], 0)

    def test_an_overlap_is_counted_and_is_not_a_hand_off(self):
        f = compare_stats.contended_figures([[(0, 100)], [(50, 150)], [(200, 210)]], 3, 1.0)
        self.assertEqual(f["overlaps"], 1)
        self.assertEqual(f["handoff_samples_us"], [0.05])

    def test_a_worker_taking_the_lock_straight_back_is_no_hand_off(self):
        # Worker 0 holds [0, 100) and [110, 200); worker 1 holds [500, 600).
        f = compare_stats.contended_figures([[(0, 100), (110, 200)], [(500, 600)]], 3, 1.0)
        self.assertEqual(f["handoff_samples_us"], [0.3])
        self.assertEqual(f["handoff_us"]["max"], 0.3)
        self.assertEqual(f["reacquisitions"], 1)
        self.assertEqual(f["reacquire_p50_us"], 0.01)
        # The mean gap (for the utilisation bound) counts both.
        self.assertAlmostEqual(f["gap_mean_us"], 0.155)

    def test_an_overlap_with_an_earlier_hold_than_the_previous_is_counted(self):
        # [0, 300) is still held when [150, 160) and then [200, 210) are acquired.
        f = compare_stats.contended_figures([[(0, 300)], [(150, 160)], [(200, 210)]], 3, 1.0)
        self.assertEqual(f["overlaps"], 2)

    def test_a_hand_off_in_the_same_nanosecond_is_not_an_overlap(self):
        f = compare_stats.contended_figures([[(0, 100)], [(100, 200)]], 2, 1.0)
        self.assertEqual(f["overlaps"], 0)
        self.assertEqual(f["handoff_samples_us"], [0.0])

    def test_lost_updates_are_acquisitions_the_counter_missed(self):
        f = compare_stats.contended_figures([[(0, 1), (2, 3)], [(4, 5)]], 2, 1.0)
        self.assertEqual(f["lost_updates"], 1)

    def test_a_worker_that_never_acquired_makes_fairness_zero(self):
        f = compare_stats.contended_figures([[(0, 1)], []], 1, 1.0)
        self.assertEqual(f["fairness"], 0.0)


def monitor_line(client, command, *args):
    quoted = " ".join('"%s"' % a for a in (command,) + args)
    return "+1700000000.000001 [0 %s] %s" % (client, quoted)


class utilisation_bound(unittest.TestCase):
    def test_the_hold_comes_from_utilisation_and_mean_hand_off(self):
        # 2,000 holds of 900 µs, hand-offs of 100 µs, two workers taking turns: utilisation
        # 0.9 but for the one hand-off fewer than holds.
        holds = [(i * 1_000_000, i * 1_000_000 + 900_000) for i in range(2000)]
        f = compare_stats.contended_figures([holds[0::2], holds[1::2]], 0, 2.0)
        self.assertAlmostEqual(f["utilisation"], 0.9, places=4)
        hold, bound = compare_stats.utilisation_bound(f["utilisation"], f["gap_mean_us"], 50.0)
        self.assertAlmostEqual(hold, 900.0, delta=0.5)
        self.assertAlmostEqual(bound, 900.0 / 950.0, places=4)

    def test_a_hand_off_at_the_floor_is_at_the_bound(self):
        hold, bound = compare_stats.utilisation_bound(1200.0 / 1265.0, 65.0, 65.0)
        self.assertAlmostEqual(hold, 1200.0)
        self.assertAlmostEqual(bound, 1200.0 / 1265.0)

    def test_no_bound_without_hand_offs_or_floor(self):
        self.assertIsNone(compare_stats.utilisation_bound(0.0, 100.0, 60.0))
        self.assertIsNone(compare_stats.utilisation_bound(0.9, 0.0, 60.0))
        self.assertIsNone(compare_stats.utilisation_bound(0.9, 100.0, 0.0))
        self.assertEqual(compare_stats.mean([]), 0.0)


class monitor_accounting(unittest.TestCase):
    lines = [
        monitor_line("127.0.0.1:1000", "INFO", "commandstats"),           # the driver
        monitor_line("127.0.0.1:2000", "EVALSHA", "abc", "1", "lock"),    # a worker's script
        monitor_line("lua", "hset", "lock", "owner", "1"),                # run inside it
        monitor_line("127.0.0.1:2000", "GET", "counter"),                 # the workload
        monitor_line("127.0.0.1:2000", "SET", "counter", "1"),
        monitor_line("127.0.0.1:3000", "GET", "counter"),
        monitor_line("127.0.0.1:3000", "SET", "other", "1"),              # not the workload
        monitor_line("127.0.0.1:3000", "SUBSCRIBE", "chan"),
        monitor_line("127.0.0.1:1000", "INFO", "commandstats"),
        monitor_line("127.0.0.1:2000", "PING"),                           # after the window
    ]

    def test_script_commands_driver_and_workload_are_not_client_requests(self):
        window = compare_monitor.between_markers(self.lines, {"127.0.0.1:1000"}, "info")
        requests, by_command, workload = compare_monitor.client_requests(
            window, "counter", exclude_clients={"127.0.0.1:1000"})
        self.assertEqual(by_command, {"evalsha": 1, "set": 1, "subscribe": 1})
        self.assertEqual(requests, 3)
        self.assertEqual(workload, 3)

    def test_without_two_markers_every_line_counts(self):
        self.assertEqual(compare_monitor.between_markers(self.lines[:3], {"127.0.0.1:1000"},
                                                         "info"), self.lines[:3])

    def test_the_driver_and_the_counter_are_found_from_the_lines(self):
        self.assertEqual(compare_monitor.clients_issuing(self.lines, "info"), {"127.0.0.1:1000"})
        self.assertEqual(compare_monitor.most_read_key(self.lines), "counter")

    def test_quoted_arguments_with_escapes_parse(self):
        line = '+1700000000.000001 [0 127.0.0.1:2000] "GET" "a \\"quoted\\" key"'
        self.assertEqual(compare_monitor.client_requests([line], "x"), (1, {"get": 1}, 0))


if __name__ == "__main__":
    unittest.main()


class sched_latency(unittest.TestCase):
    TEXT = """
 ---------------------------------------------------------------------------------------------
  Task                  |   Runtime ms  | Switches | Avg delay ms    | Max delay ms    | Max delay start
 ---------------------------------------------------------------------------------------------
  rlock:(35)            |    822.989 ms |     3069 | avg:   0.083 ms | max:   8.925 ms | max start:  1615.504555 s
  redis-server:3989     |    505.036 ms |     5562 | avg:   0.048 ms | max:   1.965 ms | max start:  1616.548928 s
  rlock:4242            |     10.000 ms |        1 | avg:   0.200 ms | max:   0.200 ms | max start:  1616.000000 s
  memfd:sealed-91:1240  |      3.224 ms |        3 | avg:   0.039 ms | max:   0.082 ms | max start:  1616.416447 s
  perf:(2)              |      3.940 ms |        1 | avg:   0.000 ms | max:   0.000 ms | max start:     0.000000 s
 ---------------------------------------------------------------------------------------------
  TOTAL:                |   1340.029 ms |     8646 |
"""

    def test_rows_are_summed_per_command_with_a_switch_weighted_mean(self):
        rows = compare_profile.parse_sched_latency(self.TEXT)
        self.assertEqual([r["task"] for r in rows], ["rlock", "redis-server"])
        rlock, redis = rows
        self.assertAlmostEqual(rlock["runtime_ms"], 832.989)
        self.assertEqual(rlock["switches"], 3070)
        self.assertAlmostEqual(rlock["avg_delay_us"], (83 * 3069 + 200) / 3070)
        self.assertAlmostEqual(rlock["max_delay_us"], 8925.0)
        self.assertEqual(redis["switches"], 5562)
        self.assertAlmostEqual(redis["avg_delay_us"], 48.0)

    def test_nothing_of_interest_gives_no_rows(self):
        self.assertEqual(compare_profile.parse_sched_latency("  perf:(2) | 3.9 ms | 1 |\n"), [])
