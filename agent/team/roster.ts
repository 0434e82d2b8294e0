/**
 * The team's roster, read from `persona/AGENTS.md` (contract §11): every level-2 heading
 * `## <name>` declares an agent, a `model: <id>` line directly under it picks its model, and the
 * rest of the section is its role. The first agent is the lead. A project that has not saved an
 * AGENTS.md yet runs DEFAULT_AGENTS_MD, so a new project's team works from its first message.
 */
export interface RosterAgent {
  name: string;
  model: string;
  /** The section's text: what this agent is for, as the agent's system prompt carries it. */
  role: string;
  lead: boolean;
}

export const AGENT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

export const DEFAULT_AGENTS_MD = `# The team

## lead
Plans the work, keeps the repository coherent and hands tasks to the others.

## builder
Writes the code and its tests for the tasks the lead hands over.

## reviewer
Reviews what was pushed, fixes what is wrong and keeps the documentation current.
`;

const HEADING = /^##\s+(\S.*?)\s*$/;
const MODEL_LINE = /^model:\s*(\S+)\s*$/;

/** The agents AGENTS.md declares, in order; a heading whose name breaks the rule is skipped. */
export function parseRoster(markdown: string, defaultModel: string): RosterAgent[] {
  const agents: RosterAgent[] = [];
  let current: { name: string; model?: string; lines: string[] } | undefined;
  const flush = () => {
    if (!current) return;
    if (AGENT_NAME.test(current.name) && !agents.some((a) => a.name === current!.name)) {
      agents.push({
        name: current.name,
        model: current.model ?? defaultModel,
        role: current.lines.join("\n").trim(),
        lead: agents.length === 0,
      });
    }
    current = undefined;
  };
  let inFence = false;
  for (const line of markdown.split(/\r?\n/)) {
    if (/^(```|~~~)/.test(line)) inFence = !inFence;
    const heading = inFence ? null : HEADING.exec(line);
    if (heading) {
      flush();
      current = { name: heading[1]!, lines: [] };
      continue;
    }
    if (!inFence && /^#\s/.test(line)) {
      flush();
      continue;
    }
    if (!current) continue;
    const model = MODEL_LINE.exec(line);
    // "Directly under": the first non-blank line of the section.
    if (model && current.model === undefined && current.lines.every((l) => l.trim() === "")) {
      current.model = model[1]!;
      continue;
    }
    current.lines.push(line);
  }
  flush();
  return agents;
}
