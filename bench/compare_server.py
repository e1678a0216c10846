"""compare_server.py: the private redis-server of one bench/compare run.

`private_server()` starts redis-server on a free loopback port in its own temporary directory,
with persistence off (`--save '' --appendonly no`), waits until it answers PING (bounded), and
always stops it (SHUTDOWN NOSAVE, then SIGKILL) and removes the directory when the `with` block
ends, also on errors and Ctrl-C.
"""
import contextlib
import shutil
import socket
import subprocess
import tempfile
import time

import redis

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_version():
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True, check=True)
    for part in out.stdout.split():
        if part.startswith("v="):
            return part[2:]
    return out.stdout.strip()


def _wait_ready(proc, port, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).ping():
                return True
        except redis.exceptions.ConnectionError:
            time.sleep(0.05)
    return False


def _stop(proc, port, timeout_s):
    if proc.poll() is None:
        try:
            redis.Redis(host="127.0.0.1", port=port, socket_timeout=1).shutdown(nosave=True)
        except redis.exceptions.RedisError:
            pass  # SHUTDOWN closes the connection; an error here is the expected reply
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def private_server(prefix=(), start_timeout_s=START_TIMEOUT_S):
    """Yields the port of a fresh redis-server; stops it when the block ends. `prefix`: a command
    the server runs under (valgrind, say), which may need a longer `start_timeout_s`."""
    workdir = tempfile.mkdtemp(prefix="rlock-compare-")
    try:
        for _ in range(5):  # the free port can be taken between probe and bind: retry
            port = free_port()
            proc = subprocess.Popen(
                list(prefix) + ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                 "--appendonly", "no", "--dir", workdir, "--logfile", workdir + "/redis.log"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                if _wait_ready(proc, port, start_timeout_s):
                    yield port
                    return
            finally:
                _stop(proc, port, max(STOP_TIMEOUT_S, start_timeout_s))
        raise RuntimeError("redis-server did not start (see its log in " + workdir + ")")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
