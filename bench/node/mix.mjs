// One round of the mix suite with ai-sdk-provider-claude-code: the same five steps as bench/mix/ours.py, written
// the way the provider documents them. Every generateText runs one CLI process (the provider calls the Agent
// SDK's query()), so each conversation is a model instance: a `claudeCode()` instance resumes the session it last
// ran (it keeps the captured session id), so a new conversation takes a new instance. (a) the tool agent
// (createAiSdkMcpServer), (b) a text agent without tools, (c) the follow-up as docs/sessions.md shows it: a model
// with `resume: <the session id of (b)>`, and the new prompt, (d) a new conversation: a new instance of the tool
// agent's model, (e) a brand-new provider (createClaudeCode()) and its model. Same protocol as ours.py (times from
// process.hrtime, CLOCK_MONOTONIC, as the parent's clock).
import { generateText, tool } from 'ai';
import { claudeCode, createAiSdkMcpServer, createClaudeCode } from 'ai-sdk-provider-claude-code';
import { z } from 'zod';

const ready = process.hrtime.bigint();
const prompts = JSON.parse(process.env.BENCH_MIX_PROMPTS);
const pause = Number(process.env.BENCH_MIX_PAUSE) * 1000;
const toolSystem = process.env.BENCH_TOOL_SYSTEM;
const textSystem = process.env.BENCH_TEXT_SYSTEM;
const common = {
  pathToClaudeCodeExecutable: process.env.BENCH_CLI,
  env: { ...process.env, ...JSON.parse(process.env.BENCH_CLI_ENV) },
  tools: [],
  permissionMode: 'dontAsk',
  settingSources: [],
};
const probe = tool({
  description: 'Returns a probe value for n.',
  inputSchema: z.object({ n: z.number().int() }),
  execute: async ({ n }) => `p${n}`,
});
const toolSettings = (extra = {}) => ({
  ...common,
  mcpServers: { bench: createAiSdkMcpServer('bench', { probe }) },
  allowedTools: ['mcp__bench__probe'],
  ...extra,
});

const steps = [];
async function step(name, run) {
  const start = process.hrtime.bigint();
  const result = await run();
  const end = process.hrtime.bigint();
  await new Promise((resolve) => setTimeout(resolve, pause));
  const idleEnd = process.hrtime.bigint();
  steps.push({ name, start: Number(start), end: Number(end), idle_end: Number(idleEnd), text: result.text });
  return result;
}

await step('tool', () =>
  generateText({ model: claudeCode('sonnet', toolSettings()), system: toolSystem, prompt: prompts.tool }),
);
const second = await step('text', () =>
  generateText({ model: claudeCode('sonnet', common), system: textSystem, prompt: prompts.text }),
);
const sessionId = second.providerMetadata?.['claude-code']?.sessionId;
await step('follow_up', () =>
  generateText({
    model: claudeCode('sonnet', { ...common, resume: sessionId }),
    system: textSystem,
    prompt: prompts.follow_up,
  }),
);
await step('new_conversation', () =>
  generateText({ model: claudeCode('sonnet', toolSettings()), system: toolSystem, prompt: prompts.new_conversation }),
);
await step('new_model', () => {
  const provider = createClaudeCode();
  return generateText({ model: provider('sonnet', toolSettings()), system: toolSystem, prompt: prompts.new_model });
});
console.log(JSON.stringify({ ready: Number(ready), steps }));
process.exit(0);
