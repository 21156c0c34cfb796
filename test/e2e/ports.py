#!/usr/bin/env python3
"""Which ports answer, seen from another host: the E2E tier's firewall probe.

  ports.py listen SECONDS PORT/PROTO...   (on a VM) listen on 0.0.0.0 for SECONDS: TCP ports
                                          accept, UDP ports echo each datagram back; with
                                          PORTS_READY_FILE set, write it once all are bound
  ports.py probe HOST PORT/PROTO...       (from the lab network) print one JSON object
                                          {"22/tcp": true, "1234/udp": false, ...}

A TCP port answers when a connection is accepted or refused (a reset proves the packet got
through); a dropped SYN times out. A UDP port answers when the echo comes back. So listeners
must run on every probed port, or a UDP port that the firewall passes looks closed.
"""
import errno
import json
import socket
import sys
import threading
import time

TIMEOUT = 2.0


def parse(specs):
    out = []
    for spec in specs:
        port, proto = spec.split("/")
        if proto not in ("tcp", "udp"):
            raise SystemExit(f"{spec}: protocol must be tcp or udp")
        out.append((int(port), proto))
    return out


def listen(seconds, ports, ready_file=None):
    socks = []
    for port, proto in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM)
        if proto == "tcp":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
            print(f"{port}/{proto}: already served (e.g. sshd), not listening", flush=True)
            s.close()
            continue
        if proto == "tcp":
            s.listen(16)
        socks.append((s, proto))

    def serve(s, proto):
        s.settimeout(0.5)
        while True:
            try:
                if proto == "tcp":
                    conn, _ = s.accept()
                    conn.close()
                else:
                    data, peer = s.recvfrom(512)
                    s.sendto(data, peer)
            except socket.timeout:
                continue
            except OSError:
                return

    for s, proto in socks:
        threading.Thread(target=serve, args=(s, proto), daemon=True).start()
    print("listening", flush=True)
    if ready_file:
        with open(ready_file, "w") as f:
            f.write("listening\n")
    time.sleep(seconds)


def answers(host, port, proto):
    if proto == "tcp":
        # A loaded emulated host may answer a SYN late: a port is silent after three timeouts.
        for _ in range(3):
            try:
                with socket.create_connection((host, port), timeout=TIMEOUT):
                    return True
            except ConnectionRefusedError:
                return True
            except socket.timeout:
                continue
            except OSError:
                return False
        return False
    # A datagram may be lost or answered late on a loaded emulated host: send up to three.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(TIMEOUT)
        for _ in range(3):
            try:
                s.sendto(b"nodefleet-probe", (host, port))
                data, _ = s.recvfrom(512)
                return data == b"nodefleet-probe"
            except socket.timeout:
                continue
            except OSError:
                return False
        return False


def main(argv):
    if len(argv) >= 3 and argv[1] == "listen":
        import os
        listen(float(argv[2]), parse(argv[3:]), os.environ.get("PORTS_READY_FILE"))
    elif len(argv) >= 3 and argv[1] == "probe":
        host = argv[2]
        result = {}
        threads = []

        def one(port, proto):
            result[f"{port}/{proto}"] = answers(host, port, proto)

        for port, proto in parse(argv[3:]):
            t = threading.Thread(target=one, args=(port, proto))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        print(json.dumps(result, sort_keys=True))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
