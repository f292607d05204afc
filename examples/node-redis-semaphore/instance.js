// One redis-semaphore 5.8.0 Mutex per endpoint on one Redis (an ioredis client), used as its README
// shows ("Example with optional lock" and "Example with lost lock handling"): new Mutex(client, key,
// { acquireAttemptsLimit: 1, onLockLost }), then tryAcquire(); while mutex.isAcquired the work goes on,
// the library refreshing the lock by itself every refreshInterval; then release().
//
// Every discovery interval the instance reads the sessions (the endpoints) and, for each one it does not
// hold, builds a Mutex and tries once to acquire it. While it holds one it polls the endpoint every poll
// interval, as long as mutex.isAcquired. The library refreshes the lock every refreshInterval (set to the
// scenario's renewal interval; lockTimeout is the lease TTL) and calls onLockLost when a refresh finds
// the key no longer ours: that ends the holding. On SIGTERM the holdings end after the poll in flight and
// release() deletes their keys.
//
// The library puts "mutex:" before the key it is given (it writes mutex:<TENURE_KEY_PREFIX>lease:<id>);
// system.json declares that prefix ("keys"), so the recorder places its commands on the lease.
'use strict';
const Redis = require('ioredis');
const { Mutex } = require('redis-semaphore');
const { setTimeout: sleep } = require('timers/promises');

const env = process.env;
if (env.TENURE_PROTOCOL !== '1') {
  console.error(`unknown process protocol version ${JSON.stringify(env.TENURE_PROTOCOL)}; this instance speaks 1`);
  process.exit(2);
}
const ms = (name) => Number(env[name]);
const ID = env.TENURE_INSTANCE_ID;
const TTL = ms('TENURE_LEASE_TTL_MS');

const [host, port] = env.TENURE_REDIS_ADDR.split(':');
const client = new Redis({ host, port: Number(port), commandTimeout: ms('TENURE_OP_TIMEOUT_MS') });
// Connection errors (the link cut, Redis restarting): ioredis reconnects by itself.
client.on('error', (err) => console.error('redis:', err.message));

async function post(path, body) {
  const res = await fetch(env.TENURE_HARNESS_URL + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...body, clock_ms: Date.now() }),
  });
  await res.text();
  return res.status;
}

const stopping = new AbortController();
const holdings = new Map(); // endpoint -> { active, held, done }: an attempt in flight or a holding
// The lock value only has to be unique between holders (the library draws a UUID); the protocol asks
// for our ID in it, so that a report can tell whose lock a write is: the documented identifier option,
// new for every Mutex.
let attempts = 0;

function take(endpoint) {
  const h = { active: true, held: false };
  holdings.set(endpoint, h);
  const mutex = new Mutex(client, `${env.TENURE_KEY_PREFIX}lease:${endpoint}`, {
    lockTimeout: TTL,
    refreshInterval: ms('TENURE_RENEW_INTERVAL_MS'),
    acquireAttemptsLimit: 1, // one attempt per discovery round: a non-blocking try
    identifier: `${ID}:${++attempts}`,
    // A refresh found the key gone or another's: the library has stopped refreshing and isAcquired is
    // false, so the loop below polls no more.
    onLockLost(err) {
      if (!h.held) return;
      h.held = false;
      console.error(endpoint, 'lost:', err.message);
      post('/belief', { endpoint, held: false, token: 0, reason: `lost: ${err.message}` }).catch(() => {});
    },
  });
  h.done = hold(endpoint, h, mutex)
    .catch((err) => console.error(endpoint, err.message))
    .finally(() => holdings.delete(endpoint));
}

async function hold(endpoint, h, mutex) {
  if (!(await mutex.tryAcquire())) return; // held elsewhere: try again at the next discovery tick
  h.held = true;
  await post('/belief', { endpoint, held: true, token: 0, reason: 'acquired' });
  // The README's loop: work while mutex.isAcquired (here also while the session is active and the
  // instance is not stopping): one poll every poll interval, counted from the start of the previous one
  // (the poll itself takes TENURE_POLL_DURATION_MS).
  while (mutex.isAcquired && h.active && !stopping.signal.aborted) {
    const next = Date.now() + ms('TENURE_POLL_INTERVAL_MS');
    await post('/poll', { endpoint, token: 0 });
    await sleep(Math.max(0, next - Date.now()), undefined, { signal: stopping.signal }).catch(() => {});
  }
  if (!h.held) return; // onLockLost ended the holding
  h.held = false;
  const reason = stopping.signal.aborted ? 'released' : 'session gone';
  console.error(endpoint, reason);
  await post('/belief', { endpoint, held: false, token: 0, reason });
  await mutex.release().catch((err) => console.error(endpoint, 'release failed:', err.message));
}

// The active sessions: keys TENURE_SESSION_PREFIX<id> holding {"id": ..., "paused": ...}.
async function sessions() {
  const keys = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', env.TENURE_SESSION_PREFIX + '*');
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  const values = keys.length ? await client.mget(keys) : [];
  return new Set(values.filter(Boolean).map((v) => JSON.parse(v)).filter((s) => !s.paused).map((s) => s.id));
}

async function discover() {
  if (stopping.signal.aborted) return;
  try {
    const active = await sessions();
    for (const [endpoint, h] of holdings) h.active = active.has(endpoint);
    for (const endpoint of active) if (!holdings.has(endpoint)) take(endpoint);
  } catch (err) {
    console.error('discovery:', err.message);
  }
}

process.on('SIGTERM', async () => {
  clearInterval(discovery);
  stopping.abort();
  await Promise.all([...holdings.values()].map((h) => h.done));
  process.exit(0);
});
// The harness closes our stdin when it goes away: exit with it.
process.stdin.on('end', () => process.exit(0)).resume();

let discovery;
post('/ready', {}).then(() => {
  discover();
  discovery = setInterval(discover, ms('TENURE_DISCOVERY_INTERVAL_MS'));
});
