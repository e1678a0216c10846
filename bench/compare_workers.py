"""compare_workers.py: bounded child processes of bench/compare.

- `run_workers(argvs, start_delay_s, duration_s, on_ready)`: starts worker processes that speak
  the peers' protocol (print "ready"; read "go <start_ns> <end_ns>" on CLOCK_MONOTONIC; print one
  JSON line), waits for all to be ready, calls `on_ready()` (e.g. to open MONITOR), sends one
  common start/end instant, and returns (results, failed): every worker's JSON (None if it failed).
- `run_bounded(argv, timeout_s, accept)`: runs one command, returns (status, stdout, stderr);
  raises if it times out or exits with a status not in `accept`.
Guarantees: every wait is bounded; each child runs in its own process group and any group left
alive (timeout, error, Ctrl-C) is killed with SIGKILL before the function returns or raises.
"""
import json
import os
import signal
import subprocess
import threading
import time

READY_TIMEOUT_S = 60.0
FINISH_GRACE_S = 30.0
EXIT_GRACE_S = 5.0


def _kill_group(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


def _reader(proc, lines, cond):
    for line in proc.stdout:
        with cond:
            lines.append(line.rstrip("\n"))
            cond.notify_all()
    with cond:
        lines.append(None)  # EOF
        cond.notify_all()


def _wait_lines(cond, outputs, count, deadline):
    """Waits until every output has `count` lines or ended; False on timeout."""
    with cond:
        while not all(len(o) >= count or (o and o[-1] is None) for o in outputs):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            cond.wait(left)
    return True


def run_workers(argvs, start_delay_s, duration_s, on_ready=None):
    procs, outputs, cond = [], [], threading.Condition()
    finished = False
    try:
        for argv in argvs:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    start_new_session=True)
            procs.append(proc)
            outputs.append([])
            threading.Thread(target=_reader, args=(proc, outputs[-1], cond), daemon=True).start()
        if not _wait_lines(cond, outputs, 1, time.monotonic() + READY_TIMEOUT_S):
            raise RuntimeError("workers not ready within %.0f s" % READY_TIMEOUT_S)
        if any(o[0] != "ready" for o in outputs):
            raise RuntimeError("a worker failed to start: %r" % [o[:1] for o in outputs])
        if on_ready:
            on_ready()
        start_ns = time.monotonic_ns() + int(start_delay_s * 1e9)
        end_ns = start_ns + int(duration_s * 1e9)
        for proc in procs:
            proc.stdin.write("go %d %d\n" % (start_ns, end_ns))
            proc.stdin.flush()
        _wait_lines(cond, outputs, 2, time.monotonic() + start_delay_s + duration_s + FINISH_GRACE_S)
        results = []
        for o in outputs:
            try:
                results.append(json.loads(o[1]) if len(o) > 1 and o[1] else None)
            except ValueError:
                results.append(None)
        finished = True
        return results, sum(r is None for r in results)
    finally:
        for proc in procs:
            try:
                proc.wait(timeout=EXIT_GRACE_S if finished else 0)
            except subprocess.TimeoutExpired:
                pass
            _kill_group(proc)


def run_bounded(argv, timeout_s, accept=(0,)):
    """Returns (exit status, stdout, stderr); raises unless the status is in `accept`."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError("%s did not finish within %.0f s" % (" ".join(argv), timeout_s)) from e
    finally:
        _kill_group(proc)
    if proc.returncode not in accept:
        raise RuntimeError("%s exited with %d: %s" % (" ".join(argv), proc.returncode,
                                                      err.strip()[-500:]))
    return proc.returncode, out, err
