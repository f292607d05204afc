// One redlock 4.2.0 lock per endpoint over three independent Redis nodes (ioredis clients), used as
// redlock's README shows: lock(resource, ttl), then lock.extend(ttl) while the work goes on, then
// lock.unlock().
//
// Every discovery interval the instance reads the sessions (the endpoints) from the first node and tries
// once to lock each one it does not hold. While it holds a lock it polls the endpoint every poll
// interval and extends the lock every renewal interval; a failed extension ends the holding. On SIGTERM
// it finishes the polls in flight and unlocks everything.
'use strict';
const Redis = require('ioredis');
const Redlock = require('redlock');

const env = process.env;
if (env.TENURE_PROTOCOL !== '1') {
  console.error(`unknown process protocol version ${JSON.stringify(env.TENURE_PROTOCOL)}; this instance speaks 1`);
  process.exit(2);
}
const ms = (name) => Number(env[name]);
const ID = env.TENURE_INSTANCE_ID;
const TTL = ms('TENURE_LEASE_TTL_MS');

const clients = env.TENURE_REDIS_NODES.split(',').map((addr) => {
  const [host, port] = addr.split(':');
  return new Redis({ host, port: Number(port), commandTimeout: ms('TENURE_OP_TIMEOUT_MS') });
});
// retryCount 0: one attempt per discovery round, as a non-blocking try.
const redlock = new Redlock(clients, { retryCount: 0 });
redlock.on('clientError', (err) => console.error('redis:', err.message));
// The lock value only has to be unique; the protocol asks for our ID in it, so that a report can tell
// whose lock a write is. redlock 4 draws it in _random() and has no option for it.
let attempts = 0;
redlock._random = () => `${ID}:${++attempts}`;

async function post(path, body) {
  const res = await fetch(env.TENURE_HARNESS_URL + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, clock_ms: Date.now() }),
  });
  await res.text();
  return res.status;
}

const held = new Map(); // endpoint -> holding
let stopping = false;

function hold(endpoint, lock) {
  const h = { lock, polling: null, timers: [] };
  held.set(endpoint, h);
  post('/belief', { endpoint, held: true, token: 0, reason: 'acquired' });
  const poll = () => { h.polling = post('/poll', { endpoint, token: 0 }).catch(() => {}); };
  poll();
  h.timers.push(setInterval(poll, ms('TENURE_POLL_INTERVAL_MS')));
  h.timers.push(setInterval(() => {
    h.lock.extend(TTL).then((l) => { h.lock = l; }, (err) => drop(endpoint, `lost: ${err.message}`));
  }, ms('TENURE_RENEW_INTERVAL_MS')));
}

function drop(endpoint, reason) {
  const h = held.get(endpoint);
  if (!h) return null;
  held.delete(endpoint);
  h.timers.forEach(clearInterval);
  console.error(endpoint, reason);
  post('/belief', { endpoint, held: false, token: 0, reason });
  return h;
}

async function release(endpoint, reason) {
  const h = drop(endpoint, reason);
  await h.polling; // the poll in flight finishes first
  await h.lock.unlock().catch((err) => console.error(endpoint, 'unlock failed:', err.message));
}

// The active sessions: keys TENURE_SESSION_PREFIX<id> holding {"id": ..., "paused": ...}.
async function sessions() {
  const keys = [];
  let cursor = '0';
  do {
    const [next, batch] = await clients[0].scan(cursor, 'MATCH', env.TENURE_SESSION_PREFIX + '*');
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const values = keys.length ? await clients[0].mget(keys) : [];
  return new Set(values.filter(Boolean).map((v) => JSON.parse(v)).filter((s) => !s.paused).map((s) => s.id));
}

async function discover() {
  if (stopping) return;
  try {
    const active = await sessions();
    for (const endpoint of held.keys()) {
      if (!active.has(endpoint)) await release(endpoint, 'session gone');
    }
    await Promise.all([...active].filter((e) => !held.has(e)).map((endpoint) =>
      redlock.lock(`${env.TENURE_KEY_PREFIX}lease:${endpoint}`, TTL)
        .then((lock) => {
          if (!stopping && !held.has(endpoint)) hold(endpoint, lock);
          else lock.unlock().catch(() => {});
        }, () => {})));
  } catch (err) {
    console.error('discovery:', err.message);
  }
}

process.on('SIGTERM', async () => {
  stopping = true;
  clearInterval(discovery);
  await Promise.all([...held.keys()].map((endpoint) => release(endpoint, 'released')));
  process.exit(0);
});
// The harness closes our stdin when it goes away: exit with it.
process.stdin.on('end', () => process.exit(0)).resume();

let discovery;
post('/ready', {}).then(() => {
  discover();
  discovery = setInterval(discover, ms('TENURE_DISCOVERY_INTERVAL_MS'));
});
