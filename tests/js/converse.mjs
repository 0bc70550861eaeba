// A chat on the reference AG-UI client (@ag-ui/client HttpAgent), as a front end holds one: one
// agent for the whole thread, each turn a user message with an id of the front end's own, then
// runAgent with what HttpAgent builds from the turns before.
// Usage: node converse.mjs URL SCRIPT_JSON_FILE
//   SCRIPT: {"said": ["...", ...], "fault": "cut-after=3" (optional, sent as the
//   X-AGUI-Replay-Fault header with every turn)}
// Prints one JSON line per turn: {"userId", "messages", "state", "errors", "events",
// "firstEventMs", "stray"}: the history after the turn, the RUN_ERROR events and the rejection (if any),
// the types of the events the client applied, and how long the first one took to come.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { HttpAgent } from "@ag-ui/client";

const [url, scriptFile] = process.argv.slice(2);
if (!url || !scriptFile) {
  console.error("usage: node converse.mjs URL SCRIPT_JSON_FILE");
  process.exit(2);
}
// A cut connection makes HttpAgent's reader.cancel() reject after runAgent has rejected (its
// cleanup rethrows the error): kept here, not a crash of the script.
const stray = [];
process.on("unhandledRejection", (error) => { stray.push(String(error?.message ?? error)); });
const script = JSON.parse(readFileSync(scriptFile, "utf8"));
const headers = script.fault ? { "X-AGUI-Replay-Fault": script.fault } : {};
const agent = new HttpAgent({ url, headers, threadId: randomUUID() });
for (const said of script.said) {
  const userId = randomUUID();
  agent.addMessage({ id: userId, role: "user", content: said });
  const errors = [];
  const events = [];
  const started = Date.now();
  let firstEventMs = null;
  try {
    await agent.runAgent(
      { runId: randomUUID() },
      {
        onEvent: ({ event }) => {
          firstEventMs ??= Date.now() - started;
          events.push(event.type);
        },
        onRunErrorEvent: ({ event }) => { errors.push({ code: event.code, message: event.message }); },
      },
    );
  } catch (error) {
    errors.push({ name: error?.name ?? "Error", message: String(error?.message ?? error) });
  }
  process.stdout.write(
    JSON.stringify({
      userId,
      messages: agent.messages,
      state: agent.state,
      errors,
      events,
      firstEventMs,
      stray: stray.splice(0),
    }) + "\n",
  );
}
