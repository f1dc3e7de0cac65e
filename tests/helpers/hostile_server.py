#!/usr/bin/env python3
"""hostile_server.py - a RESP2 server of the tests' own that answers what a
test asks: odd types, huge declared lengths, truncated replies, silence.

    hostile_server.py --port-file F --rules R [--log L]

Listens on 127.0.0.1, port 0; writes the port to F once listening.  Logs
every command it receives to L, one line each: the arguments separated by
spaces, each escaped (bytes outside printable ASCII, space and backslash as
\\xHH, a backslash as \\\\), so that a line is binary-safe.

The rules file R, one rule a line (blank lines and # comments skipped):

    NAME REPLY

NAME is a command name (PING, CLUSTER, ...; any case) or, for EVALSHA and
EVAL, the script's name: acquire, extend, release, force, fence, status,
leave, log (the SHA-1 of each is asked of build/helpers/scriptsha).  The
rules of one NAME are its replies in order, one per call of NAME whatever
the connection; the last one repeats.  REPLY is raw RESP with escapes
(\\r, \\n, \\xHH, \\\\), sent as is, or one of:

    silent        never answer on this connection again (keep reading)
    close         close the connection
    stream-bulk   declare $1000000000000, then send 'x' as fast as the
                  client reads, for at most 60 s, then close
    stream-array  declare *2000000000, then send :1\\r\\n likewise
    stream-bulks  declare *1048576, then send 4 MiB bulk strings likewise

A command without a rule gets -ERR unknown command; an EVALSHA of a SHA that
is no known script gets -NOSCRIPT.  One thread per connection; SIGTERM ends
the server.
"""

import argparse
import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

SCRIPTS = ("acquire", "extend", "release", "force", "fence", "status",
           "leave", "log")
STREAM_SECS = 60
SPECIAL = ("silent", "close", "stream-bulk", "stream-array", "stream-bulks")
MIB4 = 4 << 20


def unescape(text):
    """The bytes of a rule's REPLY: \\r, \\n, \\t, \\xHH and \\\\ escapes."""
    out, i = bytearray(), 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n in "rnt\\":
                out += {"r": b"\r", "n": b"\n", "t": b"\t", "\\": b"\\"}[n]
                i += 2
                continue
            if n == "x" and i + 3 < len(text):
                out.append(int(text[i + 2:i + 4], 16))
                i += 4
                continue
        out += c.encode()
        i += 1
    return bytes(out)


def escape(arg):
    return "".join(chr(b) if 0x21 <= b <= 0x7e and b != 0x5c
                   else "\\\\" if b == 0x5c else "\\x%02x" % b for b in arg)


def script_shas():
    """SHA-1 -> script name, from the scriptsha helper: in $HELPERS
    (tests/test_helper.bash), else where make builds it, build/helpers/."""
    helpers = os.environ.get("HELPERS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
        "helpers")
    helper = os.path.join(helpers, "scriptsha")
    shas = {}
    for name in SCRIPTS:
        sha = subprocess.run([helper, name], check=True, capture_output=True,
                             text=True).stdout.strip()
        shas[sha.lower()] = name
    return shas


def load_rules(path):
    rules = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            name, _, reply = line.partition(" ")
            name = name.lower()
            rules.setdefault(name, []).append(
                reply if reply in SPECIAL else unescape(reply))
    return rules


class Server:
    def __init__(self, rules, shas, log):
        self.rules, self.shas, self.log = rules, shas, log
        self.used = {}
        self.lock = threading.Lock()

    def rule_name(self, args):
        cmd = args[0].decode("latin-1").lower()
        if cmd == "evalsha" and len(args) > 1:
            return self.shas.get(args[1].decode("latin-1").lower(),
                                 "-noscript")
        if cmd == "eval" and len(args) > 1:
            return self.shas.get(hashlib.sha1(args[1]).hexdigest(), cmd)
        return cmd

    def reply_for(self, args):
        """Log the command and pick its reply (bytes or a special word)."""
        name = self.rule_name(args)
        with self.lock:
            if self.log:
                self.log.write(" ".join(escape(a) for a in args) + "\n")
                self.log.flush()
            if name == "-noscript":
                return b"-NOSCRIPT No matching script.\r\n"
            replies = self.rules.get(name)
            if not replies:
                return b"-ERR unknown command\r\n"
            n = self.used.get(name, 0)
            self.used[name] = n + 1
            return replies[min(n, len(replies) - 1)]


def read_command(f):
    """One command from the buffered socket file: a RESP array of bulk
    strings, or an inline command.  None at the end of the stream."""
    line = f.readline()
    if not line:
        return None
    line = line.rstrip(b"\r\n")
    if not line.startswith(b"*"):
        return line.split() or [b""]
    args = []
    for _ in range(int(line[1:])):
        head = f.readline()
        if not head.startswith(b"$"):
            return None
        n = int(head[1:])
        data = f.read(n + 2)
        if len(data) < n + 2:
            return None
        args.append(data[:n])
    return args


def stream(sock, head, unit):
    """Send head, then unit over and over as fast as the client takes it,
    for at most STREAM_SECS."""
    sock.settimeout(0.5)
    buf = memoryview(unit * max(1, 65536 // len(unit)))
    pending, pos = head, 0
    end = time.monotonic() + STREAM_SECS
    while time.monotonic() < end:
        try:
            if pending:
                pending = pending[sock.send(pending):]
                continue
            pos = (pos + sock.send(buf[pos:])) % len(buf)
        except socket.timeout:
            continue
        except OSError:
            return


def serve(server, sock):
    muted = False
    f = sock.makefile("rb")
    try:
        while True:
            args = read_command(f)
            if not args:
                return
            reply = server.reply_for(args)
            if muted or reply == "silent":
                muted = True
            elif reply == "close":
                return
            elif reply == "stream-bulk":
                return stream(sock, b"$1000000000000\r\n", b"x")
            elif reply == "stream-array":
                return stream(sock, b"*2000000000\r\n", b":1\r\n")
            elif reply == "stream-bulks":
                return stream(sock, b"*1048576\r\n",
                              b"$%d\r\n" % MIB4 + b"x" * MIB4 + b"\r\n")
            else:
                sock.sendall(reply)
    except (OSError, ValueError):
        return
    finally:
        f.close()
        sock.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port-file", required=True)
    p.add_argument("--rules", required=True)
    p.add_argument("--log")
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    log = open(a.log, "a", encoding="ascii") if a.log else None
    server = Server(load_rules(a.rules), script_shas(), log)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w", encoding="ascii") as f:
        f.write("%d\n" % ls.getsockname()[1])
    os.rename(tmp, a.port_file)
    while True:
        conn, _ = ls.accept()
        threading.Thread(target=serve, args=(server, conn),
                         daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
