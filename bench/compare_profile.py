"""compare_profile.py: a perf profile of an rlock scenario whose target was missed.

`profile(binary, port, scenario, options, seconds)` runs `rlock bench SCENARIO OPTIONS --json` under
`perf record -g` (following forked workers) and returns the top of `perf report` (self time per
symbol, at least PERCENT_LIMIT %) as text, or None with the reason when perf is missing or not
permitted. Bounded by timeouts; the perf data lives in a temporary directory that is removed.
"""
import re
import shutil
import subprocess
import tempfile

import compare_rlock
import compare_workers

PERCENT_LIMIT = "1.5"
TOP_LINES = 30
FREQUENCY_HZ = "999"


def profile(binary, port, scenario, options, seconds):
    if not shutil.which("perf"):
        return None, "perf is not installed"
    workdir = tempfile.mkdtemp(prefix="rlock-compare-perf-")
    try:
        data = workdir + "/perf.data"
        argv = ["perf", "record", "-q", "-F", FREQUENCY_HZ, "-g", "-o", data, "--", binary,
                "bench", scenario] + options + ["--json", "--url", compare_rlock.url(port)]
        try:
            compare_workers.run_bounded(argv, seconds + compare_rlock.RUN_MARGIN_S, accept=(0, 1))
        except RuntimeError as e:
            return None, "perf record failed: %s" % e
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
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
