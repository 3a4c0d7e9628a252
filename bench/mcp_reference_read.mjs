// The MCP reference filesystem server, timed for bench/daemon_load_bench.cpp
// (DESIGN.md §9: looprd's read_file is to be faster than it, side by side in
// one run). Starts @modelcontextprotocol/server-filesystem over stdio with the
// official @modelcontextprotocol/sdk client, one persistent session, and calls
// its read tool (read_text_file, or read_file on servers that predate it) on
// FILE: WARMUP calls first, then CALLS timed ones, each timed with
// process.hrtime.bigint() around client.callTool alone.
//
// With --looprctl PATH --socket SOCKET it drives `looprctl --socket SOCKET mcp
// --worktree ROOT` instead (loopr's own MCP server, a client of the looprd on
// SOCKET) and calls its read_file on the same FILE: the same client, the same
// calls, so the two rows compare the servers alone.
//
// Prints one JSON line on stdout:
//   {"server": "<name>@<version>", "tool": "...", "samples_ms": [...]}
// or {"error": "..."} and exit status 1. The packages come from NODE_MODULES
// (scripts/install-test-npm.sh BUILD_DIR puts them in BUILD_DIR/npm/node_modules),
// never from the source tree.
//
// usage: node bench/mcp_reference_read.mjs --node-modules DIR --root DIR
//             --file PATH [--calls N] [--warmup N] [--looprctl PATH --socket SOCKET]
import { createRequire } from "node:module";
import path from "node:path";
import process from "node:process";

function parseArgs(argv) {
  const opts = { calls: 2000, warmup: 200 };
  for (let i = 2; i + 1 < argv.length; i += 2) {
    const value = argv[i + 1];
    switch (argv[i]) {
      case "--node-modules": opts.nodeModules = value; break;
      case "--root": opts.root = value; break;
      case "--file": opts.file = value; break;
      case "--calls": opts.calls = Number.parseInt(value, 10); break;
      case "--warmup": opts.warmup = Number.parseInt(value, 10); break;
      case "--looprctl": opts.looprctl = value; break;
      case "--socket": opts.socket = value; break;
      default: throw new Error(`unknown flag ${argv[i]}`);
    }
  }
  for (const key of ["nodeModules", "root", "file"]) {
    if (!opts[key]) throw new Error(`--${key.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())} is required`);
  }
  if (Boolean(opts.looprctl) !== Boolean(opts.socket)) {
    throw new Error("--looprctl and --socket go together");
  }
  return opts;
}

async function main() {
  const opts = parseArgs(process.argv);
  // Resolved through the packages' export maps from NODE_MODULES, not from
  // this file's folder (ESM imports do not read NODE_PATH).
  const require = createRequire(path.join(path.resolve(opts.nodeModules), "resolve-from-here.js"));
  const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
  let server;
  let transport;
  if (opts.looprctl) {
    transport = new StdioClientTransport({
      command: opts.looprctl,
      args: ["--socket", opts.socket, "mcp", "--worktree", opts.root],
      stderr: "pipe",
    });
  } else {
    const serverPackagePath = require.resolve("@modelcontextprotocol/server-filesystem/package.json");
    const serverPackage = require(serverPackagePath);
    const serverBin = typeof serverPackage.bin === "string"
        ? serverPackage.bin : Object.values(serverPackage.bin)[0];
    const serverEntry = path.join(path.dirname(serverPackagePath), serverBin);
    server = `${serverPackage.name}@${serverPackage.version}`;
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [serverEntry, opts.root],
      stderr: "pipe",
    });
  }
  let serverStderr = "";
  transport.stderr?.on("data", (chunk) => {
    if (serverStderr.length < 4096) serverStderr += chunk;
  });
  const client = new Client({ name: "loopr-daemon-load-bench", version: "1" });
  try {
    await client.connect(transport);
    if (!server) {
      const info = client.getServerVersion();
      server = `${info?.name ?? "?"}@${info?.version ?? "?"}`;
    }
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    const tool = ["read_text_file", "read_file"].find((n) => names.includes(n));
    if (!tool) throw new Error(`no read tool among ${names.join(", ")}`);
    const request = { name: tool, arguments: { path: opts.file } };

    const call = async () => {
      const result = await client.callTool(request);
      if (result.isError) throw new Error(`${tool}: ${JSON.stringify(result.content)}`);
      return result;
    };
    for (let i = 0; i < opts.warmup; ++i) await call();
    const samples = new Array(opts.calls);
    for (let i = 0; i < opts.calls; ++i) {
      const start = process.hrtime.bigint();
      await call();
      samples[i] = Number(process.hrtime.bigint() - start) / 1e6;
    }
    const first = await call();
    const text = first.content?.[0]?.text ?? "";
    process.stdout.write(JSON.stringify({
      server,
      tool,
      bytes: text.length,
      samples_ms: samples,
    }) + "\n");
  } catch (err) {
    process.stdout.write(JSON.stringify({
      error: `${err.message}${serverStderr ? ` (server stderr: ${serverStderr.trim()})` : ""}`,
    }) + "\n");
    process.exitCode = 1;
  } finally {
    await client.close().catch(() => {});
  }
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ error: err.message }) + "\n");
  process.exitCode = 1;
});
