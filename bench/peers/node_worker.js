#!/usr/bin/env node
// node_worker.js: one benchmark worker process for the node peers of bench/compare:
// `redlock` (4.x) and `redis-semaphore` Mutex (5.x), both on ioredis.
//
// Usage: node node_worker.js '<json config>'
//   config: {library: "redlock"|"redis-semaphore", variant: "default"|"tuned",
//            scenario: "uncontended"|"contended", port, concurrency, lock_name, counter_key,
//            hold_us, ttl_ms, hard_deadline_s}
// Protocol (stdin/stdout, one line each): the worker connects, prints "ready", reads
// "go <start_ns> <end_ns>" (CLOCK_MONOTONIC, process.hrtime.bigint()), waits for start, runs
// until end, prints one JSON line with its raw measurements and exits.
//   uncontended: {"cycles":n,"latency_ns":[...],"errors":n,"start_ns":s,"finished_ns":f}
//                (one lock name per loop; cycles before start warm up, unrecorded)
//   contended:   {"intervals":[[acquired_ns,released_ns],...],"errors":n}
// Guarantees: acquire waits as a user would (the library's retry; a give-up error is retried
// until the end instant); the worker exits by itself at hard_deadline_s after start.
'use strict';

const Redis = require('ioredis');
const Redlock = require('redlock');
const { Mutex } = require('redis-semaphore');
const readline = require('readline');

const cfg = JSON.parse(process.argv[2]);
const now = () => process.hrtime.bigint();
const sleeper = new Int32Array(new SharedArrayBuffer(4));

// Sleeps the thread until `until` (ns) precisely, like std::this_thread::sleep_until; the
// holder has nothing else to do meanwhile.
function sleep_until(until) {
  for (;;) {
    const left = until - now();
    if (left <= 0n) return;
    Atomics.wait(sleeper, 0, 0, Number(left) / 1e6);
  }
}

// Returns {acquire(): Promise<handle>, release(handle): Promise} for one lock name.
function make_locker(client, name) {
  const tuned = cfg.variant === 'tuned';
  if (cfg.library === 'redlock') {
    const redlock = new Redlock([client], tuned ? { retryDelay: 10 } : {});
    return {
      async acquire(end) {
        for (;;) {
          try {
            return await redlock.lock(name, cfg.ttl_ms);
          } catch (e) {
            if (!(e instanceof Redlock.LockError) || now() > end) throw e;
          }
        }
      },
      release: (lock) => lock.unlock(),
    };
  }
  if (cfg.library === 'redis-semaphore') {
    const mutex = new Mutex(client, name, tuned ? { retryInterval: 1 } : {});
    return {
      async acquire(end) {
        for (;;) {
          try {
            await mutex.acquire();
            return mutex;
          } catch (e) {
            if (now() > end) throw e;
          }
        }
      },
      release: (m) => m.release(),
    };
  }
  throw new Error('unknown library ' + cfg.library);
}

// Cycles that start before `start` warm up (JIT, connection) and are not recorded.
async function uncontended(client, start, end) {
  const latency = [];
  let errors = 0;
  const loop = async (w) => {
    const locker = make_locker(client, `${cfg.lock_name}:${process.pid}:${w}`);
    while (now() < end) {
      const t0 = now();
      try {
        const h = await locker.acquire(end + 10_000_000_000n);
        await locker.release(h);
      } catch (e) {
        ++errors;
        continue;
      }
      if (t0 >= start) latency.push(Number(now() - t0));
    }
  };
  const loops = [];
  for (let w = 0; w < cfg.concurrency; ++w) loops.push(loop(w));
  await Promise.all(loops);
  return { cycles: latency.length, latency_ns: latency, errors, start_ns: String(start), finished_ns: String(now()) };
}

async function contended(client, end) {
  const locker = make_locker(client, cfg.lock_name);
  const intervals = [];
  let errors = 0;
  const hold = BigInt(cfg.hold_us) * 1000n;
  while (now() < end) {
    let h;
    try {
      h = await locker.acquire(end);
    } catch (e) {
      if (now() >= end) break;  // the run ended while waiting, as rlock's workers stop
      ++errors;
      continue;
    }
    const acquired = now();
    if (acquired >= end) {
      // Granted after the end instant (an attempt in flight then): not counted, like rlock's
      // workers, which give up waiting at the end.
      try { await locker.release(h); } catch (e) { ++errors; }
      break;
    }
    const v = await client.get(cfg.counter_key);
    await client.set(cfg.counter_key, String((v === null ? 0 : Number(v)) + 1));
    sleep_until(now() + hold);
    const released = now();
    try {
      await locker.release(h);
    } catch (e) {
      ++errors;
    }
    intervals.push([String(acquired), String(released)]);
  }
  return { intervals, errors };
}

async function main() {
  const client = new Redis({ host: '127.0.0.1', port: cfg.port, lazyConnect: false });
  await client.ping();
  process.stdout.write('ready\n');
  const rl = readline.createInterface({ input: process.stdin });
  const go = await new Promise((resolve) => rl.once('line', resolve));
  rl.close();
  const [, start_s, end_s] = go.trim().split(/\s+/);
  const start = BigInt(start_s);
  const end = BigInt(end_s);
  setTimeout(() => process.exit(3), cfg.hard_deadline_s * 1000).unref();
  let result;
  if (cfg.scenario === 'contended') {
    sleep_until(start);
    result = await contended(client, end);
  } else {
    result = await uncontended(client, start, end);
  }
  process.stdout.write(JSON.stringify(result) + '\n');
  client.disconnect();
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(2);
});
