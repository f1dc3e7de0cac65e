#!/usr/bin/env python3
"""ha_probe.py - what ha_helper.bash asks of a test cluster or Sentinel
topology, in one process.

Polling six cluster nodes, or three sentinels and two data nodes, with
redis-cli costs dozens of forks a round (seconds of CPU on a loaded
two-core machine); this speaks RESP to every node from one process
instead.  Used by ha_helper.bash only:

  ha_probe.py stable PORT...           exit 0 when every node: is up, says
                                       cluster_state:ok, knows every other
                                       node, no slot migrating/importing, no
                                       node flagged fail/handshake/noaddr,
                                       its replicas' links up, and all agree
                                       on the slot map and the replicas
  ha_probe.py map PORT                 PORT's view: "slots LO-HI PORT" and
                                       "replica PORT MASTER-PORT" lines
  ha_probe.py masters PORT             the master ports serving slots
  ha_probe.py slot KEY                 the key's slot (CRC16, as Redis)
  ha_probe.py owner KEY PORT           the master serving KEY, in PORT's view
  ha_probe.py allsee SLOT OWNER PORT...    exit 0 when every node names
                                       OWNER for SLOT
  ha_probe.py numsub CHANNEL PORT...   PUBSUB NUMSUB summed over the nodes
  ha_probe.py zcard KEY PORT...        the largest ZCARD of KEY on the nodes
  ha_probe.py sentinel-settled MASTER REPLICA PASS SPORT[:SPASS]...
                                       exit 0 when MASTER says role master,
                                       REPLICA replicates it with its link
                                       up, and every sentinel SPORT names
                                       MASTER for mymaster, flags it just
                                       "master", sees REPLICA as its replica
                                       with the link ok, and knows the other
                                       sentinels given (PASS: the data
                                       nodes' password, or "")
  ha_probe.py sentinel-named MASTER REPLICA PASS SPORT[:SPASS]...
                                       the same, but of the sentinels only
                                       that they name MASTER (what a
                                       failover must reach)
"""

import socket
import sys


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    k = key.encode()
    s = k.find(b"{")
    if s >= 0:
        e = k.find(b"}", s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) % 16384


class Conn:
    def __init__(self, port, password=""):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=3)
        self.buf = b""
        if password:
            r = self.cmd("AUTH", password)
            if r != "OK":
                raise RuntimeError("AUTH: %s" % r)

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode()
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._read() for _ in range(n)]
        raise ValueError("bad reply %r" % line)

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self._read()


def nodes_view(port):
    """(map lines, raw CLUSTER NODES) as PORT sees the cluster."""
    raw = Conn(port).cmd("CLUSTER", "NODES")
    if not isinstance(raw, str):
        raise RuntimeError("CLUSTER NODES: %r" % raw)
    ports, flags, master, slots = {}, {}, {}, {}
    for line in raw.strip().split("\n"):
        f = line.split()
        nid = f[0]
        ports[nid] = f[1].split("@")[0].rsplit(":", 1)[1]
        flags[nid] = f[2]
        master[nid] = f[3]
        slots[nid] = [s for s in f[8:] if not s.startswith("[")]
    out = []
    for nid in ports:
        fl = flags[nid]
        if any(x in fl for x in ("fail", "handshake", "noaddr")):
            out.append("bad %s %s" % (ports[nid], fl))
        elif "master" in fl:
            for s in slots[nid]:
                out.append("slots %s %s" % (s, ports[nid]))
        else:
            out.append("replica %s %s" % (ports[nid], ports.get(master[nid], "?")))
    return sorted(out), raw


def owner_of(slot, lines):
    for line in lines:
        f = line.split()
        if f[0] != "slots":
            continue
        r = f[1].split("-")
        lo, hi = int(r[0]), int(r[-1])
        if lo <= slot <= hi:
            return f[2]
    return None


def stable(ports):
    first = None
    for p in ports:
        c = Conn(int(p))
        info = c.cmd("CLUSTER", "INFO")
        if "cluster_state:ok" not in info:
            return False
        if "cluster_known_nodes:%d\r\n" % len(ports) not in info:
            return False
        lines, raw = nodes_view(int(p))
        if any(l.startswith("bad ") for l in lines) or "[" in raw:
            return False
        if first is None:
            first = lines
        elif lines != first:
            return False
        repl = c.cmd("INFO", "replication")
        if "role:slave" in repl and "master_link_status:up" not in repl:
            return False
    return first is not None


def pairs(flat):
    return dict(zip(flat[0::2], flat[1::2])) if isinstance(flat, list) else {}


def sentinel_settled(mport, rport, password, sentinels, strict):
    info = Conn(int(mport), password).cmd("INFO", "replication")
    if "role:master\r\n" not in info:
        return False
    info = Conn(int(rport), password).cmd("INFO", "replication")
    if not ("role:slave\r\n" in info and "master_port:%s\r\n" % mport in info
            and "master_link_status:up\r\n" in info):
        return False
    for spec in sentinels:
        sport, _, spass = spec.partition(":")
        c = Conn(int(sport), spass)
        addr = c.cmd("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
        if not isinstance(addr, list) or addr[1] != mport:
            return False
        if not strict:
            continue
        m = pairs(c.cmd("SENTINEL", "MASTER", "mymaster"))
        if m.get("flags") != "master":
            return False
        if m.get("num-other-sentinels") != str(len(sentinels) - 1):
            return False
        ok = False
        for rep in c.cmd("SENTINEL", "REPLICAS", "mymaster") or []:
            r = pairs(rep)
            if (r.get("port") == rport and r.get("flags") == "slave"
                    and r.get("master-link-status") == "ok"
                    and r.get("master-port") == mport):
                ok = True
        if not ok:
            return False
    return True


def main(argv):
    op, args = argv[1], argv[2:]
    try:
        if op == "stable":
            return 0 if stable(args) else 1
        if op == "map":
            print("\n".join(nodes_view(int(args[0]))[0]))
            return 0
        if op == "masters":
            lines = nodes_view(int(args[0]))[0]
            ms = sorted({l.split()[2] for l in lines if l.startswith("slots ")}, key=int)
            print("\n".join(ms))
            return 0
        if op == "slot":
            print(key_slot(args[0]))
            return 0
        if op == "owner":
            o = owner_of(key_slot(args[0]), nodes_view(int(args[1]))[0])
            if o is None:
                return 1
            print(o)
            return 0
        if op == "allsee":
            slot, want = int(args[0]), args[1]
            for p in args[2:]:
                if owner_of(slot, nodes_view(int(p))[0]) != want:
                    return 1
            return 0
        if op in ("sentinel-settled", "sentinel-named"):
            ok = sentinel_settled(args[0], args[1], args[2], args[3:],
                                  op == "sentinel-settled")
            return 0 if ok else 1
        if op == "zcard":
            # Only the slot's owner answers; the others redirect (MOVED)
            # or, as replicas, may lag: count the most any master says.
            most = 0
            for p in args[1:]:
                r = Conn(int(p)).cmd("ZCARD", args[0])
                if isinstance(r, int):
                    most = max(most, r)
            print(most)
            return 0
        if op == "numsub":
            total = 0
            for p in args[1:]:
                r = Conn(int(p)).cmd("PUBSUB", "NUMSUB", args[0])
                total += int(r[1])
            print(total)
            return 0
    except (OSError, ConnectionError, RuntimeError, ValueError) as e:
        print("ha_probe.py %s: %s" % (op, e), file=sys.stderr)
        return 1
    print("ha_probe.py: unknown operation %s" % op, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
