// S2 SDK compatibility check: drives @s2-dev/streamstore (pinned, see package.json) against a
// sluice server named by S2_ACCOUNT_ENDPOINT / S2_BASIN_ENDPOINT (e.g. http://127.0.0.1:8080).
// S2_ACCESS_TOKEN is sent as the bearer token. Prints one line per check and a closing
// "N passed, M failed" line; exits 1 if any check failed.
import {
  AppendInput,
  AppendRecord,
  FencingTokenMismatchError,
  RangeNotSatisfiableError,
  S2,
  SeqNumMismatchError,
} from "@s2-dev/streamstore";

const account = process.env.S2_ACCOUNT_ENDPOINT;
const basinEndpoint = process.env.S2_BASIN_ENDPOINT ?? account;
if (!account) {
  console.error("S2_ACCOUNT_ENDPOINT is not set");
  process.exit(2);
}
const s2 = new S2({
  accessToken: process.env.S2_ACCESS_TOKEN ?? "sluice-test-token",
  endpoints: { account, basin: basinEndpoint },
  retry: { maxAttempts: 2, minBaseDelayMillis: 50, maxBaseDelayMillis: 200 },
  requestTimeoutMillis: 10000,
});

const suffix = `${process.pid}-${Date.now().toString(36)}`;
const basinName = `compat-${suffix}`.slice(0, 48).replace(/-+$/, "");
const streamName = "compat/a b"; // needs percent-encoding in paths
let passed = 0;
let failed = 0;

function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function check(name, fn) {
  try {
    await withTimeout(fn(), 30000, name);
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  }
}

// Reads from a session until `n` records arrived (or the session ends); returns them.
async function collect(session, n, { endsByItself = false } = {}) {
  const out = [];
  for await (const rec of session) {
    out.push(rec);
    if (!endsByItself && out.length >= n) break;
  }
  return out;
}

async function expectError(fn, cls, what) {
  try {
    await fn();
  } catch (err) {
    assert(err instanceof cls, `${what}: want ${cls.name}, got ${err?.name}: ${err?.message}`);
    return err;
  }
  throw new Error(`${what}: no error`);
}

const basin = s2.basin(basinName);
const stream = basin.stream(streamName);
const sseStream = basin.stream(streamName, { forceTransport: "fetch" });
const s2sStream = basin.stream(streamName, { forceTransport: "s2s" });
let expectedTail = 0;

await check("create basin", async () => {
  const info = await s2.basins.create({ basin: basinName });
  assert(info.name === basinName, `basin name ${info.name}`);
});

await check("create stream", async () => {
  const info = await basin.streams.create({
    stream: streamName,
    config: { retentionPolicy: { ageSecs: 3600 }, timestamping: { mode: "client-prefer" } },
  });
  assert(info.name === streamName, `stream name ${info.name}`);
  const list = await basin.streams.list({ prefix: "compat/" });
  assert(list.streams.some((s) => s.name === streamName), "listed");
  const cfg = await basin.streams.getConfig({ stream: streamName });
  assert(cfg.retentionPolicy?.ageSecs === 3600, `retention ${JSON.stringify(cfg.retentionPolicy)}`);
});

await check("unary append (JSON)", async () => {
  const ack = await stream.append(
    AppendInput.create([
      AppendRecord.string({ body: "hello", headers: [["k", "v"]], timestamp: 1700000000000 }),
      AppendRecord.string({ body: "world" }),
    ]),
  );
  assert(ack.start.seqNum === 0 && ack.end.seqNum === 2, `ack ${ack.start.seqNum}..${ack.end.seqNum}`);
  assert(ack.tail.seqNum === 2, `tail ${ack.tail.seqNum}`);
  expectedTail = 2;
});

await check("unary append (protobuf, binary record)", async () => {
  const ack = await stream.append(
    AppendInput.create([AppendRecord.bytes({ body: new Uint8Array([0, 1, 2, 255]), headers: [["bin", new Uint8Array([254])]] })]),
  );
  assert(ack.start.seqNum === 2 && ack.end.seqNum === 3, `ack ${ack.start.seqNum}..${ack.end.seqNum}`);
  expectedTail = 3;
});

await check("append session (S2S)", async () => {
  const session = await stream.appendSession();
  const t1 = await session.submit(AppendInput.create([AppendRecord.string({ body: "s1" }), AppendRecord.string({ body: "s2" })]));
  const t2 = await session.submit(AppendInput.create([AppendRecord.string({ body: "s3" })]));
  const a1 = await t1.ack();
  const a2 = await t2.ack();
  await session.close();
  assert(a1.start.seqNum === 3 && a1.end.seqNum === 5, `ack1 ${a1.start.seqNum}..${a1.end.seqNum}`);
  assert(a2.start.seqNum === 5 && a2.end.seqNum === 6, `ack2 ${a2.start.seqNum}..${a2.end.seqNum}`);
  expectedTail = 6;
});

await check("append session (fetch transport)", async () => {
  const session = await sseStream.appendSession();
  const t = await session.submit(AppendInput.create([AppendRecord.string({ body: "f1" })]));
  const a = await t.ack();
  await session.close();
  assert(a.start.seqNum === 6 && a.end.seqNum === 7, `ack ${a.start.seqNum}..${a.end.seqNum}`);
  expectedTail = 7;
});

await check("check tail", async () => {
  const { tail } = await stream.checkTail();
  assert(tail.seqNum === expectedTail, `tail ${tail.seqNum} want ${expectedTail}`);
});

await check("unary read (JSON)", async () => {
  const batch = await stream.read({ start: { from: { seqNum: 0 } }, stop: { limits: { count: 100 } } });
  assert(batch.records.length === expectedTail, `got ${batch.records.length} records`);
  const r0 = batch.records[0];
  assert(r0.seqNum === 0 && r0.body === "hello", `r0 ${JSON.stringify(r0)}`);
  assert(r0.headers.length === 1 && r0.headers[0][0] === "k" && r0.headers[0][1] === "v", `headers ${JSON.stringify(r0.headers)}`);
  assert(r0.timestamp.getTime() === 1700000000000, `client timestamp kept: ${r0.timestamp.getTime()}`);
  for (let i = 1; i < batch.records.length; i++) {
    assert(batch.records[i].timestamp >= batch.records[i - 1].timestamp, "timestamps never decrease");
  }
});

await check("unary read (protobuf, bytes)", async () => {
  const batch = await stream.read({ start: { from: { seqNum: 2 } }, stop: { limits: { count: 1 } } }, { as: "bytes" });
  assert(batch.records.length === 1, `got ${batch.records.length}`);
  const body = Array.from(batch.records[0].body);
  assert(JSON.stringify(body) === "[0,1,2,255]", `body ${body}`);
});

await check("unary read with tail offset", async () => {
  const batch = await stream.read({ start: { from: { tailOffset: 2 } } });
  assert(batch.records.length === 2 && batch.records[0].seqNum === expectedTail - 2, `got ${batch.records.map((r) => r.seqNum)}`);
});

for (const [label, st] of [["S2S", s2sStream], ["SSE", sseStream]]) {
  await check(`read session with count limit ends (${label})`, async () => {
    const session = await st.readSession({ start: { from: { seqNum: 1 } }, stop: { limits: { count: 4 } } });
    const recs = await collect(session, 4, { endsByItself: true });
    assert(recs.length === 4, `got ${recs.length}`);
    assert(recs[0].seqNum === 1 && recs[3].seqNum === 4, `seqs ${recs.map((r) => r.seqNum)}`);
  });

  await check(`read session with follow (${label})`, async () => {
    const session = await st.readSession({ start: { from: { seqNum: expectedTail } } });
    const caught = await withTimeout(session.caughtUp(), 10000, "caught up");
    assert(caught.seqNum === expectedTail, `caught up at ${caught.seqNum}`);
    const pending = collect(session, 2);
    await stream.append(AppendInput.create([AppendRecord.string({ body: `live-${label}-1` }), AppendRecord.string({ body: `live-${label}-2` })]));
    const recs = await pending;
    assert(recs.length === 2 && recs[0].body === `live-${label}-1`, `live ${JSON.stringify(recs.map((r) => r.body))}`);
    assert(recs[0].seqNum === expectedTail, `seq ${recs[0].seqNum}`);
    expectedTail += 2;
  });

  await check(`read session past the tail fails typed (${label})`, async () => {
    await expectError(
      async () => {
        const session = await st.readSession({ start: { from: { seqNum: 1000000 } } });
        await collect(session, 1);
      },
      RangeNotSatisfiableError,
      "read session",
    );
  });
}

await check("gzip-compressed S2S sessions", async () => {
  const gz = new S2({
    accessToken: process.env.S2_ACCESS_TOKEN ?? "sluice-test-token",
    endpoints: { account, basin: basinEndpoint },
    compression: "gzip",
    retry: { maxAttempts: 2, minBaseDelayMillis: 50, maxBaseDelayMillis: 200 },
  });
  const st = gz.basin(basinName).stream(streamName, { forceTransport: "s2s" });
  const big = "z".repeat(4000);
  const session = await st.appendSession();
  const ack = await (await session.submit(AppendInput.create([AppendRecord.string({ body: big }), AppendRecord.string({ body: big })]))).ack();
  await session.close();
  assert(ack.start.seqNum === expectedTail && ack.end.seqNum === expectedTail + 2, `ack ${ack.start.seqNum}..${ack.end.seqNum}`);
  const read = await st.readSession({ start: { from: { seqNum: expectedTail } }, stop: { limits: { count: 2 } } });
  const recs = await collect(read, 2, { endsByItself: true });
  assert(recs.length === 2 && recs[1].body === big, `read ${recs.length}`);
  expectedTail += 2;
});

await check("ensure and reconfigure stream", async () => {
  const ens = await basin.streams.ensure({ stream: "compat-ensure", config: { retentionPolicy: { ageSecs: 60 } } });
  assert(ens.stream.name === "compat-ensure" && ens.result === "created", `ensure ${JSON.stringify(ens)}`);
  const again = await basin.streams.ensure({ stream: "compat-ensure", config: { retentionPolicy: { ageSecs: 60 } } });
  assert(again.result === "noop", `ensure again ${JSON.stringify(again)}`);
  const cfg = await basin.streams.reconfigure({ stream: "compat-ensure", retentionPolicy: { ageSecs: 120 } });
  assert(cfg.retentionPolicy?.ageSecs === 120, `reconfigure ${JSON.stringify(cfg)}`);
  await basin.streams.delete({ stream: "compat-ensure" });
});

// The SDK keeps many inputs in flight (3 MiB by default): every one is acknowledged, in
// order, with contiguous positions. (The daemon commits them a few at a time; one commit
// per input took 8.9 s for these 800, 0.05 s now.)
await check("pipelined append session (800 inputs in flight)", async () => {
  const name = "compat-pipeline";
  await basin.streams.create({ stream: name });
  const st = basin.stream(name, { forceTransport: "s2s" });
  const session = await st.appendSession();
  const tickets = [];
  for (let i = 0; i < 800; i++) {
    tickets.push(await session.submit(AppendInput.create([AppendRecord.string({ body: `p${i}` })])));
  }
  const acks = await Promise.all(tickets.map((t) => t.ack()));
  await session.close();
  acks.forEach((a, i) => assert(a.start.seqNum === i && a.end.seqNum === i + 1, `ack ${i}: ${a.start.seqNum}..${a.end.seqNum}`));
  const { tail } = await st.checkTail();
  assert(tail.seqNum === 800, `tail ${tail.seqNum}`);
  await basin.streams.delete({ stream: name });
});

await check("basin config and create_stream_on_append", async () => {
  const list = await s2.basins.list({ prefix: basinName });
  assert(list.basins.length === 1 && list.basins[0].name === basinName, `list ${JSON.stringify(list)}`);
  const cfg = await s2.basins.reconfigure({ basin: basinName, createStreamOnAppend: true });
  assert(cfg.createStreamOnAppend === true, `reconfigure ${JSON.stringify(cfg)}`);
  const got = await s2.basins.getConfig({ basin: basinName });
  assert(got.createStreamOnAppend === true && got.createStreamOnRead === false, `config ${JSON.stringify(got)}`);
  const auto = basin.stream("compat-auto");
  const ack = await auto.append(
    AppendInput.create([AppendRecord.string({ body: "first" })], { streamConfig: { retentionPolicy: { ageSecs: 77 } } }),
  );
  assert(ack.start.seqNum === 0, `auto-created append at ${ack.start.seqNum}`);
  const scfg = await basin.streams.getConfig({ stream: "compat-auto" });
  assert(scfg.retentionPolicy?.ageSecs === 77, `auto-created config ${JSON.stringify(scfg)}`);
  await basin.streams.delete({ stream: "compat-auto" });
});

await check("seq_num mismatch (unary)", async () => {
  const err = await expectError(
    () => stream.append(AppendInput.create([AppendRecord.string({ body: "x" })], { matchSeqNum: 0 })),
    SeqNumMismatchError,
    "append",
  );
  assert(err.expectedSeqNum === expectedTail, `expected ${err.expectedSeqNum} want ${expectedTail}`);
});

await check("fencing token mismatch (unary)", async () => {
  await stream.append(AppendInput.create([AppendRecord.fence("tok-1")]));
  expectedTail += 1;
  const err = await expectError(
    () => stream.append(AppendInput.create([AppendRecord.string({ body: "x" })], { fencingToken: "wrong" })),
    FencingTokenMismatchError,
    "append",
  );
  assert(err.expectedFencingToken === "tok-1", `token ${err.expectedFencingToken}`);
  const ok = await stream.append(AppendInput.create([AppendRecord.string({ body: "fenced" })], { fencingToken: "tok-1" }));
  assert(ok.start.seqNum === expectedTail, `fenced append at ${ok.start.seqNum}`);
  expectedTail += 1;
});

await check("seq_num mismatch (append session)", async () => {
  const session = await stream.appendSession();
  await expectError(
    async () => {
      const t = await session.submit(AppendInput.create([AppendRecord.string({ body: "x" })], { matchSeqNum: 1 }));
      await t.ack();
    },
    SeqNumMismatchError,
    "append session",
  );
  await session.close().catch(() => {});
});

await check("fencing token mismatch (append session)", async () => {
  const session = await stream.appendSession();
  await expectError(
    async () => {
      const t = await session.submit(AppendInput.create([AppendRecord.string({ body: "x" })], { fencingToken: "nope" }));
      await t.ack();
    },
    FencingTokenMismatchError,
    "append session",
  );
  await session.close().catch(() => {});
});

await check("read past the tail (unary)", async () => {
  const err = await expectError(
    () => stream.read({ start: { from: { seqNum: 1000000 } } }),
    RangeNotSatisfiableError,
    "read",
  );
  assert(err.tail?.seqNum === expectedTail, `416 tail ${JSON.stringify(err.tail)}`);
});

await check("read with clamp past the tail", async () => {
  const batch = await stream.read({ start: { from: { seqNum: 1000000 }, clamp: true } });
  assert(batch.records.length === 0, `got ${batch.records.length}`);
});

await check("delete stream and basin", async () => {
  await basin.streams.delete({ stream: streamName });
  await s2.basins.delete({ basin: basinName });
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
