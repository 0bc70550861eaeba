// Plays a recorded conversation against a URL the way a front end does, with the reference
// AG-UI client (@ag-ui/client HttpAgent): one agent for the whole thread, its own thread, run and
// message ids, each run's new user messages typed in (taken from the recorded input), and each
// resume answering the interrupts the agent is holding (the ids the served stream gave it).
// Prints one JSON line per run: {"state", "messages", "pendingInterrupts", "errors"}.
// Usage: node play_conversation.mjs URL INPUTS_JSON_FILE   (a list of recorded RunAgentInputs)
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { HttpAgent } from "@ag-ui/client";

const [url, inputsFile] = process.argv.slice(2);
if (!url || !inputsFile) {
  console.error("usage: node play_conversation.mjs URL INPUTS_JSON_FILE");
  process.exit(2);
}
const inputs = JSON.parse(readFileSync(inputsFile, "utf8"));
const agent = new HttpAgent({ url, initialState: inputs[0]?.state ?? {} });
for (const input of inputs) {
  // What the user typed since the last run: the recorded input's messages past those the
  // agent already holds, with ids of the front end's own.
  const typed = (input.messages ?? []).slice(agent.messages.length);
  agent.addMessages(typed.map((m) => ({ ...m, id: randomUUID() })));
  const resume = (input.resume ?? []).map((entry, i) => ({
    ...entry,
    interruptId: agent.pendingInterrupts[i]?.id ?? entry.interruptId,
  }));
  const errors = [];
  try {
    await agent.runAgent(
      {
        runId: randomUUID(),
        tools: input.tools ?? [],
        ...(resume.length ? { resume } : {}),
      },
      { onRunErrorEvent: ({ event }) => { errors.push(event); } },
    );
  } catch (error) {
    errors.push({ message: String(error?.message ?? error) });
  }
  process.stdout.write(
    JSON.stringify({
      state: agent.state,
      messages: agent.messages,
      pendingInterrupts: agent.pendingInterrupts ?? [],
      errors,
    }) + "\n",
  );
}
