// Drives the front-end page (front_end.html) in the system Chromium with playwright-core.
// Usage: node drive_front_end.mjs CHROMIUM PAGE_FOLDER AGENT_URL SCENARIO PROMPT [FAULT]
//   PAGE_FOLDER holds index.html and front_end.js (the bundled page script);
//   SCENARIO "conversation": send PROMPT, then approve the interrupt the run ends on, if any;
//   SCENARIO "ask": send PROMPT once;
//   SCENARIO "turns": PROMPT is several, separated by "|": send each after the other;
//   SCENARIO "again:N": open the page afresh and send PROMPT, N times.
//   FAULT goes to the page (&fault=...): the X-AGUI-Replay-Fault header of every run.
// The page is served from another loopback port than the agent's, so the browser makes real
// cross-origin calls (a CORS preflight before each POST).
// Prints one JSON line: {"steps": [{status, messages, state, error, question}, ...], "console"}.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { chromium } from "playwright-core";

const [executablePath, folder, agentUrl, scenario, prompt, fault] = process.argv.slice(2);
if (!prompt) {
  console.error("usage: node drive_front_end.mjs CHROMIUM PAGE_FOLDER AGENT_URL SCENARIO PROMPT");
  process.exit(2);
}
const types = { "index.html": "text/html", "front_end.js": "text/javascript" };
const pages = createServer((request, response) => {
  const name = new URL(request.url, "http://page").pathname.slice(1);
  if (!(name in types)) {
    response.writeHead(name === "favicon.ico" ? 204 : 404).end();
    return;
  }
  response.writeHead(200, { "content-type": types[name] });
  response.end(readFileSync(join(folder, name)));
});
await new Promise((resolve) => pages.listen(0, "127.0.0.1", resolve));
const pageUrl =
  `http://127.0.0.1:${pages.address().port}/index.html` +
  `?agent=${encodeURIComponent(agentUrl)}` +
  (fault ? `&fault=${encodeURIComponent(fault)}` : "");

const browser = await chromium.launch({
  executablePath,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"],
});
const consoleLines = [];
const steps = [];
try {
  const page = await browser.newPage();
  page.on("console", (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => consoleLines.push(`pageerror: ${error.message}`));
  const settled = () =>
    page.waitForFunction(() => !["idle", "running"].includes(
      document.getElementById("status").textContent,
    ));
  const shown = () =>
    page.evaluate(() => {
      const $ = (id) => document.getElementById(id);
      return {
        status: $("status").textContent,
        messages: [...document.querySelectorAll("#messages li")].map(
          (li) => [li.className, li.textContent],
        ),
        state: JSON.parse($("state").textContent || "null"),
        error: $("error").textContent,
        question: $("interrupt").hidden ? null : $("question").textContent,
      };
    });
  const send = async (said) => {
    const ended = () => page.evaluate(() => Number(document.getElementById("status").dataset.runs ?? 0));
    const before = await ended();
    await page.fill("#prompt", said);
    await page.click("#send");
    await page.waitForFunction(
      (n) => Number(document.getElementById("status").dataset.runs ?? 0) > n, before,
    );
    steps.push(await shown());
  };
  await page.goto(pageUrl);
  if (scenario === "turns") {
    for (const said of prompt.split("|")) await send(said);
  } else if (scenario.startsWith("again:")) {
    for (let n = Number(scenario.slice(6)); n > 0; n--) {
      if (steps.length) await page.goto(pageUrl);
      await send(prompt);
    }
  } else {
    await send(prompt);
  }
  if (scenario === "conversation" && steps[0].status === "interrupted") {
    await page.click("#approve");
    await page.waitForFunction(
      () => document.getElementById("status").textContent !== "interrupted",
    );
    await settled();
    steps.push(await shown());
  }
} finally {
  await browser.close();
  pages.close();
}
process.stdout.write(JSON.stringify({ steps, console: consoleLines }) + "\n");
