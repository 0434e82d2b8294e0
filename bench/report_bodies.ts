/**
 * The reports the benches send, as a fleet's VMs send them: a health report of a team of three
 * that does not change, and batches whose ids are new each time (a CLI session, a session's steps).
 */
export const health = () => ({
  cpu_percent: 42,
  memory_percent: 55,
  disk_percent: 30,
  agents: [
    { name: "lead", status: "active" },
    { name: "builder", status: "active" },
    { name: "reviewer", status: "idle" },
  ],
});
export const messages = () => ({
  messages: Array.from({ length: 5 }, (_, i) => ({ agent: "lead", content: `message ${i}` })),
});
export const audit = () => ({
  events: Array.from({ length: 5 }, (_, i) => ({ agent: "lead", action: `step_${i}` })),
});
export const conflicts = () => ({
  branch: "main",
  conflicts_detected: 2,
  conflicts_resolved: 1,
  sync_attempts: 4,
  sync_failures: 1,
});
export const tasks = () => ({ agent: "lead", assigned: 5, completed: 3, failed: 1, drifted: 0 });
export const productivity = () => ({
  agent: "lead",
  commits: 4,
  lines_added: 120,
  lines_removed: 30,
});
export const sessions = () => ({
  sessions: [{
    session_id: crypto.randomUUID(),
    agent: "lead",
    model: "bench-model",
    started_at: new Date().toISOString(),
    input_tokens: 1200,
    output_tokens: 300,
  }],
});
export const steps = () => {
  const session = crypto.randomUUID();
  return {
    steps: Array.from({ length: 5 }, (_, seq) => ({
      session_id: session,
      seq,
      agent: "lead",
      at: new Date().toISOString(),
      kind: seq === 0 ? "text" : "tool_use",
      ...(seq === 0 ? {} : { tool: "Bash" }),
      summary: `npm test -- --grep step ${seq}`,
      detail: "x".repeat(200),
    })),
  };
};
