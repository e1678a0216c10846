#!/usr/bin/python3
"""py_worker.py: one benchmark worker process for the redis-py peer of bench/compare.

The peer is redis-py's `Lock` (Debian's python3-redis), with its default `sleep` (0.1 s, the
"default" variant) or `sleep=0.001` (the "tuned" variant), default `timeout` (None).

Usage: py_worker.py '<json config>' with the same config and stdin/stdout protocol as
node_worker.js: prints "ready", reads "go <start_ns> <end_ns>" (CLOCK_MONOTONIC,
time.monotonic_ns()), runs until end, prints one JSON line and exits:
  uncontended: {"cycles":n,"latency_ns":[...],"errors":n,"start_ns":s,"finished_ns":f}
               (`concurrency` threads, one lock name each; cycles before start warm up)
  contended:   {"intervals":[[acquired_ns,released_ns],...],"errors":n}
Guarantees: acquire blocks as a user would (bounded by blocking_timeout past the end instant); the
process exits by itself hard_deadline_s after start.
"""
import json
import os
import sys
import threading
import time

import redis

CFG = json.loads(sys.argv[1])
SLEEP = 0.001 if CFG["variant"] == "tuned" else 0.1
GRACE_S = 10.0


def make_lock(client, name):
    return client.lock(name, sleep=SLEEP)


def acquire(lock, end_ns, grace_s=GRACE_S):
    """Blocks until acquired; False only if still not acquired grace_s past the end instant."""
    left = (end_ns - time.monotonic_ns()) / 1e9 + grace_s
    return lock.acquire(blocking=True, blocking_timeout=max(left, 0.001))


def uncontended(client, start_ns, end_ns):
    """Cycles that start before start_ns warm up and are not recorded."""
    latencies = []
    errors = [0]
    guard = threading.Lock()

    def loop(w):
        lock = make_lock(client, f"{CFG['lock_name']}:{os.getpid()}:{w}")
        mine = []
        while time.monotonic_ns() < end_ns:
            t0 = time.monotonic_ns()
            if not acquire(lock, end_ns):
                with guard:
                    errors[0] += 1
                continue
            lock.release()
            if t0 >= start_ns:
                mine.append(time.monotonic_ns() - t0)
        with guard:
            latencies.extend(mine)

    threads = [threading.Thread(target=loop, args=(w,)) for w in range(CFG["concurrency"])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"cycles": len(latencies), "latency_ns": latencies, "errors": errors[0],
            "start_ns": start_ns, "finished_ns": time.monotonic_ns()}


def contended(client, end_ns):
    lock = make_lock(client, CFG["lock_name"])
    hold_ns = CFG["hold_us"] * 1000
    intervals = []
    errors = 0
    while time.monotonic_ns() < end_ns:
        # Waits until the end instant at most, as rlock's workers do.
        if not acquire(lock, end_ns, grace_s=0.0):
            if time.monotonic_ns() >= end_ns:
                break
            errors += 1
            continue
        acquired = time.monotonic_ns()
        if acquired >= end_ns:
            # Granted after the end instant (its last poll then): not counted, like rlock's
            # workers, which give up waiting at the end.
            try:
                lock.release()
            except redis.exceptions.LockError:
                errors += 1
            break
        v = client.get(CFG["counter_key"])
        client.set(CFG["counter_key"], str((0 if v is None else int(v)) + 1))
        hold_end = time.monotonic_ns() + hold_ns
        while (left := hold_end - time.monotonic_ns()) > 0:
            time.sleep(left / 1e9)
        released = time.monotonic_ns()
        try:
            lock.release()
        except redis.exceptions.LockError:
            errors += 1
        intervals.append([acquired, released])
    return {"intervals": intervals, "errors": errors}


def main():
    client = redis.Redis(host="127.0.0.1", port=CFG["port"], max_connections=CFG["concurrency"] + 4)
    client.ping()
    print("ready", flush=True)
    _, start_s, end_s = sys.stdin.readline().split()
    start_ns, end_ns = int(start_s), int(end_s)
    killer = threading.Timer(CFG["hard_deadline_s"], lambda: os._exit(3))
    killer.daemon = True
    killer.start()
    if CFG["scenario"] == "contended":
        while (left := start_ns - time.monotonic_ns()) > 0:
            time.sleep(left / 1e9)
        result = contended(client, end_ns)
    else:
        result = uncontended(client, start_ns, end_ns)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    client.close()


if __name__ == "__main__":
    main()
