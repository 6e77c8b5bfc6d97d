#!/usr/bin/env python3
"""Records stream-engine scenarios on a real redis-server, for the replay test in
src/stream/mod.rs (`replay_scenarios_recorded_on_redis`).

usage: scripts/record-stream-scenarios.py PORT [SEED] > tests/data/stream-scenarios.txt

Each scenario sets the node limits, then runs random XADD (explicit IDs, random field
names and values, integer-looking or not), XDEL and XTRIM (MAXLEN/MINID, exact or `~`,
with LIMIT) steps against one key, and after every step writes what Redis reports:

    cfg <stream-node-max-bytes> <stream-node-max-entries>
    add <ms> <seq> <hex field> <hex value> ...        ("-" for an empty string)
    del <ms> <seq> = <XDEL reply>
    trim <maxlen|minid> <=|~> <threshold> <limit|none> = <XTRIM reply>
    expect <length> <radix-tree-keys> <recorded-first-entry-id> <max-deleted-entry-id>

The test replays the steps on a `Stream` and compares every `expect` line, so the node
boundaries (which entries share a node, what trimming removes) stay Redis's.
"""
import random
import socket
import sys


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b":"):
            return int(rest) if t == b":" else rest.decode()
        if t == b"-":
            raise RuntimeError(rest.decode())
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.s.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RuntimeError(f"unexpected reply {line!r}")

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self._reply()


def hexs(b):
    return b.hex() if b else "-"


def value(rng):
    kind = rng.randrange(6)
    if kind == 0:
        return str(rng.randrange(-1000, 100000)).encode()
    if kind == 1:
        return str(rng.randrange(-(2**63), 2**63)).encode()
    if kind == 2:
        return b""
    if kind == 3:
        return rng.choice([b"007", b"-0", b"+5", b"1e3", b" 1"])
    return bytes(rng.randrange(256) for _ in range(rng.choice([1, 3, 12, 40, 70, 70, 200] if rng.random() < 0.3 else [1, 2, 5])))


def main():
    port = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    c = Conn(port)
    out = []
    key = "scenario"
    limits = [(4096, 100), (4096, 0), (0, 10), (300, 0), (200, 5), (1000, 20), (60, 3)]
    for scenario in range(42):
        max_bytes, max_entries = limits[scenario % len(limits)]
        c.cmd("CONFIG", "SET", "stream-node-max-bytes", max_bytes)
        c.cmd("CONFIG", "SET", "stream-node-max-entries", max_entries)
        c.cmd("DEL", key)
        out.append(f"cfg {max_bytes} {max_entries}")
        ms, seq = rng.randrange(1, 1000), 0
        ids = []
        fields = [b"bidder", b"amount"]
        for _ in range(rng.randrange(20, 300)):
            op = rng.random()
            if op < 0.75 or not ids:
                if rng.random() < 0.5:
                    ms += rng.choice([0, 0, 1, 1, 2, 1000, 2**20])
                    new_ms = not ids or ms != ids[-1][0]
                    seq = 0 if new_ms else seq + 1
                else:
                    seq += rng.choice([1, 1, 2, 300, 2**33])
                if ids and (ms, seq) <= ids[-1]:
                    seq = ids[-1][1] + 1
                if rng.random() < 0.1:
                    fields = [value(rng) for _ in range(rng.randrange(1, 4))]
                pairs = []
                for f in fields:
                    pairs += [f, value(rng)]
                c.cmd("XADD", key, f"{ms}-{seq}", *pairs)
                ids.append((ms, seq))
                out.append(f"add {ms} {seq} " + " ".join(hexs(p) for p in pairs))
            elif op < 0.88:
                ms_d, seq_d = rng.choice(ids)
                n = c.cmd("XDEL", key, f"{ms_d}-{seq_d}")
                out.append(f"del {ms_d} {seq_d} = {n}")
            else:
                approx = rng.random() < 0.5
                limit = rng.choice([None, None, 1, 10, 100]) if approx else None
                if rng.random() < 0.5:
                    strategy, threshold = "maxlen", rng.randrange(0, len(ids) + 5)
                    arg = str(threshold)
                else:
                    strategy = "minid"
                    m, s = rng.choice(ids)
                    arg = f"{m}-{s}"
                args = ["XTRIM", key, strategy.upper(), "~" if approx else "=", arg]
                if limit is not None:
                    args += ["LIMIT", limit]
                n = c.cmd(*args)
                out.append(f"trim {strategy} {'~' if approx else '='} {arg} {limit if limit is not None else 'none'} = {n}")
            info = c.cmd("XINFO", "STREAM", key)
            d = {info[i].decode() if isinstance(info[i], bytes) else info[i]: info[i + 1] for i in range(0, len(info), 2)}

            def text(v):
                return v.decode() if isinstance(v, bytes) else str(v)
            out.append(
                f"expect {d['length']} {d['radix-tree-keys']} {text(d['recorded-first-entry-id'])} "
                f"{text(d['max-deleted-entry-id'])}"
            )
    c.cmd("CONFIG", "SET", "stream-node-max-bytes", 4096)
    c.cmd("CONFIG", "SET", "stream-node-max-entries", 100)
    c.cmd("DEL", key)
    print("\n".join(out))


if __name__ == "__main__":
    main()
