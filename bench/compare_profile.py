"""compare_profile.py: a perf profile of an rlock scenario whose target was missed.

`profile(binary, port, scenario, options, seconds)` runs `rlock bench SCENARIO OPTIONS --json` under
`perf record -g` (following forked workers) and returns the top of `perf report` (self time per
symbol, at least PERCENT_LIMIT %) as text, or None with the reason when perf is missing or not
permitted. Bounded by timeouts; the perf data lives in a temporary directory that is removed.

`sched_latency(...)` runs the same under `perf sched record` and returns, for rlock's threads and
the Redis server, the scheduler's wake-up delays (`perf sched latency`: from a thread's wake-up to
when it runs). A latency target (hand-off, utilisation) is missed in those delays, not in CPU
time, which a CPU profile cannot show.
"""
import re
import shutil
import subprocess
import tempfile

import compare_rlock
import compare_workers

SCHED_TASKS = ("rlock", "redis-server")
PERCENT_LIMIT = "1.5"
TOP_LINES = 30
FREQUENCY_HZ = "999"


def _recorded(record, binary, port, scenario, options, seconds, analyse):
    """Runs `rlock bench SCENARIO OPTIONS --json` under `perf <record...> -o DATA --`, then
    returns analyse(DATA): (result, None), or (None, reason)."""
    if not shutil.which("perf"):
        return None, "perf is not installed"
    workdir = tempfile.mkdtemp(prefix="rlock-compare-perf-")
    try:
        data = workdir + "/perf.data"
        argv = ["perf"] + record + ["-o", data, "--", binary, "bench", scenario] + options + \
            ["--json", "--url", compare_rlock.url(port)]
        try:
            compare_workers.run_bounded(argv, seconds + compare_rlock.RUN_MARGIN_S, accept=(0, 1))
        except RuntimeError as e:
            return None, "perf %s failed: %s" % (" ".join(record[:2]), e)
        return analyse(data)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _top_symbols(data):
    report = subprocess.run(
        ["perf", "report", "-i", data, "--stdio", "--no-children", "-g", "none",
         "--sort", "comm,dso,symbol", "--percent-limit", PERCENT_LIMIT],
        capture_output=True, text=True, timeout=300, check=False)
    # perf pads the symbol column and appends empty columns ("-  -"): trim them.
    rows = [re.sub(r"(\s+-)+$", "", re.sub(r"\s{3,}", "  ", l.strip()))
            for l in report.stdout.splitlines() if l.strip() and not l.startswith("#")]
    if not rows:
        return None, "perf report printed nothing: " + report.stderr.strip()[:200]
    return "\n".join(rows[:TOP_LINES]), None


def profile(binary, port, scenario, options, seconds):
    return _recorded(["record", "-q", "-F", FREQUENCY_HZ, "-g"], binary, port, scenario, options,
                     seconds, _top_symbols)


# "  rlock:(35)   |   822.989 ms |   3069 | avg:   0.083 ms | max:   8.925 ms | max start: ..."
_SCHED_ROW = re.compile(r"^\s*(?P<comm>.+?):(?:\(\d+\)|\d+)\s*\|\s*(?P<run>[\d.]+) ms\s*\|"
                        r"\s*(?P<switches>\d+)\s*\|\s*avg:\s*(?P<avg>[\d.]+) ms\s*\|"
                        r"\s*max:\s*(?P<max>[\d.]+) ms")


def parse_sched_latency(text, tasks=SCHED_TASKS):
    """Rows of `perf sched latency` for the given commands, summed per command: runtime ms,
    switches, mean wake-up delay µs (weighted by switches), max wake-up delay µs."""
    rows = {}
    for line in text.splitlines():
        m = _SCHED_ROW.match(line)
        if not m or m.group("comm") not in tasks:
            continue
        r = rows.setdefault(m.group("comm"), {"task": m.group("comm"), "runtime_ms": 0.0,
                                              "switches": 0, "delay_sum_us": 0.0,
                                              "max_delay_us": 0.0})
        switches = int(m.group("switches"))
        r["runtime_ms"] += float(m.group("run"))
        r["switches"] += switches
        r["delay_sum_us"] += float(m.group("avg")) * 1000.0 * switches
        r["max_delay_us"] = max(r["max_delay_us"], float(m.group("max")) * 1000.0)
    out = []
    for task in tasks:
        if task in rows:
            r = rows[task]
            r["avg_delay_us"] = r["delay_sum_us"] / r["switches"] if r["switches"] else 0.0
            del r["delay_sum_us"]
            out.append(r)
    return out


def _wake_up_delays(data):
    report = subprocess.run(["perf", "sched", "latency", "-i", data], capture_output=True,
                            text=True, timeout=300, check=False)
    rows = parse_sched_latency(report.stdout)
    if not rows:
        return None, "perf sched latency printed no rlock rows: " + report.stderr.strip()[:200]
    return rows, None


def sched_latency(binary, port, scenario, options, seconds):
    return _recorded(["sched", "record"], binary, port, scenario, options, seconds,
                     _wake_up_delays)
