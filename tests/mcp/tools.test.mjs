// `looprctl mcp` on stdio, driven by the official SDK client against a real
// looprd: initialize, tools/list from the catalog, each file tool's real
// effect on disk, failing calls as isError results with loopr's message and
// hint, read-before-edit, protocol errors, ping.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { connectStdio, Looprd, loadSdk, looprctlPath, resultText, waitFor } from "./harness.mjs";

const sdk = loadSdk();
const fileTools = ["read_file", "write_file", "edit_file", "file_delete", "list_directory", "glob", "grep"];
// Tools only loopr's own loops use (they end or plan a loop): never offered.
const loopEngineTools = ["complete_task", "create_plan", "create_spec", "create_phase"];

describe("looprctl mcp over stdio: tools", () => {
  let daemon;
  let client;
  let tools;

  before(async () => {
    daemon = await Looprd.start();
    client = await connectStdio(sdk, daemon, { args: ["--worktree", daemon.repo] });
    tools = (await client.listTools()).tools;
  });

  after(async () => {
    await client?.close();
    await daemon?.stop();
  });

  it("initializes with the tools capability, loopr's server info and a version the SDK knows", () => {
    const capabilities = client.getServerCapabilities();
    assert.ok(capabilities.tools, `no tools capability: ${JSON.stringify(capabilities)}`);
    assert.ok(capabilities.logging, `no logging capability: ${JSON.stringify(capabilities)}`);
    const info = client.getServerVersion();
    assert.match(info.name, /loopr/);
    assert.ok(info.version);
  });

  it("lists every enabled catalog tool but the loop engine's, with the catalog's input schemas", async () => {
    const catalog = (await daemon.control("tool.list")).tools.filter((t) => t.enabled);
    const names = tools.map((t) => t.name);
    for (const name of fileTools) assert.ok(names.includes(name), `${name} missing from ${names}`);
    for (const name of loopEngineTools) assert.ok(!names.includes(name), `${name} offered`);
    // tool.list marks the loop engine's tools callable: false.
    const expected = catalog.filter((t) => t.callable !== false && !loopEngineTools.includes(t.name))
      .map((t) => t.name).sort();
    assert.deepEqual([...names].sort(), expected);
    for (const tool of tools) {
      const entry = catalog.find((t) => t.name === tool.name);
      assert.deepEqual(tool.inputSchema, entry.input_schema, `${tool.name}'s inputSchema`);
      assert.ok(tool.description, `${tool.name} has no description`);
      // outputSchema: the catalog's output_schema, for the tools that have one.
      if (entry.output_schema) {
        assert.deepEqual(tool.outputSchema, entry.output_schema, `${tool.name}'s outputSchema`);
      } else {
        assert.equal(tool.outputSchema, undefined, `${tool.name} has an outputSchema`);
      }
    }
    for (const name of fileTools) {
      assert.ok(tools.find((t) => t.name === name).outputSchema, `${name} has no outputSchema`);
    }
  });

  it("annotates read-only and destructive tools", () => {
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ["read_file", "list_directory", "glob", "grep"]) {
      assert.equal(byName[name].annotations?.readOnlyHint, true, `${name} readOnlyHint`);
    }
    for (const name of ["write_file", "edit_file", "file_delete"]) {
      assert.equal(byName[name].annotations?.readOnlyHint, false, `${name} readOnlyHint`);
    }
    assert.equal(byName.file_delete.annotations?.destructiveHint, true);
    assert.equal(byName.read_file.annotations?.openWorldHint, false);
    assert.equal(byName.web_fetch.annotations?.openWorldHint, true);
  });

  // client.callTool also checks structuredContent against each outputSchema.
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    assert.equal(result.isError, false, `${name} failed: ${resultText(result)}`);
    assert.deepEqual(JSON.parse(resultText(result)), result.structuredContent,
      `${name}: the text content is the structured content as JSON`);
    return result.structuredContent;
  };

  it("read_file returns the file's numbered lines", async () => {
    const out = await call("read_file", { path: "README.md" });
    assert.equal(out.content, "     1|# sample\n     2|alpha\n     3|beta\n");
    assert.equal(out.total_lines, 3);
  });

  it("write_file creates the file on disk", async () => {
    const out = await call("write_file", { path: "src/new.txt", content: "one\ntwo\n" });
    assert.equal(out.created, true);
    assert.equal(fs.readFileSync(path.join(daemon.repo, "src/new.txt"), "utf8"), "one\ntwo\n");
  });

  it("edit_file changes the file on disk after a read", async () => {
    await call("read_file", { path: "README.md" });
    const out = await call("edit_file", { path: "README.md", old_string: "beta", new_string: "gamma" });
    assert.equal(out.replacements, 1);
    assert.equal(fs.readFileSync(path.join(daemon.repo, "README.md"), "utf8"), "# sample\nalpha\ngamma\n");
  });

  it("list_directory lists the worktree", async () => {
    const out = await call("list_directory", { path: "." });
    const entries = out.entries.map((e) => e.path);
    assert.ok(entries.includes("README.md"), JSON.stringify(entries));
    assert.ok(entries.includes("src"), JSON.stringify(entries));
  });

  it("glob finds files by pattern", async () => {
    const out = await call("glob", { pattern: "**/*.txt" });
    assert.deepEqual(out.matches, ["src/new.txt"]);
  });

  it("grep finds the matching lines", async () => {
    const out = await call("grep", { pattern: "gam+a" });
    assert.equal(out.content, "README.md:3:gamma\n");
    assert.equal(out.match_count, 1);
  });

  it("file_delete removes the file from disk", async () => {
    fs.writeFileSync(path.join(daemon.repo, "doomed.txt"), "bye\n");
    const out = await call("file_delete", { path: "doomed.txt" });
    assert.equal(out.entries_removed, 1);
    assert.equal(fs.existsSync(path.join(daemon.repo, "doomed.txt")), false);
  });

  it("a failing call is an isError result with loopr's code, message and hint", async () => {
    const result = await client.callTool({ name: "read_file", arguments: { path: "nope.txt" } });
    assert.equal(result.isError, true);
    const text = resultText(result);
    assert.match(text, /not_found/);
    assert.match(text, /no such file or directory: 'nope\.txt'/);
    assert.match(text, /list_directory or glob/); // the hint
  });

  it("editing a file that was not read is refused (read-before-edit) and the file is unchanged", async () => {
    fs.writeFileSync(path.join(daemon.repo, "unread.txt"), "original\n");
    const result = await client.callTool({ name: "edit_file",
      arguments: { path: "unread.txt", old_string: "original", new_string: "changed" } });
    assert.equal(result.isError, true, resultText(result));
    assert.match(resultText(result), /read/i);
    assert.equal(fs.readFileSync(path.join(daemon.repo, "unread.txt"), "utf8"), "original\n");
  });

  it("arguments that do not match the schema are an isError result (the model can correct them)", async () => {
    const result = await client.callTool({ name: "read_file", arguments: { limit: 3 } });
    assert.equal(result.isError, true);
    assert.match(resultText(result), /path/);
  });

  it("an unknown tool is a JSON-RPC error -32602 (spec 2025-11-25)", async () => {
    await assert.rejects(client.callTool({ name: "no_such_tool", arguments: {} }),
      (err) => err.code === sdk.types.ErrorCode.InvalidParams && /no_such_tool/.test(err.message));
  });

  it("an unknown method is a JSON-RPC error -32601", async () => {
    await assert.rejects(
      client.request({ method: "resources/list", params: {} }, sdk.types.ListResourcesResultSchema),
      (err) => err.code === sdk.types.ErrorCode.MethodNotFound);
  });

  it("tools/call without a tool name is a JSON-RPC error -32602", async () => {
    await assert.rejects(
      client.request({ method: "tools/call", params: { arguments: {} } }, sdk.types.CallToolResultSchema),
      (err) => err.code === sdk.types.ErrorCode.InvalidParams);
  });

  it("runs concurrent calls and answers each under its own request id", async () => {
    const paths = ["README.md", "src/new.txt", "README.md", "src/new.txt"];
    const results = await Promise.all([
      ...paths.map((p) => client.callTool({ name: "read_file", arguments: { path: p } })),
      client.callTool({ name: "grep", arguments: { pattern: "alpha" } }),
    ]);
    paths.forEach((p, i) => {
      assert.equal(results[i].isError, false, resultText(results[i]));
      assert.equal(results[i].structuredContent.path, p);
    });
    assert.match(results[4].structuredContent.content, /README\.md:2:alpha/);
  });

  it("answers ping with an empty result", async () => {
    assert.deepEqual(await client.ping(), {});
  });

  it("--tools offers only the tools named", async () => {
    const narrow = await connectStdio(sdk, daemon, { args: ["--worktree", daemon.repo, "--tools", "read_file,grep"] });
    try {
      const names = (await narrow.listTools()).tools.map((t) => t.name).sort();
      assert.deepEqual(names, ["grep", "read_file"]);
      const result = await narrow.callTool({ name: "write_file", arguments: { path: "x", content: "" } }).catch((e) => e);
      assert.ok(result instanceof Error || result.isError, "a tool left out by --tools ran");
      assert.equal(fs.existsSync(path.join(daemon.repo, "x")), false);
    } finally {
      await narrow.close();
    }
  });

  it("without --worktree and roots, the current directory is the worktree", async () => {
    const here = await connectStdio(sdk, daemon, { cwd: path.join(daemon.repo, "src") });
    try {
      const result = await here.callTool({ name: "read_file", arguments: { path: "new.txt" } });
      assert.equal(result.isError, false, resultText(result));
      assert.match(result.structuredContent.content, /one/);
    } finally {
      await here.close();
    }
  });
});

describe("looprctl mcp over stdio: raw lines", () => {
  let daemon;

  before(async () => {
    daemon = await Looprd.start();
  });

  after(async () => {
    await daemon?.stop();
  });

  it("answers a line that is not JSON with -32700, prints only JSON-RPC on stdout and goes on", async () => {
    const child = spawn(looprctlPath, daemon.mcpArgs("--worktree", daemon.repo), { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => { out += chunk; });
    const lines = () => out.split("\n").filter((l) => l.trim());
    try {
      child.stdin.write("{this is not json\n");
      await waitFor(() => lines().length >= 1, "an answer to the bad line");
      const parseError = JSON.parse(lines()[0]);
      assert.equal(parseError.error.code, -32700);
      assert.equal(parseError.id, null);
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {
        protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) + "\n");
      await waitFor(() => lines().length >= 2, "the initialize answer");
      const init = JSON.parse(lines()[1]);
      assert.equal(init.id, 1);
      assert.equal(init.result.protocolVersion, "2025-06-18");
      for (const line of lines()) assert.equal(JSON.parse(line).jsonrpc, "2.0", line);
    } finally {
      child.stdin.end();
      await waitFor(() => child.exitCode !== null || child.signalCode !== null, "looprctl mcp to exit at EOF", 20)
        .catch(() => child.kill("SIGKILL"));
    }
    assert.equal(child.exitCode, 0, "looprctl mcp did not exit 0 at the end of its input");
  });
});

describe("looprctl mcp without a looprd", () => {
  let daemon;

  before(() => {
    daemon = Looprd.prepare();
  });

  after(async () => {
    await daemon?.stop();
  });

  it("starts looprd, as looprctl daemon start does, and serves through it", async () => {
    const client = await connectStdio(sdk, daemon, { args: ["--worktree", daemon.repo] });
    try {
      const result = await client.callTool({ name: "read_file", arguments: { path: "README.md" } });
      assert.equal(result.isError, false, resultText(result));
      assert.match(result.structuredContent.content, /# sample/);
      const pong = await daemon.control("ping");
      assert.equal(pong.pong, true);
    } finally {
      await client.close();
    }
    // looprd outlives the MCP session, as a daemon does.
    assert.equal((await daemon.control("ping")).pong, true);
  });
});
