// A new process's first answer with ai-sdk-provider-claude-code (the Vercel AI SDK provider over the TypeScript
// Agent SDK): generateText with one tool bridged by createAiSdkMcpServer (the provider ignores AI SDK tools).
// Same protocol as bench/new_process/ours.py: BENCH_CLI_ENV (JSON), BENCH_PROMPT and BENCH_CLI (the CLI binary
// every contender runs); prints one JSON line of process.hrtime times (CLOCK_MONOTONIC, as the parent's clock)
// and the process's CPU seconds (user + system) until the answer and during the call.
import { generateText, tool } from 'ai';
import { claudeCode, createAiSdkMcpServer } from 'ai-sdk-provider-claude-code';
import { z } from 'zod';

const ready = process.hrtime.bigint();
const tools = {
  probe: tool({
    description: 'Returns a probe value for n.',
    inputSchema: z.object({ n: z.number().int() }),
    execute: async ({ n }) => `p${n}`,
  }),
};
const model = claudeCode('sonnet', {
  pathToClaudeCodeExecutable: process.env.BENCH_CLI,
  env: { ...process.env, ...JSON.parse(process.env.BENCH_CLI_ENV) },
  mcpServers: { bench: createAiSdkMcpServer('bench', tools) },
  tools: [],
  allowedTools: ['mcp__bench__probe'],
  permissionMode: 'dontAsk',
  settingSources: [],
});

const seconds = ({ user, system }) => (user + system) / 1e6;
const call = process.hrtime.bigint();
const cpuCall = seconds(process.cpuUsage());
const { text } = await generateText({ model, prompt: process.env.BENCH_PROMPT });
const answer = process.hrtime.bigint();
const cpu = seconds(process.cpuUsage());
console.log(
  JSON.stringify({ ready: Number(ready), call: Number(call), answer: Number(answer), cpu, cpu_call: cpu - cpuCall, text }),
);
process.exit(0);
