// Reads one agent run served by pydantic-ai's UI adapters with the official client libraries, and prints what the
// client made of it as JSON on stdout.
//
//   node read_stream.mjs vercel <url> <prompt>   the `ai` package: DefaultChatTransport + readUIMessageStream
//   node read_stream.mjs ag-ui <url> <prompt>    `@ag-ui/client`: HttpAgent.runAgent
//
// Both clients validate what they read (the UI message chunk schema; AG-UI's event verifier): a stream they reject
// makes this script exit 1 with the client's error on stderr.
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport, readUIMessageStream } from "ai";

const [protocol, url, prompt] = process.argv.slice(2);

async function readVercel() {
  const transport = new DefaultChatTransport({ api: url });
  const chunks = await transport.sendMessages({
    trigger: "submit-message",
    chatId: "chat-1",
    messageId: undefined,
    messages: [{ id: "user-1", role: "user", parts: [{ type: "text", text: prompt }] }],
    abortSignal: undefined,
  });
  const [forReader, forLog] = chunks.tee();
  const seen = [];
  const logged = (async () => {
    for await (const chunk of forLog) seen.push(chunk.type);
  })();
  let message;
  for await (const snapshot of readUIMessageStream({ stream: forReader, terminateOnError: true })) {
    message = snapshot;
  }
  await logged;
  return { chunkTypes: seen, message };
}

async function readAgUi() {
  const agent = new HttpAgent({ url });
  agent.addMessage({ id: "user-1", role: "user", content: prompt });
  const events = [];
  let finished;
  const result = await agent.runAgent(
    { runId: "run-1" },
    {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFinishedEvent: ({ outcome, pendingToolCallIds, interrupts }) => {
        finished = { outcome, pendingToolCallIds, interrupts };
      },
    },
  );
  return { events, messages: agent.messages, newMessages: result.newMessages, finished };
}

try {
  const read = protocol === "vercel" ? await readVercel() : await readAgUi();
  process.stdout.write(JSON.stringify(read));
} catch (error) {
  process.stderr.write(`${error?.stack ?? error}\n`);
  process.exit(1);
}
