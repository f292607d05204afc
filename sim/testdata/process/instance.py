# A small process instance for the harness's own tests (docs/protocol.md), standard library only.
# Usage: instance.py MODE MARKER, MODE one of:
#   poll      call /ready, then poll the first target every poll interval, reporting the clock
#   exit      write to stderr and exit with status 3 before /ready
#   silent    never call /ready
#   garbage   call /ready, then send Redis what is not RESP
#   quit      call /ready, then exit with status 4 after a moment
#   stubborn  ignore SIGTERM, call /ready, then poll as in "poll"
#   deaf      call /ready, then wait, deaf to stdin's end and silent: only a signal ends it
#   busy      call /ready, then burn CPU in a loop, and in a child process forked for it (which ends
#             with its parent)
# MARKER only tells the tests' processes apart.
import json, os, signal, socket, sys, threading, time, urllib.error, urllib.request

env = os.environ
mode = sys.argv[1]
url = env["TENURE_HARNESS_URL"]


def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def now_ms():
    return time.time() * 1000


if mode != "deaf":
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
if mode == "exit":
    sys.stderr.write("boom: this instance gives up at once\n")
    sys.exit(3)
if mode == "silent":
    time.sleep(600)
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
post("/ready", {"clock_ms": now_ms()})
if mode == "deaf":
    time.sleep(600)
if mode == "garbage":
    host, port = env["TENURE_REDIS_ADDR"].rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.sendall(b"*x\r\n$3\r\nGET\r\n")
    time.sleep(600)
if mode == "busy":
    parent = os.getpid()
    if os.fork() == 0:
        n = 0
        while True:
            n += 1
            if n % 100000 == 0 and os.getppid() != parent:
                os._exit(0)
    n = 0
    while True:
        n += 1
if mode == "quit":
    time.sleep(0.3)
    sys.exit(4)
target = env["TENURE_TARGETS"].split(",")[0]
interval = int(env["TENURE_POLL_INTERVAL_MS"]) / 1000
while True:
    t = now_ms()
    print("clock %.3f" % t, flush=True)
    post("/poll", {"endpoint": target, "token": 0, "clock_ms": t})
    time.sleep(interval)
