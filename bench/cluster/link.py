"""A link's TCP throughput and round-trip time between two emulated hosts (bench/cluster).

    link.py serve ADDR PORT            # in the receiving namespace: one client, then exit
    link.py measure ADDR PORT PROFILE  # prints "PROFILE,bytes_per_s,rtt_s"

Throughput: 64 MiB streamed in 1 MiB writes (the receiver acknowledges the last byte); round
trip: the median of 200 one-byte ping-pongs with TCP_NODELAY. Python's socket loop is far from
line rate above a few Gb/s; the numbers say what a link gives a simple sender, not its peak.
"""
import socket
import statistics
import sys
import time

TOTAL = 64 << 20
CHUNK = 1 << 20


def serve(addr, port):
    with socket.create_server((addr, port)) as s:
        conn, _ = s.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            got = 0
            while got < TOTAL:
                b = conn.recv(CHUNK)
                if not b:
                    return
                got += len(b)
            conn.sendall(b"k")
            while True:
                b = conn.recv(1)
                if not b:
                    return
                conn.sendall(b)


def measure(addr, port, profile):
    for _ in range(50):
        try:
            c = socket.create_connection((addr, port), timeout=30)
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise SystemExit(f"link.py: cannot connect to {addr}:{port}")
    with c:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b"x" * CHUNK
        t0 = time.perf_counter()
        for _ in range(TOTAL // CHUNK):
            c.sendall(buf)
        c.recv(1)
        rate = TOTAL / (time.perf_counter() - t0)
        rtts = []
        for _ in range(200):
            t = time.perf_counter()
            c.sendall(b"p")
            c.recv(1)
            rtts.append(time.perf_counter() - t)
    print(f"{profile},{rate:.0f},{statistics.median(rtts):.6f}")


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        measure(sys.argv[2], int(sys.argv[3]), sys.argv[4])
