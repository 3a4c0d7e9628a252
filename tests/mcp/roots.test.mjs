// `looprctl mcp` without --worktree takes the worktree from the client's
// roots (roots/list, the first file:// root); a root outside looprd's
// [sandbox] worktree_roots makes tool calls fail, saying so.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, it } from "node:test";

import { connectStdio, Looprd, loadSdk, resultText } from "./harness.mjs";

const sdk = loadSdk();

describe("looprctl mcp over stdio: roots", () => {
  let daemon;

  before(async () => {
    daemon = await Looprd.start();
  });

  after(async () => {
    await daemon?.stop();
  });

  // A client that offers `roots` and answers roots/list with them; started
  // in the tree's top folder, outside the worktree roots, so that the
  // current directory cannot be what makes a call work.
  const withRoots = async (roots) => {
    const asked = [];
    const client = await connectStdio(sdk, daemon, {
      cwd: daemon.root,
      capabilities: { roots: { listChanged: true } },
      setup: (c) => c.setRequestHandler(sdk.types.ListRootsRequestSchema, async () => {
        asked.push(true);
        return { roots };
      }),
    });
    client.asked = asked;
    return client;
  };

  it("uses the client's first file:// root as the worktree", async () => {
    const client = await withRoots([{ uri: pathToFileURL(daemon.repo).href, name: "repo" }]);
    try {
      const result = await client.callTool({ name: "read_file", arguments: { path: "README.md" } });
      assert.equal(result.isError, false, resultText(result));
      assert.match(result.structuredContent.content, /# sample/);
      assert.ok(client.asked.length >= 1, "the server never sent roots/list");
      const written = await client.callTool({ name: "write_file", arguments: { path: "from-root.txt", content: "r\n" } });
      assert.equal(written.isError, false, resultText(written));
      assert.equal(fs.readFileSync(path.join(daemon.repo, "from-root.txt"), "utf8"), "r\n");
    } finally {
      await client.close();
    }
  });

  it("asks for the roots again after notifications/roots/list_changed", async () => {
    const other = path.join(daemon.work, "other");
    fs.mkdirSync(other, { recursive: true });
    fs.writeFileSync(path.join(other, "only-here.txt"), "other\n");
    let roots = [{ uri: pathToFileURL(daemon.repo).href, name: "repo" }];
    const client = await connectStdio(sdk, daemon, {
      cwd: daemon.root,
      capabilities: { roots: { listChanged: true } },
      setup: (c) => c.setRequestHandler(sdk.types.ListRootsRequestSchema, async () => ({ roots })),
    });
    try {
      const first = await client.callTool({ name: "read_file", arguments: { path: "README.md" } });
      assert.equal(first.isError, false, resultText(first));
      roots = [{ uri: pathToFileURL(other).href, name: "other" }];
      await client.sendRootsListChanged();
      const second = await client.callTool({ name: "read_file", arguments: { path: "only-here.txt" } });
      assert.equal(second.isError, false, resultText(second));
      assert.equal(second.structuredContent.content, "     1|other\n");
    } finally {
      await client.close();
    }
  });

  it("a root outside worktree_roots makes tool calls fail with isError saying so", async () => {
    const elsewhere = path.join(daemon.root, "elsewhere");
    fs.mkdirSync(elsewhere, { recursive: true });
    fs.writeFileSync(path.join(elsewhere, "secret.txt"), "s\n");
    const client = await withRoots([{ uri: pathToFileURL(elsewhere).href, name: "elsewhere" }]);
    try {
      const result = await client.callTool({ name: "read_file", arguments: { path: "secret.txt" } });
      assert.equal(result.isError, true, resultText(result));
      assert.match(resultText(result), /worktree_roots/);
      assert.doesNotMatch(resultText(result), /"content":\s*"\s*1\|s/);
    } finally {
      await client.close();
    }
  });
});
