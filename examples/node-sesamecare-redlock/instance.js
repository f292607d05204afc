// One @sesamecare-oss/redlock 1.4.0 lock per endpoint on one Redis (an ioredis client), used as its
// README shows: redlock.using([resource], duration, routine), which extends the lock automatically
// while the routine runs and aborts the routine's signal when an extension fails for good; the routine
// checks signal.aborted before each piece of work.
//
// Every discovery interval the instance reads the sessions (the endpoints) and tries once to lock each
// one it does not hold; while it holds one, the routine polls the endpoint every poll interval. The
// extension is due automaticExtensionThreshold before the lock's expiry: set to TTL − renewal interval,
// so the lock is extended every renewal interval of the scenario. On SIGTERM the routines end after the
// poll in flight and using() releases their locks.
'use strict';
const Redis = require('ioredis');
const { Redlock, ResourceLockedError } = require('@sesamecare-oss/redlock');
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
const redlock = new Redlock([client], {
  retryCount: 0, // one attempt per discovery round
  automaticExtensionThreshold: TTL - ms('TENURE_RENEW_INTERVAL_MS'),
});
// Every refused attempt is also an 'error' event; a lock held elsewhere is no news.
redlock.on('error', (err) => { if (!(err instanceof ResourceLockedError)) console.error('redlock:', err.message); });
// The lock value only has to be unique; the protocol asks for our ID in it, so that a report can tell
// whose lock a write is. The library draws it in _random().
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

const stopping = new AbortController();
const holdings = new Map(); // endpoint -> { active, done }

// The routine: poll while the lock holds, the session is active and the instance is not stopping.
async function work(endpoint, h, signal) {
  h.held = true;
  await post('/belief', { endpoint, held: true, token: 0, reason: 'acquired' });
  // One poll every poll interval, counted from the start of the one before (a poll itself takes
  // TENURE_POLL_DURATION_MS): the cadence the protocol asks for. Behind, it does not catch up.
  let due = Date.now();
  while (!signal.aborted && h.active && !stopping.signal.aborted) {
    await post('/poll', { endpoint, token: 0 });
    due = Math.max(due + ms('TENURE_POLL_INTERVAL_MS'), Date.now());
    await sleep(due - Date.now(), undefined, { signal: stopping.signal }).catch(() => {});
  }
  const reason = signal.aborted ? `lost: ${signal.error?.message}` : 'released';
  console.error(endpoint, reason);
  await post('/belief', { endpoint, held: false, token: 0, reason });
}

function take(endpoint) {
  const h = { active: true, held: false };
  holdings.set(endpoint, h);
  h.done = redlock.using([`${env.TENURE_KEY_PREFIX}lease:${endpoint}`], TTL, (signal) => work(endpoint, h, signal))
    .catch((err) => { if (h.held) console.error(endpoint, 'release failed:', err.message); })
    .finally(() => holdings.delete(endpoint));
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
