// Runs the reference AG-UI client (@ag-ui/client HttpAgent) once against a URL and prints
// what it ends with: {"state", "messages", "result"} as JSON on stdout.
// Usage: node run_agent.mjs URL INPUT_JSON_FILE
// INPUT_JSON_FILE holds {threadId, runId, state, messages, tools, context, forwardedProps, resume?}.
import { readFileSync } from "node:fs";
import { HttpAgent } from "@ag-ui/client";

const [url, inputFile] = process.argv.slice(2);
if (!url || !inputFile) {
  console.error("usage: node run_agent.mjs URL INPUT_JSON_FILE");
  process.exit(2);
}
const input = JSON.parse(readFileSync(inputFile, "utf8"));
const agent = new HttpAgent({
  url,
  threadId: input.threadId,
  initialState: input.state ?? {},
  initialMessages: input.messages ?? [],
});
const errors = [];
const { result } = await agent.runAgent(
  {
    runId: input.runId,
    tools: input.tools ?? [],
    context: input.context ?? [],
    forwardedProps: input.forwardedProps ?? {},
    ...(input.resume === undefined ? {} : { resume: input.resume }),
  },
  { onRunErrorEvent: ({ event }) => { errors.push(event); } },
);
process.stdout.write(
  JSON.stringify({
    state: agent.state,
    messages: agent.messages,
    result: result ?? null,
    pendingInterrupts: agent.pendingInterrupts ?? [],
    errors,
  }) + "\n",
);
