// libbench.js C SECS - node-redlock at the library level, for
// bench/compare.sh (section 6) and bench/lib50.sh: C clients, each with its
// own ioredis connection, doing acquire/release cycles on a key of its own
// for SECS seconds against 127.0.0.1:$REDIS_PORT.  Prints "cycles/s errors".
// Needs redlock@5.0.0-beta.2 and ioredis@5 on NODE_PATH.
const Redis = require("ioredis");
const Redlock = require("redlock").default;
const C = Number(process.argv[2]), secs = Number(process.argv[3]);
const tag = process.pid;
(async () => {
  const clients = [], locks = [];
  for (let i = 0; i < C; i++) {
    const c = new Redis({ host: "127.0.0.1", port: Number(process.env.REDIS_PORT) });
    await c.ping();
    clients.push(c);
    locks.push(new Redlock([c], { retryCount: 0 }));
  }
  let cycles = 0, errors = 0, stop = false;
  const t0 = process.hrtime.bigint();
  setTimeout(() => { stop = true; }, secs * 1000);
  await Promise.all(locks.map(async (rl, i) => {
    while (!stop) {
      try {
        const l = await rl.acquire(["lb:" + tag + ":" + i], 10000);
        await l.release();
        cycles++;
      } catch (e) { errors++; }
    }
  }));
  const el = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log((cycles / el).toFixed(1) + " " + errors);
  for (const c of clients) c.disconnect();
})();
