#!/usr/bin/env python3
"""A stand-in for the `sage` binary's distributed-mode process interface, for testing
deploy/local-cluster.sh before the real subcommands exist (the interface the distributed mode
provides: worker/aggregator flags, the metrics server, SIGTERM).

It does no SAGE work. It only behaves like a `sage worker` / `sage aggregator` process from the
outside:
  * `worker --help` / `aggregator --help` exit 0;
  * `--metrics-addr HOST:PORT` (or SAGE_METRICS_ADDR) serves GET /metrics (a few sage_* series),
    /healthz (200) and /readyz (200 once a TCP connection to the --nats host:port succeeded,
    503 before that and while shutting down);
  * SIGTERM: not ready, wait FAKE_SHUTDOWN_SECS (default 0.5), exit 0.
Knobs for failure paths: FAKE_FAIL=worker|aggregator exits 2 at start for that subcommand;
FAKE_IGNORE_TERM=1 ignores SIGTERM (so the caller has to SIGKILL); FAKE_NEVER_READY=1 keeps
/readyz at 503.

Use: SAGE_BIN=deploy/testing/fake-sage.py deploy/local-cluster.sh ...
"""

import os
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse


def arg(args, name, default=None):
    if name in args:
        i = args.index(name)
        if i + 1 < len(args):
            return args[i + 1]
    return default


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("worker", "aggregator"):
        print(f"fake-sage: unsupported command {args[:1]}", file=sys.stderr)
        return 2
    cmd = args[0]
    if "--help" in args:
        print(f"fake-sage {cmd} (test stand-in)")
        return 0
    if os.environ.get("FAKE_FAIL") == cmd:
        print(f"fake-sage: {cmd}: failing at start as asked (FAKE_FAIL)", file=sys.stderr)
        return 2

    nats = arg(args, "--nats", os.environ.get("SAGE_NATS_URL", "nats://127.0.0.1:4222"))
    addr = arg(args, "--metrics-addr", os.environ.get("SAGE_METRICS_ADDR", "0.0.0.0:9464"))
    host, port = addr.rsplit(":", 1)
    roles = arg(args, "--roles", os.environ.get("SAGE_ROLES", "aggregator"))
    u = urlparse(nats)
    state = {"ready": False, "stopping": False, "scrapes": 0}
    never_ready = os.environ.get("FAKE_NEVER_READY") == "1"

    def connect_nats():
        while not state["stopping"] and not never_ready:
            try:
                with socket.create_connection((u.hostname, u.port or 4222), timeout=1) as s:
                    s.recv(4096)  # the server's INFO line
                state["ready"] = True
                return
            except OSError:
                time.sleep(0.2)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def reply(self, code, body, ctype="text/plain; charset=utf-8"):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/healthz":
                self.reply(200, "ok\n")
            elif self.path == "/readyz":
                ok = state["ready"] and not state["stopping"]
                self.reply(200 if ok else 503, "ready\n" if ok else "not ready\n")
            elif self.path == "/metrics":
                state["scrapes"] += 1
                body = (
                    "# HELP sage_dialogues_in_flight Dialogues being driven.\n"
                    "# TYPE sage_dialogues_in_flight gauge\n"
                    "sage_dialogues_in_flight 0\n"
                    "# HELP sage_role_requests_total Role requests (requester side).\n"
                    "# TYPE sage_role_requests_total counter\n"
                    'sage_role_requests_total{role="user",outcome="ok"} 0\n'
                    "# HELP fake_sage_info The fake's command and roles.\n"
                    "# TYPE fake_sage_info gauge\n"
                    f'fake_sage_info{{command="{cmd}",fake_roles="{roles}"}} 1\n'
                )
                self.reply(200, body, "text/plain; version=0.0.4")
            else:
                self.reply(404, "not found: /metrics, /healthz, /readyz\n")

    server = ThreadingHTTPServer((host, int(port)), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Thread(target=connect_nats, daemon=True).start()
    print(f"fake-sage {cmd}: roles={roles} nats={nats} metrics=http://{addr}/metrics", flush=True)

    done = threading.Event()

    def on_term(signum, _frame):
        if os.environ.get("FAKE_IGNORE_TERM") == "1":
            print(f"fake-sage {cmd}: ignoring signal {signum} (FAKE_IGNORE_TERM)", flush=True)
            return
        print(f"fake-sage {cmd}: signal {signum}: shutting down", flush=True)
        state["stopping"] = True
        done.set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    while not done.wait(0.5):
        pass
    time.sleep(float(os.environ.get("FAKE_SHUTDOWN_SECS", "0.5")))
    server.shutdown()
    print(f"fake-sage {cmd}: stopped after {state['scrapes']} scrapes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
