"""compare_stats.py: the figures of every peer's scenarios, with `rlock bench`'s definitions.

Written once and used for every peer, so that their rows mean the same as rlock's
(tools/cli/demo_stats.cpp and bench_contended.cpp compute rlock's own):
- percentile(q) of sorted samples is the nearest-rank sample: index ceil(q * n) - 1 (at least 0);
- contended: intervals (acquired_ns, released_ns) on CLOCK_MONOTONIC from every worker, sorted
  by acquire; utilisation = sum of holds / (last release - first acquire); a hold acquired before
  the latest release so far is an overlap; a gap (acquire - previous release) of at least 0 is a
  hand-off when the previous holder was another worker, and a re-acquisition when it was the
  same worker (not a hand-off: counted apart, like `rlock bench contended`); fairness = min/max
  acquisitions per worker; lost updates = acquisitions - final counter.
Results have the JSON shapes of `rlock bench` (samples thinned to at most SAMPLES_MAX).
- utilisation_bound: with a mean hold H and the machine's hand-off floor F (bench/handoff_floor.cpp,
  same run), an estimate of the utilisation a hand-off at F would give: H / (H + F); H is derived
  from a row's utilisation U and mean gap G over every gap, re-acquisitions included
  (U = H / (H + G), exact but for the one gap fewer than holds).
"""

import math

SAMPLES_MAX = 20000


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    n = len(sorted_values)
    return sorted_values[min(max(math.ceil(q * n), 1), n) - 1]


def thin(sorted_values, limit=SAMPLES_MAX):
    """At most `limit` evenly spaced samples of a sorted list (its distribution kept)."""
    n = len(sorted_values)
    if n <= limit:
        return list(sorted_values)
    return [sorted_values[int(i * (n - 1) / (limit - 1))] for i in range(limit)]


def uncontended_figures(latencies_ns, duration_s):
    lat = sorted(x / 1000.0 for x in latencies_ns)
    return {
        "cycles": len(lat),
        "cycles_per_s": len(lat) / duration_s if duration_s > 0 else 0.0,
        "latency_us": {"p50": percentile(lat, 0.5), "p99": percentile(lat, 0.99),
                       "p999": percentile(lat, 0.999), "max": lat[-1] if lat else 0.0},
        "samples_us": thin(lat),
    }


def contended_figures(per_worker_intervals, counter, duration_s):
    """per_worker_intervals: one list of (acquired_ns, released_ns) per worker."""
    holds = sorted((int(a), int(r), w) for w, ws in enumerate(per_worker_intervals) for a, r in ws)
    per_worker = [len(w) for w in per_worker_intervals]
    overlaps = 0
    handoff = []
    reacquire = []
    latest_release = None
    for i, (acquired, released, worker) in enumerate(holds):
        if latest_release is not None and acquired < latest_release:
            overlaps += 1
        if i > 0:
            prev = holds[i - 1]
            gap = (acquired - prev[1]) / 1000.0
            if gap >= 0:
                (reacquire if prev[2] == worker else handoff).append(gap)
        latest_release = released if latest_release is None else max(latest_release, released)
    handoff.sort()
    reacquire.sort()
    held = sum(r - a for a, r, _ in holds)
    span = max(r for _, r, _ in holds) - holds[0][0] if holds else 0
    acquisitions = len(holds)
    return {
        "duration_s": duration_s,
        "acquisitions": acquisitions,
        "acquisitions_per_s": acquisitions / duration_s if duration_s > 0 else 0.0,
        "utilisation": held / span if span > 0 else 0.0,
        "handoff_us": {"p50": percentile(handoff, 0.5), "p99": percentile(handoff, 0.99),
                       "max": handoff[-1] if handoff else 0.0},
        "handoff_samples_us": thin(handoff),
        "gap_mean_us": mean(handoff + reacquire),
        "reacquisitions": len(reacquire),
        "reacquire_p50_us": percentile(reacquire, 0.5),
        "fairness": min(per_worker) / max(per_worker) if per_worker and max(per_worker) else 0.0,
        "per_worker": per_worker,
        "lost_updates": acquisitions - counter,
        "overlaps": overlaps,
    }


def mean(values):
    return sum(values) / len(values) if values else 0.0


def utilisation_bound(utilisation, handoff_mean_us, floor_us):
    """(mean hold µs, the utilisation a hand-off at the floor would give with that hold), or None
    when the row has no hand-off to go by."""
    if not 0.0 < utilisation < 1.0 or handoff_mean_us <= 0.0 or floor_us <= 0.0:
        return None
    hold_us = handoff_mean_us * utilisation / (1.0 - utilisation)
    return hold_us, hold_us / (hold_us + floor_us)
