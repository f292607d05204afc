"""Leader election with redis-py's asyncio client, written from its design note:

  - a candidate takes the role with SET <key> <id> NX EX 30;
  - the leader renews every 10 s: GET the key, and if it still holds our id, EXPIRE it for 30 s more;
  - a standby tries again every 10 s;
  - on shutdown the leader releases with a Lua compare-and-delete;
  - while it believes it leads, the leader does its work.

The 30 s and 10 s come from the harness (TENURE_LEASE_TTL_MS, TENURE_RENEW_INTERVAL_MS), scaled to the
scenario. The work is a POST /poll to the harness every poll interval. Nothing here is meant to be
correct beyond what the note says: this is the design as a team would ship it, for Tenure to judge.
"""
import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request

try:
    import redis.asyncio as aioredis
except ImportError:  # a python3 other than Debian's (pyenv, a venv) does not see Debian's python3-redis
    sys.path.append("/usr/lib/python3/dist-packages")
    import redis.asyncio as aioredis
from redis.exceptions import RedisError

env = os.environ
if env.get("TENURE_PROTOCOL") != "1":
    sys.exit(f"unknown process protocol version {env.get('TENURE_PROTOCOL')!r}; this instance speaks 1")
ID = env["TENURE_INSTANCE_ID"]
PREFIX = env["TENURE_KEY_PREFIX"]
ROLES = [r for r in env["TENURE_TARGETS"].split(",") if r]
TTL_S = max(1, round(int(env["TENURE_LEASE_TTL_MS"]) / 1000))  # EX takes whole seconds
RENEW_S = int(env["TENURE_RENEW_INTERVAL_MS"]) / 1000
POLL_S = int(env["TENURE_POLL_INTERVAL_MS"]) / 1000
OP_TIMEOUT_S = int(env["TENURE_OP_TIMEOUT_MS"]) / 1000
HARNESS = env["TENURE_HARNESS_URL"]

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
"""

logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s")
log = logging.getLogger("election")


def post(path, body):
    """POST a JSON body to the harness; returns the HTTP status (blocking: run it in a thread)."""
    body["clock_ms"] = time.time() * 1000
    req = urllib.request.Request(HARNESS + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


async def tell(path, body):
    return await asyncio.to_thread(post, path, body)


class Role:
    def __init__(self, name):
        self.name = name
        self.key = f"{PREFIX}lease:{name}"
        self.leader = False

    async def become(self, leader, reason):
        self.leader = leader
        log.info("%s %s (%s)", self.name, "leading" if leader else "following", reason)
        await tell("/belief", {"endpoint": self.name, "held": leader, "token": 0, "reason": reason})


async def pause(stopping, seconds):
    """Sleep, waking early on shutdown."""
    try:
        await asyncio.wait_for(stopping.wait(), seconds)
    except asyncio.TimeoutError:
        pass


async def campaign(r, role, stopping):
    """Every renewal interval: a standby tries to take the role, the leader renews it."""
    while not stopping.is_set():
        try:
            if not role.leader:
                if await r.set(role.key, ID, nx=True, ex=TTL_S):
                    await role.become(True, "elected")
            elif await r.get(role.key) == ID:
                await r.expire(role.key, TTL_S)
            else:
                await role.become(False, "lost")
        except RedisError as e:
            log.warning("%s: %s; trying again at the next renewal", role.name, e)
        await pause(stopping, RENEW_S)


async def act(role, stopping):
    """While we lead, do the work every poll interval, counted from the start of the round before (a
    poll itself takes TENURE_POLL_DURATION_MS); behind, it does not catch up."""
    loop = asyncio.get_running_loop()
    due = loop.time()
    while not stopping.is_set():
        if role.leader:
            status = await tell("/poll", {"endpoint": role.name, "token": 0})
            if status != 200:
                log.warning("%s: poll answered %d", role.name, status)
        due = max(due + POLL_S, loop.time())
        await pause(stopping, due - loop.time())


async def main():
    host, port = env["TENURE_REDIS_ADDR"].rsplit(":", 1)
    r = aioredis.Redis(host=host, port=int(port), decode_responses=True,
                       socket_timeout=OP_TIMEOUT_S, socket_connect_timeout=OP_TIMEOUT_S)
    release = r.register_script(RELEASE)
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)

    await tell("/ready", {})
    roles = [Role(name) for name in ROLES]
    tasks = [asyncio.create_task(campaign(r, role, stopping)) for role in roles]
    tasks += [asyncio.create_task(act(role, stopping)) for role in roles]
    await stopping.wait()
    await asyncio.gather(*tasks)  # each ends after its round in flight (a poll is finished, not cut)
    for role in roles:
        if role.leader:
            await release(keys=[role.key], args=[ID])
            await role.become(False, "released")
    await r.close()


# The harness closes our stdin when it goes away: exit with it.
threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
asyncio.run(main())
