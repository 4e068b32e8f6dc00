// Access-token check through S2's own TypeScript SDK: against a sluice server started with
// `--auth-token ROOT` (S2_ACCOUNT_ENDPOINT / S2_BASIN_ENDPOINT name it, S2_ACCESS_TOKEN is
// ROOT), the root token issues scoped tokens, and each is held to its scope; live sessions
// end when their token is revoked. Prints one line per check and a closing "N passed, M
// failed" line; exits 1 if any check failed.
import { AppendInput, AppendRecord, S2, S2Error } from "@s2-dev/streamstore";

const account = process.env.S2_ACCOUNT_ENDPOINT;
const basinEndpoint = process.env.S2_BASIN_ENDPOINT ?? account;
const root = process.env.S2_ACCESS_TOKEN;
if (!account || !root) {
  console.error("S2_ACCOUNT_ENDPOINT and S2_ACCESS_TOKEN (the root token) must be set");
  process.exit(2);
}

function client(accessToken) {
  return new S2({
    accessToken,
    endpoints: { account, basin: basinEndpoint },
    retry: { maxAttempts: 2, minBaseDelayMillis: 50, maxBaseDelayMillis: 200 },
    requestTimeoutMillis: 10000,
  });
}

const s2 = client(root);
const suffix = `${process.pid}-${Date.now().toString(36)}`;
const basinName = `acl-${suffix}`.slice(0, 48).replace(/-+$/, "");
const otherBasin = `acl2-${suffix}`.slice(0, 48).replace(/-+$/, "");
let passed = 0;
let failed = 0;

function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}

async function check(name, fn) {
  let timer;
  try {
    await Promise.race([
      fn(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${name}: timed out`)), 30000);
      }),
    ]);
    passed++;
    console.log(`ok   ${name}`);
  } catch (err) {
    failed++;
    console.log(`FAIL ${name}: ${err?.stack ?? err}`);
  } finally {
    clearTimeout(timer);
  }
}

// Fails unless fn throws an S2Error with this status and code.
async function refused(fn, status, code, what) {
  try {
    await fn();
  } catch (err) {
    assert(err instanceof S2Error, `${what}: want S2Error, got ${err?.name}: ${err?.message}`);
    assert(err.status === status && err.code === code, `${what}: want ${status} ${code}, got ${err.status} ${err.code}: ${err.message}`);
    return;
  }
  throw new Error(`${what}: not refused`);
}

const rec = (body) => AppendInput.create([AppendRecord.string({ body })]);
const secrets = {};

await check("root creates basins and streams", async () => {
  for (const b of [basinName, otherBasin]) {
    await s2.basins.create({ basin: b });
    for (const st of ["svc-a/events", "svc-b/events"]) {
      await s2.basin(b).streams.create({ stream: st });
      await s2.basin(b).stream(st).append(rec("seed"));
    }
  }
});

await check("root issues scoped tokens", async () => {
  const issue = async (id, scope, extra = {}) => {
    const { accessToken } = await s2.accessTokens.issue({ id, scope, ...extra });
    assert(typeof accessToken === "string" && accessToken.length > 0, `${id}: token ${accessToken}`);
    secrets[id] = accessToken;
  };
  await issue("dashboard", {
    basins: { exact: basinName },
    streams: { prefix: "" },
    opGroups: { basin: { read: true }, stream: { read: true } },
  });
  await issue("svc-a", { basins: { exact: basinName }, streams: { prefix: "svc-a/" }, ops: ["append"] });
  await issue("short", { basins: { prefix: "" }, ops: ["list-basins"] }, { expiresAt: new Date(Date.now() + 1500) });
});

await check("a read-only token reads its basin", async () => {
  const b = client(secrets.dashboard).basin(basinName);
  const batch = await b.stream("svc-a/events").read({ start: { from: { seqNum: 0 } }, stop: { limits: { count: 10 } } });
  assert(batch.records.length === 1 && batch.records[0].body === "seed", `read ${JSON.stringify(batch.records)}`);
  const { tail } = await b.stream("svc-b/events").checkTail();
  assert(tail.seqNum === 1, `tail ${tail.seqNum}`);
  const list = await b.streams.list();
  assert(list.streams.length === 2, `list ${JSON.stringify(list.streams)}`);
  const session = await b.stream("svc-a/events", { forceTransport: "s2s" }).readSession({
    start: { from: { seqNum: 0 } },
    stop: { limits: { count: 1 } },
  });
  const got = [];
  for await (const r of session) got.push(r);
  assert(got.length === 1, `session read ${got.length}`);
});

await check("a read-only token is refused append, create, delete, trim and token issue", async () => {
  const ro = client(secrets.dashboard);
  const b = ro.basin(basinName);
  const st = b.stream("svc-a/events");
  await refused(() => st.append(rec("no")), 403, "permission_denied", "append");
  await refused(() => b.streams.create({ stream: "svc-a/new" }), 403, "permission_denied", "create stream");
  await refused(() => b.streams.delete({ stream: "svc-a/events" }), 403, "permission_denied", "delete stream");
  await refused(() => st.append(AppendInput.create([AppendRecord.trim(1)])), 403, "permission_denied", "trim");
  await refused(() => ro.basins.create({ basin: `acl3-${suffix}`.slice(0, 48) }), 403, "permission_denied", "create basin");
  await refused(
    () => ro.accessTokens.issue({ id: "escalate", scope: { basins: { exact: basinName }, ops: ["read"] } }),
    403,
    "permission_denied",
    "issue token",
  );
  await refused(
    () => ro.basin(otherBasin).stream("svc-a/events").read({ start: { from: { seqNum: 0 } } }),
    403,
    "permission_denied",
    "read another basin",
  );
});

await check("a token scoped to a basin and a stream prefix appends there and nowhere else", async () => {
  const svc = client(secrets["svc-a"]);
  const ack = await svc.basin(basinName).stream("svc-a/events").append(rec("from-svc-a"));
  assert(ack.end.seqNum - ack.start.seqNum === 1, `ack ${JSON.stringify(ack)}`);
  const session = await svc.basin(basinName).stream("svc-a/events", { forceTransport: "s2s" }).appendSession();
  const sack = await (await session.submit(rec("session"))).ack();
  await session.close();
  assert(sack.end.seqNum === 3, `session ack ${JSON.stringify(sack)}`);
  await refused(() => svc.basin(basinName).stream("svc-b/events").append(rec("no")), 403, "permission_denied", "other stream");
  await refused(() => svc.basin(otherBasin).stream("svc-a/events").append(rec("no")), 403, "permission_denied", "other basin");
  await refused(() => svc.basin(basinName).stream("svc-a/events").read({ start: { from: { seqNum: 0 } } }), 403, "permission_denied", "read");
});

await check("listing tokens never shows a secret", async () => {
  const list = await s2.accessTokens.list();
  const ids = list.accessTokens.map((t) => t.id).sort();
  assert(JSON.stringify(ids) === JSON.stringify(["dashboard", "short", "svc-a"]), `ids ${ids}`);
  const text = JSON.stringify(list);
  for (const [id, secret] of Object.entries(secrets)) {
    assert(!text.includes(secret) && !text.includes(secret.split(".").pop()), `the listing shows ${id}'s secret`);
  }
  const svc = list.accessTokens.find((t) => t.id === "svc-a");
  assert(svc.scope.streams.prefix === "svc-a/" && svc.scope.ops.includes("append"), `scope ${JSON.stringify(svc.scope)}`);
});

await check("a revoked token is refused", async () => {
  const svc = client(secrets["svc-a"]).basin(basinName).stream("svc-a/events");
  await s2.accessTokens.revoke({ id: "svc-a" });
  await refused(() => svc.append(rec("after revoke")), 401, "authn", "append after revoke");
});

await check("live sessions end when their token is revoked", async () => {
  const iters = {};
  for (const transport of ["s2s", "fetch"]) {
    const id = `watcher-${transport}`;
    const { accessToken } = await s2.accessTokens.issue({
      id,
      scope: { basins: { exact: basinName }, streams: { prefix: "svc-a/" }, ops: ["read"] },
    });
    const st = client(accessToken).basin(basinName).stream("svc-a/events", { forceTransport: transport });
    const it = (await st.readSession({ start: { from: { seqNum: 0 } } }))[Symbol.asyncIterator]();
    const first = await it.next();
    assert(!first.done && first.value.body === "seed", `${transport}: first ${JSON.stringify(first.value)}`);
    iters[transport] = it;
  }
  for (const transport of ["s2s", "fetch"]) await s2.accessTokens.revoke({ id: `watcher-${transport}` });
  for (const [transport, it] of Object.entries(iters)) {
    let ended;
    try {
      for (;;) {
        const r = await it.next();
        if (r.done) break;
      }
      ended = "the session ended without an error";
    } catch (err) {
      ended = err;
    }
    assert(ended instanceof S2Error && ended.status === 401, `${transport}: ended with ${ended?.status ?? ""} ${ended?.message ?? ended}`);
  }
});

await check("an expired token is refused", async () => {
  await new Promise((r) => setTimeout(r, 2000));
  await refused(() => client(secrets.short).basins.list(), 401, "authn", "list after expiry");
});

await check("clean up", async () => {
  await s2.accessTokens.revoke({ id: "dashboard" });
  await s2.accessTokens.revoke({ id: "short" });
  for (const b of [basinName, otherBasin]) await s2.basins.delete({ basin: b });
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
