// Runs streams through the reference client's own stages (@ag-ui/client 1.0: the inbound
// compatibility boundary, enforceEvents, transformChunks, verifyEvents, defaultApplyEvents)
// and prints one verdict per stream: accepted or not, the index of the refused event, the
// error text, the final state, messages and pending interrupts, and how many warnings were
// logged.
// Usage: node reference_verdicts.mjs < streams.json   (a JSON list of event lists)
// Prints a JSON list of {ok, index, error, state, messages, pendingInterrupts, warnings}.
import { readFileSync } from "node:fs";
import { catchError, from, lastValueFrom, tap, toArray } from "rxjs";
import {
  CompatibilityBoundary,
  defaultApplyEvents,
  enforceEvents,
  transformChunks,
  verifyEvents,
} from "@ag-ui/client";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "";
const streams = JSON.parse(readFileSync(0, "utf8"));
const verdicts = [];
for (const events of streams) {
  let warnings = 0;
  const warn = console.warn;
  console.warn = () => { warnings += 1; };
  let fed = -1;
  let refused = null;
  const boundary = new CompatibilityBoundary();
  const agent = { messages: [], state: {}, pendingInterrupts: [] };
  let messages = [];
  let state = {};
  let verdict;
  try {
    const source = from(events).pipe(
      tap(() => { fed += 1; }),
      (s) => s.pipe((o) => new o.constructor((sub) => o.subscribe({
        next: (e) => sub.next(boundary["transformEvent"](e)),
        error: (e) => sub.error(e),
        complete: () => sub.complete(),
      }))),
    );
    // The stages run synchronously per source event, but an error reaches the end of the
    // pipeline late (the applier buffers): note which source event each stage was on when
    // it failed.
    const stage = (operator, input) => {
      let at = -1;
      return operator(input.pipe(tap(() => { at = fed; }))).pipe(
        catchError((error) => { refused ??= at; throw error; }),
      );
    };
    const verified = stage(verifyEvents(false), stage(transformChunks(false), stage(enforceEvents(false), source)));
    const input = { threadId: "t", runId: "r", messages: [], state: {}, tools: [], context: [], forwardedProps: {} };
    const mutations = defaultApplyEvents(input, verified, agent, []);
    await lastValueFrom(
      mutations.pipe(
        tap((m) => {
          if (m.messages !== undefined) messages = m.messages;
          if (m.state !== undefined) state = m.state;
        }),
        toArray(),
      ),
    );
    verdict = { ok: true, index: null, error: null };
  } catch (error) {
    verdict = {
      ok: false,
      index: refused ?? fed,
      error: String(error && error.message ? error.message : error),
    };
  } finally {
    console.warn = warn;
  }
  verdicts.push({ ...verdict, state, messages, pendingInterrupts: agent.pendingInterrupts, warnings });
}
process.stdout.write(JSON.stringify(verdicts) + "\n");
