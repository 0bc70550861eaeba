// The page's script: a chat on @ag-ui/client's HttpAgent, bundled for the browser by esbuild.
// The agent URL comes from the page's query string: index.html?agent=http://127.0.0.1:PORT/,
// and a fault for agui-replay serve to inject into every run, if any: &fault=cut-after=3.
import { HttpAgent } from "@ag-ui/client";

const $ = (id) => document.getElementById(id);
const query = new URLSearchParams(location.search);
const fault = query.get("fault");
const agent = new HttpAgent({
  url: query.get("agent"),
  headers: fault ? { "X-AGUI-Replay-Fault": fault } : {},
});

function render() {
  $("messages").replaceChildren(
    ...agent.messages
      .filter((m) => (m.role === "user" || m.role === "assistant") && m.content)
      .map((m) => {
        const item = document.createElement("li");
        item.className = m.role;
        item.textContent = m.content;
        return item;
      }),
  );
  $("state").textContent = JSON.stringify(agent.state);
  const pending = agent.pendingInterrupts ?? [];
  $("interrupt").hidden = pending.length === 0;
  $("question").textContent = pending[0]?.message ?? "";
}

let failed = "";  // the last run's error, shown in #error

agent.subscribe({
  onMessagesChanged: render,
  onStateChanged: render,
  onRunErrorEvent: ({ event }) => {
    failed = `${event.code ?? "RUN_ERROR"}: ${event.message}`;
  },
});

async function run(parameters) {
  $("status").textContent = "running";
  $("error").textContent = "";
  failed = "";
  try {
    await agent.runAgent(parameters);
  } catch (error) {
    failed ||= String(error?.message ?? error);  // a refused request, a dropped connection
  }
  const waiting = (agent.pendingInterrupts ?? []).length > 0;
  $("status").textContent = failed ? "failed" : waiting ? "interrupted" : "done";
  $("error").textContent = failed;
  render();
  $("status").dataset.runs = String(Number($("status").dataset.runs ?? 0) + 1);  // runs ended
}

$("ask").addEventListener("submit", (event) => {
  event.preventDefault();
  const content = $("prompt").value;
  $("prompt").value = "";
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content });
  run({});
});

$("approve").addEventListener("click", () => {
  const resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved" }));
  run({ resume });
});
