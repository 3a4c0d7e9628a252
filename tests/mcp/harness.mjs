// Shared by the tests of `looprctl mcp` (tests/mcp/*.test.mjs): the official
// MCP TypeScript SDK from the build's npm folder, a real looprd started in
// the foreground with its own socket, config and state in a temporary tree
// (as tests/daemon/daemon_harness.cpp does), a git repository beneath its
// worktree root, and a client of looprd's control socket to watch events.
//
// Environment (tests/mcp/CMakeLists.txt sets both):
//   LOOPR_BIN_DIR  the build's bin folder (looprd, looprctl, loopr-runner, ...)
//   LOOPR_NPM_DIR  the build's npm folder (scripts/install-test-npm.sh BUILD)
import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import process from "node:process";

export const binDir = process.env.LOOPR_BIN_DIR ?? "";
export const npmDir = process.env.LOOPR_NPM_DIR ?? "";
export const looprctlPath = path.join(binDir, "looprctl");
export const looprdPath = path.join(binDir, "looprd");

// The SDK's modules, resolved from LOOPR_NPM_DIR/node_modules. Throws (the
// test file fails, it is not skipped) when they are not installed.
export function loadSdk() {
  const modules = path.join(npmDir, "node_modules");
  const sdkManifest = path.join(modules, "@modelcontextprotocol", "sdk", "package.json");
  if (!npmDir || !fs.existsSync(sdkManifest)) {
    throw new Error(
      `the MCP SDK is not installed in ${modules || "(LOOPR_NPM_DIR unset)"}: ` +
        "run scripts/install-test-npm.sh BUILD_DIR (scripts/test.sh does)");
  }
  if (!fs.existsSync(looprctlPath) || !fs.existsSync(looprdPath)) {
    throw new Error(`looprd and looprctl are not built in ${binDir || "(LOOPR_BIN_DIR unset)"}`);
  }
  const require = createRequire(path.join(path.resolve(modules), "resolve-from-here.js"));
  return {
    ...require("@modelcontextprotocol/sdk/client/index.js"),
    ...require("@modelcontextprotocol/sdk/client/stdio.js"),
    ...require("@modelcontextprotocol/sdk/client/streamableHttp.js"),
    types: require("@modelcontextprotocol/sdk/types.js"),
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Waits for predicate() to be truthy, checking every 20 ms; fails with what
// after `seconds` (a bound against hanging, not a timing assertion).
export async function waitFor(predicate, what, seconds = 60) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(20);
  }
}

// One connection to looprd's control socket (docs/control-protocol.md):
// NDJSON requests matched by id, pushed events handed to onEvent.
export class ControlConnection {
  static async open(socketPath, onEvent = () => {}) {
    const c = new ControlConnection(socketPath, onEvent);
    await new Promise((resolve, reject) => {
      c.socket.once("connect", resolve);
      c.socket.once("error", reject);
    });
    await c.call("initialize", { client: "loopr-mcp-tests", version: 1 });
    return c;
  }

  constructor(socketPath, onEvent) {
    this.socket = net.connect(socketPath);
    this.pending = new Map();
    this.nextId = 1;
    this.buffer = "";
    this.onEvent = onEvent;
    this.socket.setEncoding("utf8");
    this.socket.on("data", (chunk) => {
      this.buffer += chunk;
      let nl;
      while ((nl = this.buffer.indexOf("\n")) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        if (!line.trim()) continue;
        const message = JSON.parse(line);
        if (message.event) {
          this.onEvent(message);
        } else if (this.pending.has(message.id)) {
          const { resolve, reject } = this.pending.get(message.id);
          this.pending.delete(message.id);
          if (message.error) reject(new Error(`${JSON.stringify(message.error)}`));
          else resolve(message.result);
        }
      }
    });
    this.socket.on("error", () => {});
    this.socket.on("close", () => {
      for (const { reject } of this.pending.values()) reject(new Error("looprd closed the connection"));
      this.pending.clear();
    });
  }

  call(method, params = {}) {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.write(JSON.stringify({ id, method, params }) + "\n");
    });
  }

  close() {
    this.socket.destroy();
  }
}

// looprd in the foreground in a temporary tree:
//   root/config/loopr.toml   worktree_roots = [root/work], the lanes, the
//                            heavy-lane commands, extraToml
//   root/state, root/run/looprd.sock, root/looprd.log
//   root/work/repo           a git repository with README.md, one commit
export class Looprd {
  static async start(options = {}) {
    const d = Looprd.prepare(options);
    await d.spawn();
    return d;
  }

  // The tree alone, no looprd yet (for a looprctl that starts its own).
  static prepare({ extraToml = "", catalogToml = "" } = {}) {
    const d = new Looprd();
    d.root = fs.mkdtempSync(path.join(os.tmpdir(), "loopr-mcp-"));
    d.configDir = path.join(d.root, "config");
    d.stateDir = path.join(d.root, "state");
    d.socket = path.join(d.root, "run", "looprd.sock");
    d.work = path.join(d.root, "work");
    d.repo = path.join(d.work, "repo");
    d.logPath = path.join(d.root, "looprd.log");
    for (const dir of [d.configDir, d.stateDir, path.dirname(d.socket), d.repo]) {
      fs.mkdirSync(dir, { recursive: true });
    }
    fs.writeFileSync(path.join(d.configDir, "loopr.toml"),
      `[sandbox]\nworktree_roots = ["${d.work}"]\n` +
      "[approval]\ntimeout_s = 120\n" +
      "[lanes.no-net]\nslots = 2\n[lanes.net]\nslots = 2\n[lanes.heavy]\nslots = 1\n" +
      extraToml);
    if (catalogToml) fs.writeFileSync(path.join(d.configDir, "catalog.toml"), catalogToml);
    const git = (...args) => {
      const r = spawnSync("git", ["-C", d.repo, ...args], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
    };
    git("init", "-q");
    fs.writeFileSync(path.join(d.repo, "README.md"), "# sample\nalpha\nbeta\n");
    git("add", "README.md");
    git("-c", "user.name=loopr tests", "-c", "user.email=tests@loopr.invalid",
      "commit", "-q", "-m", "first");
    return d;
  }

  async spawn() {
    const d = this;
    const log = fs.openSync(d.logPath, "a");
    const env = { ...process.env };
    delete env.NOTIFY_SOCKET;
    d.process = spawn(looprdPath, ["--foreground", "--socket", d.socket, "--config-dir",
      d.configDir, "--state-dir", d.stateDir, "--log-level", "debug"],
    { stdio: ["ignore", log, log], env });
    fs.closeSync(log);
    d.exited = null;
    d.process.on("exit", (code, signal) => { d.exited = { code, signal }; });
    await waitFor(async () => {
      if (d.exited) throw new Error(`looprd exited while starting (${JSON.stringify(d.exited)}):\n${d.log()}`);
      try {
        const c = await ControlConnection.open(d.socket);
        await c.call("ping");
        c.close();
        return true;
      } catch {
        return false;
      }
    }, "looprd to answer on its socket", 30);
  }

  log() {
    try { return fs.readFileSync(this.logPath, "utf8"); } catch { return ""; }
  }

  // looprctl with this looprd's socket, config and state; {status, stdout, stderr}.
  looprctl(...args) {
    return spawnSync(looprctlPath, ["--socket", this.socket, "--config-dir", this.configDir,
      "--state-dir", this.stateDir, ...args], { encoding: "utf8" });
  }

  // The arguments that start `looprctl mcp` against this looprd.
  mcpArgs(...extra) {
    return ["--socket", this.socket, "--config-dir", this.configDir, "--state-dir", this.stateDir,
      "mcp", ...extra];
  }

  // Every event looprd pushes from now on, collected in `events`.
  async watchEvents() {
    const watcher = { events: [] };
    watcher.connection = await ControlConnection.open(this.socket, (e) => watcher.events.push(e));
    await watcher.connection.call("events.subscribe", {});
    return watcher;
  }

  async control(method, params = {}) {
    const c = await ControlConnection.open(this.socket);
    try { return await c.call(method, params); } finally { c.close(); }
  }

  async stop() {
    if (!this.process) {
      // A looprd some looprctl started: shut it down over the socket.
      await this.control("daemon.shutdown").catch(() => {});
      await waitFor(async () => {
        try {
          (await ControlConnection.open(this.socket)).close();
          return false;
        } catch {
          return true;
        }
      }, "looprd to shut down", 30).catch(() => {});
    } else if (!this.exited) {
      this.process.kill("SIGTERM");
      await waitFor(() => this.exited, "looprd to stop", 30).catch(() => this.process.kill("SIGKILL"));
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

// An SDK Client connected to `looprctl mcp` over stdio. Every message the
// server sends after the handshake is also recorded in client.received, and
// every one the client sends in client.sent (for what the SDK does not
// surface: a response to a cancelled request).
export async function connectStdio(sdk, daemon, { args = [], capabilities = {}, cwd,
  setup = () => {} } = {}) {
  const transport = new sdk.StdioClientTransport({
    command: looprctlPath,
    args: daemon.mcpArgs(...args),
    cwd: cwd ?? daemon.repo,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => { if (stderr.length < 65536) stderr += chunk; });
  const client = new sdk.Client({ name: "loopr-mcp-tests", version: "1" }, { capabilities });
  client.received = [];
  client.sent = [];
  client.serverStderr = () => stderr;
  setup(client);
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    client.sent.push(message);
    return send(message, options);
  };
  await client.connect(transport);
  // A sanitizer build's report (ASan, LSan, UBSan) fails the test that closes it.
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    if (/Sanitizer|runtime error:/.test(stderr)) throw new Error(`looprctl mcp reported:\n${stderr}`);
  };
  const onmessage = transport.onmessage;
  transport.onmessage = (message, extra) => {
    client.received.push(message);
    onmessage?.(message, extra);
  };
  return client;
}

// The one text item of a tools/call result, parsed when it is JSON.
export function resultText(result) {
  const item = (result.content ?? []).find((c) => c.type === "text");
  return item ? item.text : "";
}
