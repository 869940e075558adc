// The client against a real agentmem server: AGENTMEM_URL and AGENTMEM_TOKEN (an admin token whose
// projects include PROJECT) name it. tests/test_typescript_client.py starts one and runs `npm test`.
// Written in TypeScript so that the compiler checks every field it reads against src/schema.ts.

import assert from "node:assert/strict";
import { test } from "node:test";

import { AgentMem, AgentMemError, type MemoryVersion } from "../src/index.js";

const url = process.env.AGENTMEM_URL;
const token = process.env.AGENTMEM_TOKEN;
if (!url || !token) throw new Error("set AGENTMEM_URL and AGENTMEM_TOKEN to a running agentmem server");
const PROJECT = process.env.AGENTMEM_PROJECT ?? "ts";

const mem = new AgentMem(url, { token });

test("health answers", async () => {
  assert.equal(await mem.health(), true);
  assert.equal(await new AgentMem("http://127.0.0.1:9", { timeoutMs: 2000 }).health(), false);
});

test("remember, supersede by key, recall the current value, and read the history", async () => {
  const first = await mem.remember({ content: "The API listens on port 3000", project: PROJECT, key: "api.port" });
  assert.equal(first.outcome, "created");
  const again = await mem.remember({ content: "the API listens on port 3000", project: PROJECT, key: "api.port" });
  assert.equal(again.outcome, "reinforced");
  const second = await mem.remember({ content: "We're on port 4000 now", project: PROJECT, key: "api.port" });
  assert.equal(second.outcome, "superseded");
  assert.equal(second.superseded_id, first.memory.id);

  const { hits } = await mem.recall({ query: "which port does the API listen on?", project: PROJECT, k: 5 });
  const top = hits[0];
  assert.ok(top);
  assert.equal(top.memory.content, "We're on port 4000 now");
  assert.equal(top.has_history, true);
  assert.ok(!hits.some((h) => h.memory.id === first.memory.id), "a superseded version is never recalled");

  const history: MemoryVersion[] = await mem.history(second.memory.id);
  assert.deepEqual(
    history.map((v) => [v.content, v.status, v.is_latest]),
    [
      ["The API listens on port 3000", "superseded", false],
      ["We're on port 4000 now", "active", true],
    ],
  );
  assert.equal(history[0]?.superseded_by, second.memory.id);
  assert.equal((await mem.get(first.memory.id)).status, "superseded");
});

test("context fits the current memories into a budget", async () => {
  await mem.remember({ content: "Deploys go out on Tuesdays after the standup", project: PROJECT, kind: "procedure" });
  const ctx = await mem.context({ query: "when do deploys go out?", project: PROJECT, token_budget: 200 });
  assert.match(ctx.text, /Tuesdays/);
  assert.ok(ctx.tokens <= 200 && ctx.memory_ids.length >= 1);
});

test("observe a session, then end it into an episode", async () => {
  const reply = await mem.observe([
    { content: "ran the migration script", project: PROJECT, session: "s-1", tool: "bash" },
    { content: "the migration finished in 4 minutes", project: PROJECT, session: "s-1" },
  ]);
  assert.equal(reply.ids.length, 2);
  const episode = await mem.endSession("s-1", { project: PROJECT });
  assert.equal(episode.outcome, "created");
  assert.equal(episode.memory?.tier, "episodic");
});

test("delete erases a lineage and leaves it out of recall", async () => {
  const doomed = await mem.remember({ content: "The staging password is hunter2", project: PROJECT });
  const report = await mem.delete({ reason: "a secret was stored", lineages: [doomed.memory.lineage_id] });
  assert.equal(report.versions, 1);
  assert.equal(report.dry_run, false);
  const { hits } = await mem.recall({ query: "staging password", project: PROJECT });
  assert.ok(!hits.some((h) => h.memory.lineage_id === doomed.memory.lineage_id));
});

test("errors carry the status and the service's code", async () => {
  await assert.rejects(mem.get(987654321), (e: unknown) => e instanceof AgentMemError && e.status === 404);
  await assert.rejects(
    mem.remember({ content: "", project: PROJECT }),
    (e: unknown) => e instanceof AgentMemError && e.status === 400 && e.code === "invalid_input",
  );
  const stranger = new AgentMem(url, { token: "not-a-token-of-this-server" });
  await assert.rejects(stranger.recall({ query: "anything" }), (e: unknown) => e instanceof AgentMemError && e.status === 401);
});
