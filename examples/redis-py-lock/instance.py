"""One redis-py Lock per endpoint, used as redis-py's documentation shows.

Every discovery interval the instance reads the sessions (the endpoints) from Redis and tries to take
the lock of each one it does not hold, without blocking: r.lock(name, timeout=TTL).acquire(blocking=False).
For each lock it holds, one thread polls the endpoint every poll interval and another keeps the lock alive
with reacquire() (the TTL set back to `timeout`) every renewal interval. A reacquire that fails, because
the lock is no longer ours or Redis did not answer, ends the holding. On SIGTERM the pollers finish the
poll in flight and every lock is released.
"""
import json
import os
import select
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

try:
    import redis
except ImportError:  # a python3 other than Debian's (pyenv, a venv) does not see Debian's python3-redis
    sys.path.append("/usr/lib/python3/dist-packages")
    import redis
from redis.exceptions import LockError, RedisError

env = os.environ
if env.get("TENURE_PROTOCOL") != "1":
    sys.exit(f"unknown process protocol version {env.get('TENURE_PROTOCOL')!r}; this instance speaks 1")
ID = env["TENURE_INSTANCE_ID"]
PREFIX = env["TENURE_KEY_PREFIX"]
SESSIONS = env["TENURE_SESSION_PREFIX"]
TTL_S = int(env["TENURE_LEASE_TTL_MS"]) / 1000
RENEW_S = int(env["TENURE_RENEW_INTERVAL_MS"]) / 1000
DISCOVERY_S = int(env["TENURE_DISCOVERY_INTERVAL_MS"]) / 1000
POLL_S = int(env["TENURE_POLL_INTERVAL_MS"]) / 1000
OP_TIMEOUT_S = int(env["TENURE_OP_TIMEOUT_MS"]) / 1000
HARNESS = env["TENURE_HARNESS_URL"]

host, port = env["TENURE_REDIS_ADDR"].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port), decode_responses=True,
                socket_timeout=OP_TIMEOUT_S, socket_connect_timeout=OP_TIMEOUT_S)

# A pipe that becomes readable on SIGTERM: every thread sleeps in select() on it, so a stop wakes them
# all. (threading.Event.wait(timeout) would do, but it never returns under libfaketime.)
stop_r, stop_w = os.pipe()
signal.signal(signal.SIGTERM, lambda *_: os.write(stop_w, b"x"))


def nap(seconds):
    """Sleep; returns True when the instance is stopping."""
    return bool(select.select([stop_r], [], [], seconds)[0])


def post(path, body):
    body["clock_ms"] = time.time() * 1000
    req = urllib.request.Request(HARNESS + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def log(*args):
    print(*args, file=sys.stderr, flush=True)


class Holding:
    """A lock we hold on one endpoint, with its poller and its renewer."""

    def __init__(self, endpoint, lock):
        self.endpoint, self.lock = endpoint, lock
        self.held, self.leaving = True, False
        post("/belief", {"endpoint": endpoint, "held": True, "token": 0, "reason": "acquired"})
        self.poller = threading.Thread(target=self.poll, daemon=True)
        self.poller.start()
        threading.Thread(target=self.renew, daemon=True).start()

    def drop(self, reason):
        if self.held:
            self.held = False
            log(self.endpoint, reason)
            post("/belief", {"endpoint": self.endpoint, "held": False, "token": 0, "reason": reason})

    def poll(self):
        # One poll every poll interval, counted from the start of the one before (a poll itself takes
        # TENURE_POLL_DURATION_MS): the cadence the protocol asks for. Behind, it does not catch up.
        due = time.monotonic()
        while self.held and not self.leaving:
            post("/poll", {"endpoint": self.endpoint, "token": 0})
            due = max(due + POLL_S, time.monotonic())
            if nap(due - time.monotonic()):
                return

    def renew(self):
        while self.held and not nap(RENEW_S):
            try:
                self.lock.reacquire()
            except (LockError, RedisError) as e:
                self.drop(f"lost: {e!r}")

    def release(self, reason):
        """Let the poll in flight finish, then release the lock."""
        self.leaving = True
        self.poller.join()
        if self.held:
            try:
                self.lock.release()
            except (LockError, RedisError) as e:
                log(self.endpoint, "release failed:", repr(e))
            self.drop(reason)


def sessions():
    """The active sessions: keys SESSIONS<id> holding {"id": ..., "paused": ...}."""
    keys = list(r.scan_iter(match=SESSIONS + "*"))
    values = r.mget(keys) if keys else []
    return {s["id"] for s in (json.loads(v) for v in values if v) if not s.get("paused")}


def main():
    threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
    post("/ready", {})
    held, attempts = {}, 0
    while True:
        try:
            active = sessions()
            for endpoint, h in list(held.items()):
                if endpoint not in active:  # paused or removed: let it go
                    h.release("session gone")
                if not h.held:
                    del held[endpoint]
            for endpoint in sorted(active - held.keys()):
                # thread_local=False: the lock is taken here and renewed from another thread (redis-py's
                # documentation on thread_local).
                lock = r.lock(f"{PREFIX}lease:{endpoint}", timeout=TTL_S, thread_local=False)
                # The token only has to be unique; the protocol asks for our ID in it, so that a report
                # can tell whose lock a write is (acquire() takes it; redis-py would draw a uuid1).
                attempts += 1
                if lock.acquire(blocking=False, token=f"{ID}:{attempts}"):
                    held[endpoint] = Holding(endpoint, lock)
        except (LockError, RedisError) as e:
            log("discovery:", repr(e))
        if nap(DISCOVERY_S):
            break
    for h in held.values():
        h.release("released")


main()
