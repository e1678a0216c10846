"""compare_run.py: the sequence of one bench/compare run (see bench/compare for the command).

`run(quick, rlock_path, out_dir, repo, notes)` starts the private server, measures the ceilings (and
the machine's hand-off floor, with the rlock binary's build's rlock_handoff_floor), runs
rlock's scenarios and the peers' (with 32 threads also the bare blocking client,
rlock_bare_blocking), the accounting passes, a perf profile of each rlock scenario
that missed a target, and writes the report, the plots and the raw JSON. Returns the exit status:
0; 1 if an rlock invariant failed (printed); 2 if a part could not be run (printed, and noted in
the report).
"""
import json
import os
import sys
import time

import compare_ceilings
import compare_peers
import compare_plots
import compare_profile
import compare_report
import compare_rlock
import compare_server

PROCESSES = 8
HOLD_US = 1000
FULL = {"uncontended_s": 5, "contended_s": 10, "accounting_s": 3, "watchdog_locks": 10000,
        "watchdog_periods": 3, "watchdog_rounds": 3, "watchdog_timeout": "30s"}
QUICK = {"uncontended_s": 1, "contended_s": 1, "accounting_s": 1, "watchdog_locks": 1000,
         "watchdog_periods": 1, "watchdog_rounds": 1, "watchdog_timeout": "3s"}


def _log(text):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), text), file=sys.stderr, flush=True)


def _duration(seconds):
    return "%ds" % seconds


def _rlock_contended_options(queued, seconds):
    return ["--processes", str(PROCESSES), "--threads", "1", "--hold", "1ms",
            "--duration", _duration(seconds), "--queue", "on" if queued else "off"]


def _attempt(results, what, step):
    """Runs one step; a failure is logged and noted in the report instead of ending the run."""
    _log(what)
    try:
        step()
        return True
    except (RuntimeError, ValueError, KeyError, OSError) as e:
        _log("FAILED: %s: %s" % (what, e))
        results["notes"].append("not measured: %s (%s)" % (what, e))
        return False


def _uncontended_phase(binary, port, d, results):
    """rlock and every peer, 1 then 32 workers: each comparison close together in time."""
    ok = True
    seconds = d["uncontended_s"]
    for threads in (1, 32):
        # Defaults (blocking API, one connection); with 32, also the async API on 2 connections:
        # one process driving 32 operations, as the node peers do.
        variants = [[]] + ([["--api", "async", "--connections", "2"]] if threads > 1 else [])
        for extra in variants if binary else []:
            options = ["--threads", str(threads), "--duration", _duration(seconds)] + extra
            ok &= _attempt(results, "rlock uncontended, %d threads %s" % (threads, " ".join(extra)),
                           lambda o=options: results["uncontended"].append(
                               compare_rlock.run_scenario(binary, port, "uncontended", o,
                                                          seconds)))
        bare = compare_ceilings.find_bare_blocking(binary) if threads > 1 else None
        if bare:
            # What the wake-ups of blocking threads cost here, next to rlock's blocking row.
            ok &= _attempt(results, "bare blocking client, %d threads" % threads,
                           lambda b=bare, t=threads: results.update(
                               bare_blocking=compare_ceilings.measure_bare_blocking(
                                   b, port, t, seconds)))
        elif threads > 1 and binary:
            results["notes"].append("not measured: the bare blocking client (no "
                                    "rlock_bare_blocking next to the rlock binary's build)")
        for peer in compare_peers.PEERS:
            ok &= _attempt(results, "%s uncontended, %d workers" % (peer[2], threads),
                           lambda p=peer, t=threads: results["uncontended"].append(
                               compare_peers.uncontended(p, port, t, seconds)))
    return ok


def _accounting(binary, port, d, row):
    if row["library"] == "rlock":
        options = _rlock_contended_options(row["mode"] == "queued", d["accounting_s"])
        return compare_rlock.accounting_pass(binary, port, options, d["accounting_s"])
    peer = next(p for p in compare_peers.PEERS if p[:2] == (row["library"], row["variant"]))
    return compare_peers.accounting_pass(peer, port, PROCESSES, HOLD_US, d["accounting_s"])


def _contended_phase(binary, port, d, results):
    """rlock (queue on, off) and every peer; then the MONITOR accounting pass of each."""
    ok = True
    seconds = d["contended_s"]
    if binary:
        for queued in (True, False):
            ok &= _attempt(results, "rlock contended, queue %s" % ("on" if queued else "off"),
                           lambda q=queued: results["contended"].append(compare_rlock.run_scenario(
                               binary, port, "contended", _rlock_contended_options(q, seconds),
                               seconds)))
    for peer in compare_peers.PEERS:
        ok &= _attempt(results, "%s contended" % peer[2], lambda p=peer: results["contended"].append(
            compare_peers.contended(p, port, PROCESSES, HOLD_US, seconds)))
    for row in results["contended"]:
        name = "rlock (%s)" % compare_rlock.variant(row) if row["library"] == "rlock" \
            else row["label"]
        ok &= _attempt(results, "%s contended accounting pass (MONITOR)" % name,
                       lambda r=row: r.update(accounting=_accounting(binary, port, d, r)))
    return ok


def _rlock_only_phase(binary, port, d, results):
    ok = True
    watchdog = ["--locks", str(d["watchdog_locks"]), "--periods", str(d["watchdog_periods"]),
                "--rounds", str(d["watchdog_rounds"]), "--watchdog-timeout", d["watchdog_timeout"]]
    ok &= _attempt(results, "rlock watchdog", lambda: results.update(
        watchdog=compare_rlock.run_scenario(binary, port, "watchdog", watchdog,
                                            60 * (d["watchdog_periods"] + d["watchdog_rounds"]))))
    ok &= _attempt(results, "rlock footprint", lambda: results.update(
        footprint=compare_rlock.run_scenario(binary, port, "footprint", [], 120)))
    return ok


def _profile_misses(binary, port, d, results):
    """A perf profile of each rlock scenario that missed a target (once per configuration)."""
    seconds = d["uncontended_s"]
    done = set()
    for _, key in compare_report.rlock_misses(results):
        if key is None or key in done:
            continue
        done.add(key)
        scenario, options = key
        options = list(options)
        _log("perf profile: rlock bench %s %s" % (scenario, " ".join(options)))
        text, reason = compare_profile.profile(binary, port, scenario, options, seconds)
        entry = {"argv": "rlock bench %s %s" % (scenario, " ".join(options)), "text": text,
                 "reason": reason}
        if scenario == "contended":
            # Hand-off and utilisation are latencies: where they go is in the wake-up delays.
            _log("perf sched: rlock bench %s %s" % (scenario, " ".join(options)))
            entry["sched"], entry["sched_reason"] = compare_profile.sched_latency(
                binary, port, scenario, options, seconds)
        results["profiles"].append(entry)


def _paths(out_dir, repo):
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        return (os.path.join(out_dir, "BENCHMARKS.md"), os.path.join(out_dir, "plots"),
                os.path.join(out_dir, "compare-results.json"))
    os.makedirs(os.path.join(repo, "out"), exist_ok=True)
    return (os.path.join(repo, "BENCHMARKS.md"), os.path.join(repo, "bench", "plots"),
            os.path.join(repo, "out", "compare-results.json"))


def run(quick, rlock_path, out_dir, repo, notes=()):
    d = QUICK if quick else FULL
    results = {"quick": quick, "processes": PROCESSES, "hold_us": HOLD_US, "durations": d,
               "machine": compare_report.machine(compare_server.server_version()),
               "uncontended": [], "contended": [], "notes": list(notes), "profiles": []}
    binary = compare_rlock.find_rlock(rlock_path)
    results["rlock_binary"] = os.path.relpath(binary, repo) if binary else None
    with compare_server.private_server() as port:
        _log("redis-server on 127.0.0.1:%d; ceilings (redis-benchmark)" % port)
        results["ceilings"] = compare_ceilings.measure_ceilings(port, quick)
        floor = compare_ceilings.find_handoff_floor(binary)
        floor_ok = True
        if floor:
            floor_ok = _attempt(results, "hand-off floor (%s)" % os.path.relpath(floor, repo),
                     lambda: results.update(handoff_floor=compare_ceilings.measure_handoff_floor(
                         floor, port, HOLD_US, quick)))
        else:
            results["notes"].append("not measured: the hand-off floor (no rlock_handoff_floor "
                                    "next to the rlock binary's build)")
        if not binary:
            results["notes"].append("rlock rows missing: no rlock binary with `bench` found")
            _log("no rlock binary with the bench command: rlock rows are missing")
        compare_peers.install_node_peers()
        ok = _uncontended_phase(binary, port, d, results) and floor_ok
        ok &= _contended_phase(binary, port, d, results)
        if binary:
            ok &= _rlock_only_phase(binary, port, d, results)
            _profile_misses(binary, port, d, results)
        status = 0 if ok and binary else 2
    report_path, plots_dir, json_path = _paths(out_dir, repo)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(results, f)
    plots = compare_plots.write_plots(plots_dir, results)
    base = os.path.dirname(report_path)
    compare_report.write_report(report_path, results,
                                [(t, os.path.relpath(p, base)) for t, p in plots])
    _log("wrote %s, %s, %s" % (report_path, plots_dir, json_path))
    failures = compare_report.rlock_failures(results)
    for failure in failures:
        print("bench/compare: rlock check failed: " + failure, file=sys.stderr)
    return 1 if failures else status
