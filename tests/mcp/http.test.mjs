// `looprctl mcp --http 127.0.0.1:0`: Streamable HTTP at /mcp behind a bearer
// token kept in a 0600 file, Origin and Host checked against DNS rebinding,
// sessions by Mcp-Session-Id; driven by the SDK's StreamableHTTPClientTransport
// and by raw requests (node:http: fetch may not set Host).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { Looprd, loadSdk, looprctlPath, resultText, waitFor } from "./harness.mjs";

const sdk = loadSdk();

// Starts `looprctl mcp --http ...`; resolves once it printed where it
// listens: {child, url, port, tokenFile, stderr()}.
async function startHttp(daemon, ...extra) {
  const child = spawn(looprctlPath, daemon.mcpArgs("--worktree", daemon.repo, "--http", "127.0.0.1:0", ...extra),
    { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let exited = null;
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  child.on("exit", (code, signal) => { exited = { code, signal }; });
  const url = await waitFor(() => {
    if (exited) throw new Error(`looprctl mcp --http exited (${JSON.stringify(exited)}): ${stderr}`);
    const m = stderr.match(/loopr mcp: listening on (http:\/\/127\.0\.0\.1:(\d+)\/mcp)/);
    return m && m[1];
  }, "looprctl mcp --http to listen", 30);
  const port = Number(new URL(url).port);
  const token = stderr.match(/loopr mcp: token in (\S+)/);
  return { child, url, port, tokenFile: token?.[1], stderr: () => stderr, exited: () => exited };
}

async function stopHttp(server) {
  if (!server || server.exited()) return;
  server.child.kill("SIGTERM");
  await waitFor(() => server.exited(), "looprctl mcp --http to stop", 20).catch(() => server.child.kill("SIGKILL"));
}

// One raw HTTP request to 127.0.0.1:port; {status, headers, body}.
function request(port, { method = "POST", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/mcp", method, headers }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (c) => { data += c; });
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on("error", reject);
    if (body !== undefined) req.write(typeof body === "string" ? body : JSON.stringify(body));
    req.end();
  });
}

const initialize = {
  jsonrpc: "2.0", id: 1, method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
};
const jsonHeaders = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };

describe("looprctl mcp --http", () => {
  let daemon;
  let server;
  let token;

  before(async () => {
    daemon = await Looprd.start({ extraToml:
      "[commands]\nbuild = \"for i in 1 2 3; do echo http line $i; sleep 0.3; done\"\n" +
      "test = \"echo started; while :; do date +%s%N >> ticks; sleep 0.1; done\"\n" });
    server = await startHttp(daemon);
    token = fs.readFileSync(server.tokenFile, "utf8").trim();
  });

  after(async () => {
    await stopHttp(server);
    await daemon?.stop();
  });

  const good = () => ({ ...jsonHeaders, Authorization: `Bearer ${token}`,
    Host: `127.0.0.1:${server.port}`, Origin: `http://127.0.0.1:${server.port}` });

  it("keeps the token in <state-dir>/mcp-http.token, mode 0600", () => {
    assert.equal(server.tokenFile, path.join(daemon.stateDir, "mcp-http.token"));
    assert.equal(fs.statSync(server.tokenFile).mode & 0o777, 0o600);
    assert.ok(token.length >= 32, "a short token");
  });

  it("serves the SDK client with the bearer token: tools/list and a call that writes a file", async () => {
    const transport = new sdk.StreamableHTTPClientTransport(new URL(server.url),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new sdk.Client({ name: "loopr-mcp-tests", version: "1" });
    await client.connect(transport);
    try {
      assert.ok(transport.sessionId, "no Mcp-Session-Id");
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("write_file"), names.join(","));
      const result = await client.callTool({ name: "write_file", arguments: { path: "over-http.txt", content: "h\n" } });
      assert.equal(result.isError, false, resultText(result));
      assert.equal(fs.readFileSync(path.join(daemon.repo, "over-http.txt"), "utf8"), "h\n");
      assert.deepEqual(await client.ping(), {});
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it("streams a call's progress over SSE to the SDK client", async () => {
    const transport = new sdk.StreamableHTTPClientTransport(new URL(server.url),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new sdk.Client({ name: "loopr-mcp-tests", version: "1" });
    await client.connect(transport);
    try {
      const progress = [];
      const result = await client.callTool({ name: "build", arguments: {} }, undefined,
        { onprogress: (p) => progress.push(p) });
      assert.equal(result.isError, false, resultText(result));
      assert.match(result.structuredContent.stdout, /http line 3/);
      assert.ok(progress.length >= 2, JSON.stringify(progress));
      assert.match(progress.map((p) => p.message ?? "").join(""), /http line 1/);
    } finally {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it("cancels a call when the SDK client aborts it (notifications/cancelled over POST)", async () => {
    const watcher = await daemon.watchEvents();
    const transport = new sdk.StreamableHTTPClientTransport(new URL(server.url),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new sdk.Client({ name: "loopr-mcp-tests", version: "1" });
    await client.connect(transport);
    try {
      const controller = new AbortController();
      const pending = client.callTool({ name: "test", arguments: {} }, undefined, { signal: controller.signal });
      pending.catch(() => {});
      const started = await waitFor(() => watcher.events.find(
        (e) => e.event === "tool.started" && e.data.tool === "test"), "the test command to start");
      controller.abort("the test cancels it");
      await assert.rejects(pending);
      const finished = await waitFor(() => watcher.events.find(
        (e) => e.event === "tool.finished" && e.data.call_id === started.data.call_id),
      "looprd to finish the cancelled call");
      assert.equal(finished.data.status, "cancelled", JSON.stringify(finished.data));
    } finally {
      watcher.connection.close();
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it("keeps a session whose call is running when new sessions push out the idle ones", async () => {
    const watcher = await daemon.watchEvents();
    const transport = new sdk.StreamableHTTPClientTransport(new URL(server.url),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    const client = new sdk.Client({ name: "loopr-mcp-tests", version: "1" });
    await client.connect(transport);
    try {
      const controller = new AbortController();
      const pending = client.callTool({ name: "test", arguments: {} }, undefined, { signal: controller.signal });
      pending.catch(() => {});
      await waitFor(() => watcher.events.find((e) => e.event === "tool.started" && e.data.tool === "test"),
        "the test command to start");
      // More new sessions than the server keeps (32): the idlest idle ones go.
      for (let i = 0; i < 40; ++i) {
        const res = await request(server.port, { headers: good(), body: initialize });
        assert.equal(res.status, 200, res.body);
      }
      assert.deepEqual(await client.ping(), {}, "the busy session was ended");
      controller.abort("done");
      await assert.rejects(pending);
    } finally {
      watcher.connection.close();
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  });

  it("negotiates the protocol version: a known one is kept, an unknown one gets the newest", async () => {
    const old = await request(server.port, { headers: good(),
      body: { ...initialize, params: { ...initialize.params, protocolVersion: "2024-11-05" } } });
    assert.equal(old.status, 200, old.body);
    assert.equal(JSON.parse(old.body).result.protocolVersion, "2024-11-05");
    const unknown = await request(server.port, { headers: good(),
      body: { ...initialize, params: { ...initialize.params, protocolVersion: "1999-01-01" } } });
    assert.equal(unknown.status, 200, unknown.body);
    assert.equal(JSON.parse(unknown.body).result.protocolVersion, "2025-11-25");
  });

  it("refuses an MCP-Protocol-Version header it does not speak with 400", async () => {
    const init = await request(server.port, { headers: good(), body: initialize });
    const headers = { ...good(), "Mcp-Session-Id": init.headers["mcp-session-id"],
      "Mcp-Protocol-Version": "1999-01-01" };
    const res = await request(server.port, { headers, body: { jsonrpc: "2.0", id: 2, method: "ping" } });
    assert.equal(res.status, 400, res.body);
  });

  it("accepts a raw initialize with the token and a loopback Host and Origin", async () => {
    const res = await request(server.port, { headers: good(), body: initialize });
    assert.equal(res.status, 200, res.body);
    assert.ok(res.headers["mcp-session-id"], "no Mcp-Session-Id header");
  });

  it("refuses a request without the token with 401", async () => {
    const { Authorization, ...headers } = good();
    const res = await request(server.port, { headers, body: initialize });
    assert.equal(res.status, 401, res.body);
  });

  it("refuses a wrong token with 401", async () => {
    const res = await request(server.port, { headers: { ...good(), Authorization: "Bearer not-the-token" }, body: initialize });
    assert.equal(res.status, 401, res.body);
  });

  it("refuses a foreign Origin with 403", async () => {
    const res = await request(server.port, { headers: { ...good(), Origin: "http://evil.example.com" }, body: initialize });
    assert.equal(res.status, 403, res.body);
  });

  it("refuses a foreign Host with 403 (DNS rebinding)", async () => {
    const res = await request(server.port, { headers: { ...good(), Host: `evil.example.com:${server.port}` }, body: initialize });
    assert.equal(res.status, 403, res.body);
  });

  it("refuses a loopback Host on another port with 403", async () => {
    const res = await request(server.port, { headers: { ...good(), Host: `127.0.0.1:${server.port + 1}` }, body: initialize });
    assert.equal(res.status, 403, res.body);
  });

  it("accepts localhost as Host and Origin", async () => {
    const res = await request(server.port, { headers: { ...good(), Host: `localhost:${server.port}`,
      Origin: `http://localhost:${server.port}` }, body: initialize });
    assert.equal(res.status, 200, res.body);
  });

  it("answers GET with 405", async () => {
    const res = await request(server.port, { method: "GET", headers: { ...good(), Accept: "text/event-stream" } });
    assert.equal(res.status, 405);
  });

  it("DELETE ends the session: its id is then unknown (404)", async () => {
    const init = await request(server.port, { headers: good(), body: initialize });
    const session = init.headers["mcp-session-id"];
    assert.ok(session);
    const headers = { ...good(), "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25" };
    const notified = await request(server.port, { headers, body: { jsonrpc: "2.0", method: "notifications/initialized" } });
    assert.equal(notified.status, 202, notified.body);
    const ping = await request(server.port, { headers, body: { jsonrpc: "2.0", id: 2, method: "ping" } });
    assert.equal(ping.status, 200, ping.body);
    const ended = await request(server.port, { method: "DELETE", headers });
    assert.ok(ended.status >= 200 && ended.status < 300, `DELETE: ${ended.status}`);
    const after = await request(server.port, { headers, body: { jsonrpc: "2.0", id: 3, method: "ping" } });
    assert.equal(after.status, 404, after.body);
  });

  it("answers malformed requests with 4xx and a JSON-RPC error", async () => {
    const ping = { jsonrpc: "2.0", id: 7, method: "ping" };
    const noSession = await request(server.port, { headers: good(), body: ping });
    assert.equal(noSession.status, 400, noSession.body);
    assert.match(JSON.parse(noSession.body).error.message, /Mcp-Session-Id/);
    const unknown = await request(server.port, { headers: { ...good(), "Mcp-Session-Id": "no-such-session" }, body: ping });
    assert.equal(unknown.status, 404, unknown.body);
    const session = (await request(server.port, { headers: good(), body: initialize })).headers["mcp-session-id"];
    const batch = await request(server.port, { headers: { ...good(), "Mcp-Session-Id": session }, body: [ping] });
    assert.equal(batch.status, 400, batch.body);
    assert.equal(JSON.parse(batch.body).error.code, -32600);
    const garbage = await request(server.port, { headers: { ...good(), "Mcp-Session-Id": session }, body: "{not json" });
    assert.equal(garbage.status, 400, garbage.body);
    assert.equal(JSON.parse(garbage.body).error.code, -32700);
  });

  it("refuses to listen on an address other than loopback", () => {
    const r = spawnSync(looprctlPath, daemon.mcpArgs("--worktree", daemon.repo, "--http", "0.0.0.0:0"),
      { encoding: "utf8", timeout: 30000 });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /loopback|127\.0\.0\.1/);
  });

  it("--insecure-no-token serves without a token and says so loudly", async () => {
    const open = await startHttp(daemon, "--insecure-no-token");
    try {
      const res = await request(open.port, { headers: { ...jsonHeaders, Host: `127.0.0.1:${open.port}` }, body: initialize });
      assert.equal(res.status, 200, res.body);
      assert.match(open.stderr(), /insecure|no token|without a token/i);
      const evil = await request(open.port, { headers: { ...jsonHeaders, Host: "evil.example.com" }, body: initialize });
      assert.equal(evil.status, 403, "the Host check must stay on without the token");
    } finally {
      await stopHttp(open);
    }
  });
});
