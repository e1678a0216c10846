"""compare_peers.py: the lock libraries users pick today, run in rlock's scenarios.

Peers (library, variant, label): node `redlock` 4 (defaults; retryDelay 10 ms), node
`redis-semaphore` Mutex 5 (defaults; retryInterval 1 ms), both on ioredis, and redis-py `Lock`
(Debian's python3-redis; default sleep 0.1 s; sleep 1 ms). `install_node_peers()` installs the
pinned versions of bench/peers/package-lock.json with `npm ci` when missing.
Scenarios, with the workers of bench/peers (see node_worker.js for the protocol):
- `uncontended(peer, port, concurrency, duration_s)`: one process, `concurrency` concurrent
  lock+unlock loops on distinct names;
- `contended(peer, port, processes, hold_us, duration_s)`: `processes` workers on one lock, GET+SET
  of a counter inside, the figures of compare_stats;
- `accounting_pass(...)`: the contended run again with MONITOR open, client requests counted.
Results have `rlock bench`'s JSON shapes plus "label", "variant" and "errors".
"""
import contextlib
import json
import os
import subprocess
import sys

import redis

import compare_monitor
import compare_stats
import compare_workers

PEERS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers")
PEERS = [
    ("redlock", "default", "redlock (defaults)"),
    ("redlock", "tuned", "redlock (retryDelay 10 ms)"),
    ("redis-semaphore", "default", "redis-semaphore Mutex (defaults)"),
    ("redis-semaphore", "tuned", "redis-semaphore Mutex (retryInterval 1 ms)"),
    ("redis-py", "default", "redis-py Lock (sleep 0.1 s)"),
    ("redis-py", "tuned", "redis-py Lock (sleep 1 ms)"),
]
LOCK_TTL_MS = 10000
START_DELAY_S = 0.5
HARD_DEADLINE_MARGIN_S = 60
NPM_TIMEOUT_S = 300
LOCK_NAME = "bench:peer:lock"
COUNTER_KEY = "bench:peer:counter"


def install_node_peers():
    if os.path.isdir(os.path.join(PEERS_DIR, "node_modules", "redis-semaphore")):
        return
    print("installing the node peers (npm ci in bench/peers)", file=sys.stderr)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=PEERS_DIR, check=True,
                   timeout=NPM_TIMEOUT_S, stdout=sys.stderr)


def _argv(peer, config):
    library, variant, _ = peer
    config = dict(config, library=library, variant=variant, ttl_ms=LOCK_TTL_MS)
    if library == "redis-py":
        return ["/usr/bin/python3", os.path.join(PEERS_DIR, "py_worker.py"), json.dumps(config)]
    return ["node", os.path.join(PEERS_DIR, "node_worker.js"), json.dumps(config)]


def _labels(peer):
    return {"library": peer[0], "variant": peer[1], "label": peer[2]}


def uncontended(peer, port, concurrency, duration_s):
    config = {"scenario": "uncontended", "port": port, "concurrency": concurrency,
              "lock_name": "bench:peer:u", "hard_deadline_s": duration_s + HARD_DEADLINE_MARGIN_S}
    results, failed = compare_workers.run_workers([_argv(peer, config)], START_DELAY_S, duration_s)
    res = results[0] or {"latency_ns": [], "errors": 0, "start_ns": 0, "finished_ns": 0}
    measured_s = (int(res["finished_ns"]) - int(res["start_ns"])) / 1e9
    out = {"scenario": "uncontended", **_labels(peer), "threads": concurrency,
           "duration_s": measured_s, "errors": res["errors"], "failed_workers": failed}
    out.update(compare_stats.uncontended_figures(res["latency_ns"], measured_s))
    return out


def _contended_run(peer, port, processes, hold_us, duration_s, on_ready=None):
    client = redis.Redis(host="127.0.0.1", port=port)
    client.delete(LOCK_NAME, COUNTER_KEY)
    config = {"scenario": "contended", "port": port, "concurrency": 1, "lock_name": LOCK_NAME,
              "counter_key": COUNTER_KEY, "hold_us": hold_us,
              "hard_deadline_s": duration_s + HARD_DEADLINE_MARGIN_S}
    results, failed = compare_workers.run_workers([_argv(peer, config)] * processes,
                                                  START_DELAY_S, duration_s, on_ready)
    counter = int(client.get(COUNTER_KEY) or 0)
    ok = [r for r in results if r is not None]
    out = {"scenario": "contended", **_labels(peer), "processes": processes, "threads": 1,
           "hold_us": hold_us, "errors": sum(r["errors"] for r in ok), "failed_workers": failed}
    out.update(compare_stats.contended_figures([r["intervals"] for r in ok], counter, duration_s))
    return out


def contended(peer, port, processes, hold_us, duration_s):
    return _contended_run(peer, port, processes, hold_us, duration_s)


def accounting_pass(peer, port, processes, hold_us, duration_s):
    """Client requests per acquisition from MONITOR (workers connect before it opens)."""
    with contextlib.ExitStack() as stack:
        captured = []
        run = _contended_run(peer, port, processes, hold_us, duration_s,
                             lambda: captured.append(stack.enter_context(
                                 compare_monitor.monitor_capture(port))))
    lines = captured[0] if captured else []
    requests, by_command, workload = compare_monitor.client_requests(lines, COUNTER_KEY)
    acquisitions = run["acquisitions"]
    return {"acquisitions": acquisitions, "client_requests": requests, "commands": by_command,
            "workload_requests": workload,
            "client_requests_per_acquisition": requests / acquisitions if acquisitions else 0.0}
