"""compare_ceilings.py: the Redis server's own limits, measured with redis-benchmark.

`measure_ceilings(port, quick)` runs redis-benchmark (Debian 12's 7.0, `--csv`, which prints rps and
p50) against the private server: PING at `-c 1` (p50 latency), and EVALSHA of a small
Redisson-style acquire script on spread keys (`-r`, `__rand_int__`) at `-c 1 -P 1`, `-c 50 -P 1`
and `-c 50 -P 16` (ops/s), and at `-P 16` the server main thread's CPU time per EVALSHA (INFO
cpu before and after). Every run is bounded by a timeout; a failed run raises.

`measure_bare_blocking(binary, port, threads, seconds)` runs bench/bare_blocking.cpp (the build's
bench/rlock_bare_blocking): threads that each wait on a futex for their reply from one I/O
thread, the ceiling's script for both calls of a cycle, no lock library; cycles/s and CPU per
cycle of client and server.

`measure_handoff_floor(binary, port, gap_us, quick)` runs bench/handoff_floor.cpp (the build's
bench/rlock_handoff_floor, found next to the rlock binary by `find_handoff_floor`): the wake-up of
one single-threaded hiredis process by another through this server, after `gap_us` idle, for a
bare PUBLISH and for the least script a hand-off needs; mean, p50, p90, p99, max in µs.
"""
import csv
import io
import json
import os
import subprocess

import redis

# Redisson's tryLockInnerAsync: take or re-enter the hash, set the lease, nil; else the TTL left.
ACQUIRE_SCRIPT = (
    "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) "
    "then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; end; return redis.call('pttl', KEYS[1]);")
RUN_TIMEOUT_S = 120
KEYSPACE = 100000


def _bench(port, clients, pipeline, requests, command):
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients),
            "-P", str(pipeline), "-n", str(requests), "-r", str(KEYSPACE), "--csv"] + command
    out = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=True)
    rows = [r for r in csv.DictReader(io.StringIO(out.stdout)) if r.get("rps")]
    if not rows:
        raise RuntimeError("redis-benchmark printed no result: " + out.stdout + out.stderr)
    row = rows[0]
    return {"rps": float(row["rps"]), "p50_us": float(row["p50_latency_ms"]) * 1000.0,
            "p99_us": float(row["p99_latency_ms"]) * 1000.0}


def server_cpu_s(port):
    """The server main thread's CPU seconds so far (Redis 7; the whole process before that)."""
    cpu = redis.Redis(host="127.0.0.1", port=port).info("cpu")
    if "used_cpu_user_main_thread" in cpu:
        return cpu["used_cpu_user_main_thread"] + cpu["used_cpu_sys_main_thread"]
    return cpu["used_cpu_user"] + cpu["used_cpu_sys"]


def measure_ceilings(port, quick):
    scale = 1 if quick else 10
    sha = redis.Redis(host="127.0.0.1", port=port).script_load(ACQUIRE_SCRIPT)
    evalsha = ["EVALSHA", sha, "1", "rlock-ceiling:__rand_int__", "30000", "bench-client:1"]
    ping = _bench(port, 1, 1, 20000 * scale, ["PING"])
    result = {
        "ping_c1": ping,
        "evalsha_c1_p1": _bench(port, 1, 1, 20000 * scale, evalsha),
        "evalsha_c50_p1": _bench(port, 50, 1, 50000 * scale, evalsha),
    }
    before = server_cpu_s(port)
    requests = 200000 * scale
    result["evalsha_c50_p16"] = _bench(port, 50, 16, requests, evalsha)
    # The server main thread's CPU time per EVALSHA at the -P 16 ceiling (INFO cpu).
    result["evalsha_c50_p16"]["server_cpu_us"] = (server_cpu_s(port) - before) * 1e6 / requests
    redis.Redis(host="127.0.0.1", port=port).flushall()
    return result


def find_bench_tool(rlock_binary, name):
    """The build's bench/<name> next to <build>/tools/cli/rlock, or None."""
    if not rlock_binary:
        return None
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(rlock_binary))))
    path = os.path.join(build, "bench", name)
    return path if os.access(path, os.X_OK) else None


def find_handoff_floor(rlock_binary):
    """The build's bench/rlock_handoff_floor, or None."""
    return find_bench_tool(rlock_binary, "rlock_handoff_floor")


def find_bare_blocking(rlock_binary):
    """The build's bench/rlock_bare_blocking, or None."""
    return find_bench_tool(rlock_binary, "rlock_bare_blocking")


def measure_bare_blocking(binary, port, threads, seconds):
    """bench/bare_blocking.cpp against this server: `threads` threads that each wait on a futex
    for their reply from one I/O thread, the ceiling's script, no lock library. Its JSON."""
    argv = [binary, "--port", str(port), "--threads", str(threads), "--duration",
            str(int(seconds * 1000)), "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(argv), out.stderr.strip()))
    return json.loads(out.stdout)


def measure_handoff_floor(binary, port, gap_us, quick):
    argv = [binary, "--port", str(port), "--gap", str(gap_us), "--count",
            "200" if quick else "3000", "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    if out.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(argv), out.stderr.strip()))
    return json.loads(out.stdout)
