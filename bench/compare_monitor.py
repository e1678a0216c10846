"""compare_monitor.py: client requests counted from a MONITOR connection (the accounting pass).

Redis 7 counts the commands run inside Lua scripts in INFO commandstats too, so a peer's own
commands can't be told from its scripts' there. MONITOR tags script commands `[<db> lua]`; every
other line is one request a client sent. `monitor_capture(port)` is a context manager that
records MONITOR lines on its own connection (a bounded reader thread; stopped when the block
ends); `client_requests(lines, counter_key, exclude_clients)` counts per client address the
requests that are not the workload's GET/SET of `counter_key`, leaving out the given clients
(the driver's) and, per command name, what was counted.
"""
import collections
import contextlib
import re
import socket
import threading

LINE = re.compile(r'^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"(?: "((?:[^"\\]|\\.)*)")?')
READ_TIMEOUT_S = 0.2


@contextlib.contextmanager
def monitor_capture(port):
    """Yields a list that holds every MONITOR line (as text) once the block has ended."""
    lines = []
    stop = threading.Event()
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"MONITOR\r\n")
    buf = bytearray()
    while b"\r\n" not in buf:  # "+OK": monitoring has started when MONITOR returns
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("MONITOR connection closed")
        buf += chunk
    first, _, rest = bytes(buf).partition(b"\r\n")
    if first != b"+OK":
        raise RuntimeError("MONITOR refused: %r" % first)
    chunks = [rest]
    sock.settimeout(READ_TIMEOUT_S)

    def read():
        while not stop.is_set():
            try:
                chunk = sock.recv(1 << 20)
            except socket.timeout:
                continue
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield lines
    finally:
        stop.set()
        reader.join(timeout=5)
        sock.close()
        lines.extend(l for l in b"".join(chunks).decode("utf-8", "replace").split("\r\n") if l)


def client_requests(lines, counter_key, exclude_clients=()):
    """Returns (requests, by_command, workload) over the lines of clients not excluded."""
    by_command = collections.Counter()
    workload = 0
    for line in lines:
        m = LINE.match(line)
        if not m or m.group(1) == "lua" or m.group(1) in exclude_clients:
            continue
        cmd, first_arg = m.group(2).lower(), m.group(3)
        if cmd in ("get", "set") and first_arg == counter_key:
            workload += 1
            continue
        by_command[cmd] += 1
    return sum(by_command.values()), dict(by_command), workload


def most_read_key(lines, exclude_clients=()):
    """The key most often read with GET by the clients not excluded (the workload's counter)."""
    reads = collections.Counter()
    for line in lines:
        m = LINE.match(line)
        if m and m.group(1) not in exclude_clients and m.group(2).lower() == "get":
            reads[m.group(3)] += 1
    return reads.most_common(1)[0][0] if reads else None


def between_markers(lines, clients, command):
    """The lines after the first and before the last `command` sent by one of `clients` (the
    window a bench driver measures between two INFO commandstats); all lines if there are not two."""
    marks = [i for i, line in enumerate(lines)
             if (m := LINE.match(line)) and m.group(1) in clients and m.group(2).lower() == command]
    return lines[marks[0] + 1:marks[-1]] if len(marks) >= 2 else lines


def clients_issuing(lines, command):
    """Client addresses that sent `command` (e.g. the driver's INFO) in the captured lines."""
    found = set()
    for line in lines:
        m = LINE.match(line)
        if m and m.group(1) != "lua" and m.group(2).lower() == command:
            found.add(m.group(1))
    return found
