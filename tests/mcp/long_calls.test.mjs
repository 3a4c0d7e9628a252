// `looprctl mcp` and long heavy-lane commands: what the command prints
// streams to the client as notifications/progress when it sent a progress
// token, and notifications/cancelled cancels the call in looprd (tool.cancel,
// or closing the call's connection when looprd has not named the call) and
// stops the command.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { connectStdio, Looprd, loadSdk, resultText, waitFor } from "./harness.mjs";

const sdk = loadSdk();

// build prints five lines, a pause between each; test prints "started" and
// then appends a line to `ticks` every 0.1 s until it is stopped; validate
// does the same to `quiet-ticks` and prints nothing, so looprd never names
// its call to the MCP server before it is cancelled.
const commands =
  "[commands]\n" +
  "build = \"for i in 1 2 3 4 5; do echo progress line $i; sleep 0.3; done\"\n" +
  "test = \"echo started; while :; do date +%s%N >> ticks; sleep 0.1; done\"\n" +
  "validate = \"while :; do date +%s%N >> quiet-ticks; sleep 0.1; done\"\n";

describe("looprctl mcp over stdio: long commands", () => {
  let daemon;
  let client;

  before(async () => {
    daemon = await Looprd.start({ extraToml: commands });
    client = await connectStdio(sdk, daemon, { args: ["--worktree", daemon.repo] });
  });

  after(async () => {
    await client?.close();
    await daemon?.stop();
  });

  it("streams a heavy-lane command's output as notifications/progress", async () => {
    const progress = [];
    const result = await client.callTool({ name: "build", arguments: {} }, undefined,
      { onprogress: (p) => progress.push(p) });
    assert.equal(result.isError, false, resultText(result));
    assert.equal(result.structuredContent.exit_code, 0);
    assert.match(result.structuredContent.stdout, /progress line 5/);
    assert.ok(progress.length >= 2, `progress notifications: ${JSON.stringify(progress)}`);
    for (let i = 1; i < progress.length; ++i) {
      assert.ok(progress[i].progress > progress[i - 1].progress,
        `progress not increasing: ${JSON.stringify(progress)}`);
    }
    const printed = progress.map((p) => p.message ?? "").join("");
    assert.match(printed, /progress line 1/);
    // The token the SDK sent is the one every notification carried.
    const request = client.sent.findLast((m) => m.method === "tools/call" && m.params?.name === "build");
    const token = request.params._meta.progressToken;
    const notifications = client.received.filter((m) => m.method === "notifications/progress");
    assert.ok(notifications.length >= 2);
    for (const n of notifications) assert.equal(n.params.progressToken, token);
  });

  it("sends no progress without a progress token", async () => {
    const before = client.received.filter((m) => m.method === "notifications/progress").length;
    const result = await client.callTool({ name: "build", arguments: {} });
    assert.equal(result.isError, false, resultText(result));
    assert.match(result.structuredContent.stdout, /progress line 5/);
    assert.equal(client.received.filter((m) => m.method === "notifications/progress").length, before);
  });

  // Calls `tool` (a command that appends to `ticksFile` until stopped),
  // cancels it through the SDK once it ticks, and checks that looprd ended
  // the call `cancelled`, that the command stopped, and that the request got
  // no response.
  async function cancelWhileTicking(tool, ticksFile) {
    const watcher = await daemon.watchEvents();
    const ticks = path.join(daemon.repo, ticksFile);
    try {
      const controller = new AbortController();
      const pending = client.callTool({ name: tool, arguments: {} }, undefined,
        { signal: controller.signal, onprogress: () => {} });
      pending.catch(() => {});
      const started = await waitFor(() => watcher.events.find(
        (e) => e.event === "tool.started" && e.data.tool === tool), `the ${tool} command to start`);
      await waitFor(() => fs.existsSync(ticks) && fs.statSync(ticks).size > 0, "the command to tick");
      controller.abort("the test cancels it");
      await assert.rejects(pending);

      const request = client.sent.findLast((m) => m.method === "tools/call" && m.params?.name === tool);
      const cancel = client.sent.findLast((m) => m.method === "notifications/cancelled");
      assert.ok(cancel, "the SDK sent no notifications/cancelled");
      assert.equal(cancel.params.requestId, request.id);

      const finished = await waitFor(() => watcher.events.find(
        (e) => e.event === "tool.finished" && e.data.call_id === started.data.call_id),
      "looprd to finish the cancelled call");
      assert.equal(finished.data.status, "cancelled", JSON.stringify(finished.data));

      // The command is gone: across a later call of the same single-slot lane
      // (1.5 s of build), the ticks file does not grow.
      const size = fs.statSync(ticks).size;
      const later = await client.callTool({ name: "build", arguments: {} });
      assert.equal(later.isError, false, resultText(later));
      assert.equal(fs.statSync(ticks).size, size, "the cancelled command kept running");

      // And the server never answered the cancelled request.
      assert.equal(client.received.filter((m) => m.id === request.id).length, 0,
        "a response was sent for the cancelled request");
    } finally {
      watcher.connection.close();
    }
  }

  it("a cancelled call is cancelled in looprd, its command stops and it gets no response", async () => {
    await cancelWhileTicking("test", "ticks");
  });

  it("a cancelled call that printed nothing is cancelled in looprd too, and its command stops", async () => {
    await cancelWhileTicking("validate", "quiet-ticks");
  });
});
