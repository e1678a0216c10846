"""compare_rlock.py: rlock's scenarios, run through `rlock bench ... --json --url URL`.

`find_rlock(path)` returns the rlock binary to use: the given path, else build/tools/cli/rlock, else
any build*/tools/cli/rlock, the first one that has the `bench` command (None if there is none).
`run_scenario(binary, port, scenario, options, timeout_s)` runs one scenario and returns its JSON
(`rlock bench`'s schema, plus "failed_checks": what it reported on exit status 1, and "options":
the options it ran with). `variant(row)` names how a row was run ("queued", "queued, async API,
2 connections"). `accounting_pass(...)` runs a contended configuration again with MONITOR
open and counts the client requests per acquisition the way compare_peers does, leaving out the
bench driver's connection (the one that reads INFO commandstats) and counting only between its two
INFO commands (the window its commandstats figure covers); the workload's counter is the key the
workers GET most. Every run is bounded.
"""
import glob
import json
import os
import subprocess

import compare_monitor
import compare_workers

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_MARGIN_S = 120


def _has_bench(binary):
    try:
        out = subprocess.run([binary, "bench", "--help"], capture_output=True, text=True,
                             timeout=10, check=False)
        return out.returncode == 0 and "uncontended" in out.stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_rlock(path=None):
    if path:
        return path if _has_bench(path) else None
    candidates = [os.path.join(REPO, "build", "tools", "cli", "rlock")]
    candidates += sorted(glob.glob(os.path.join(REPO, "build*", "tools", "cli", "rlock")))
    for c in candidates:
        if os.access(c, os.X_OK) and _has_bench(c):
            return c
    return None


def variant(r):
    """How an rlock row was run: its lock mode, and the API and connections when not the default."""
    parts = [r.get("mode", "?")]
    if r.get("api") == "async":
        parts.append("async API")
    if r.get("connections", 1) != 1:
        parts.append("%d connections" % r["connections"])
    return ", ".join(parts)


def url(port):
    return "redis://127.0.0.1:%d" % port


def run_scenario(binary, port, scenario, options, timeout_s):
    argv = [binary, "bench", scenario] + options + ["--json", "--url", url(port)]
    status, out, err = compare_workers.run_bounded(argv, timeout_s + RUN_MARGIN_S, accept=(0, 1))
    result = json.loads(out.strip().splitlines()[-1])
    result["argv"] = " ".join(["rlock", "bench", scenario] + options + ["--json"])
    result["options"] = list(options)
    # Status 1: a check of the scenario failed; rlock bench names it on stderr.
    result["failed_checks"] = [l for l in err.splitlines() if l.startswith("rlock bench")] \
        if status == 1 else []
    return result


def accounting_pass(binary, port, options, duration_s):
    with compare_monitor.monitor_capture(port) as lines:
        run = run_scenario(binary, port, "contended", options, duration_s)
    driver = compare_monitor.clients_issuing(lines, "info")
    lines = compare_monitor.between_markers(lines, driver, "info")
    counter_key = compare_monitor.most_read_key(lines, driver)
    requests, by_command, workload = compare_monitor.client_requests(lines, counter_key, driver)
    acquisitions = run["acquisitions"]
    return {"acquisitions": acquisitions, "client_requests": requests, "commands": by_command,
            "workload_requests": workload, "counter_key": counter_key,
            "failed_checks": run["failed_checks"],
            "driver_clients": sorted(driver),
            "client_requests_per_acquisition": requests / acquisitions if acquisitions else 0.0}
