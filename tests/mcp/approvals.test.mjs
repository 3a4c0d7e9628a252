// `looprctl mcp` and calls under an `ask` policy ([approval.tools] in
// loopr.toml): the server tells the client which approval waits
// (notifications/message, level warning, naming `looprctl approve ID`), the
// call runs once a person approves and is an isError result once denied;
// logging/setLevel filters those messages; with --elicit-approvals and a
// client that can answer elicitation/create, the client's answer decides.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { connectStdio, Looprd, loadSdk, resultText, waitFor } from "./harness.mjs";

const sdk = loadSdk();
const askToml = "[approval.tools]\nrun_command_isolated = \"ask\"\n";

describe("looprctl mcp over stdio: approvals", () => {
  let daemon;
  let client;
  let watcher;

  before(async () => {
    daemon = await Looprd.start({ extraToml: askToml });
    watcher = await daemon.watchEvents();
    client = await connectStdio(sdk, daemon, { args: ["--worktree", daemon.repo] });
  });

  after(async () => {
    watcher?.connection.close();
    await client?.close();
    await daemon?.stop();
  });

  // Starts a call that has to be approved and waits for looprd's approval
  // request; returns {pending, id}.
  const askedCall = async (c, file) => {
    const seen = watcher.events.length;
    const pending = c.callTool({ name: "run_command_isolated",
      arguments: { command: `echo ran > ${file}; echo done` } });
    pending.catch(() => {});
    const requested = await waitFor(() => watcher.events.slice(seen).find(
      (e) => e.event === "approval.requested" && e.data.tool === "run_command_isolated"),
    "looprd to ask for approval");
    return { pending, id: requested.data.id };
  };

  const approvalMessages = (c, id) => c.received.filter((m) =>
    m.method === "notifications/message" && JSON.stringify(m.params.data).includes(id));

  it("says which approval waits and runs the call once looprctl approve lets it", async () => {
    const { pending, id } = await askedCall(client, "approved.txt");
    const [message] = await waitFor(() => {
      const found = approvalMessages(client, id);
      return found.length > 0 && found;
    }, "a notifications/message naming the approval");
    assert.equal(message.params.level, "warning");
    assert.match(JSON.stringify(message.params.data), new RegExp(`looprctl approve ${id}`));
    assert.equal(fs.existsSync(path.join(daemon.repo, "approved.txt")), false, "ran before approval");

    const approve = daemon.looprctl("approve", id);
    assert.equal(approve.status, 0, approve.stderr);
    const result = await pending;
    assert.equal(result.isError, false, resultText(result));
    assert.equal(result.structuredContent.exit_code, 0);
    assert.equal(fs.readFileSync(path.join(daemon.repo, "approved.txt"), "utf8"), "ran\n");
  });

  it("a denied call is an isError result saying it was denied, and does not run", async () => {
    const { pending, id } = await askedCall(client, "denied.txt");
    const deny = daemon.looprctl("deny", id, "--reason", "not in this test");
    assert.equal(deny.status, 0, deny.stderr);
    const result = await pending;
    assert.equal(result.isError, true);
    assert.match(resultText(result), /denied/i);
    assert.equal(fs.existsSync(path.join(daemon.repo, "denied.txt")), false);
  });

  it("logging/setLevel answers {} and messages below the level are not sent", async () => {
    assert.deepEqual(await client.setLoggingLevel("error"), {});
    try {
      const { pending, id } = await askedCall(client, "quiet.txt");
      assert.equal(daemon.looprctl("approve", id).status, 0);
      const result = await pending;
      assert.equal(result.isError, false, resultText(result));
      assert.deepEqual(approvalMessages(client, id), [], "a warning was sent at level error");
    } finally {
      assert.deepEqual(await client.setLoggingLevel("debug"), {});
    }
  });

  it("logging/setLevel with a level that does not exist is a JSON-RPC error -32602", async () => {
    await assert.rejects(
      client.request({ method: "logging/setLevel", params: { level: "loud" } }, sdk.types.EmptyResultSchema),
      (err) => err.code === sdk.types.ErrorCode.InvalidParams);
  });

  describe("with --elicit-approvals", () => {
    let asking;
    let answer;
    const elicitations = [];

    before(async () => {
      asking = await connectStdio(sdk, daemon, {
        args: ["--worktree", daemon.repo, "--elicit-approvals"],
        capabilities: { elicitation: { form: {} } },
        setup: (c) => c.setRequestHandler(sdk.types.ElicitRequestSchema, async (request) => {
          elicitations.push(request.params);
          return answer;
        }),
      });
    });

    after(async () => {
      await asking?.close();
    });

    it("asks the client with a form holding a boolean approve, and runs the call when it approves", async () => {
      answer = { action: "accept", content: { approve: true } };
      const result = await asking.callTool({ name: "run_command_isolated",
        arguments: { command: "echo ran > elicited.txt" } });
      assert.equal(result.isError, false, resultText(result));
      assert.equal(elicitations.length, 1);
      const schema = elicitations[0].requestedSchema;
      assert.equal(schema.type, "object");
      assert.equal(schema.properties.approve.type, "boolean");
      assert.match(elicitations[0].message, /run_command_isolated/);
      assert.equal(fs.readFileSync(path.join(daemon.repo, "elicited.txt"), "utf8"), "ran\n");
    });

    it("denies the call when the client answers approve: false", async () => {
      answer = { action: "accept", content: { approve: false } };
      const result = await asking.callTool({ name: "run_command_isolated",
        arguments: { command: "echo ran > refused.txt" } });
      assert.equal(result.isError, true);
      assert.match(resultText(result), /denied/i);
      assert.equal(fs.existsSync(path.join(daemon.repo, "refused.txt")), false);
    });

    it("denies the call when the client declines the form", async () => {
      answer = { action: "decline" };
      const result = await asking.callTool({ name: "run_command_isolated",
        arguments: { command: "echo ran > declined.txt" } });
      assert.equal(result.isError, true);
      assert.match(resultText(result), /denied/i);
      assert.equal(fs.existsSync(path.join(daemon.repo, "declined.txt")), false);
    });
  });

  it("with --elicit-approvals and a client without elicitation, falls back to looprctl approve", async () => {
    const plain = await connectStdio(sdk, daemon, { args: ["--worktree", daemon.repo, "--elicit-approvals"] });
    try {
      const { pending, id } = await askedCall(plain, "fallback.txt");
      await waitFor(() => approvalMessages(plain, id).length > 0, "a notifications/message naming the approval");
      assert.equal(daemon.looprctl("approve", id).status, 0);
      const result = await pending;
      assert.equal(result.isError, false, resultText(result));
      assert.equal(fs.readFileSync(path.join(daemon.repo, "fallback.txt"), "utf8"), "ran\n");
    } finally {
      await plain.close();
    }
  });
});
