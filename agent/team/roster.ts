/**
 * The team's roster, read from `persona/AGENTS.md` (contract §11, §11a): every level-2 heading
 * `## <name>` declares an agent, `model: <id>` and `fallback_model: <id>` lines directly under it
 * pick its model and the one used while that is busy, and the rest of the section is its role. A
 * line naming a model the catalogue does not know, or a retired one, leaves the agent with a
 * `problem`: it shows `error` with that sentence and takes no work until the line is fixed. A line
 * `reviews: pull_requests` directly under the heading makes the agent the team's reviewer of the
 * others' pull requests (contract §21, agent/team/review/). The first agent is the lead. A project
 * that has not saved an AGENTS.md yet runs DEFAULT_AGENTS_MD, so a new project's team works from
 * its first message.
 */
import { modelProblem } from "./models.ts";

export interface RosterAgent {
  name: string;
  model: string;
  fallbackModel: string;
  /** Why the agent cannot work as declared (a model line to fix), as a sentence. */
  problem?: string;
  /** The section's text: what this agent is for, as the agent's system prompt carries it. */
  role: string;
  lead: boolean;
  /** `reviews: pull_requests`: it reviews the others' pull requests before a person does. */
  reviewsPullRequests?: true;
}

export const AGENT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

export const DEFAULT_AGENTS_MD = `# The team

## lead
Plans the work, keeps the repository coherent and hands tasks to the others.

## builder
Writes the code and its tests for the tasks the lead hands over.

## reviewer
reviews: pull_requests
Reviews the others' pull requests before a person does, and keeps the documentation current.
`;

const HEADING = /^##\s+(\S.*?)\s*$/;
const MODEL_LINE = /^(model|fallback_model):\s*(\S+)\s*$/;
const REVIEWS_LINE = /^reviews:\s*pull_requests\s*$/;

interface Section {
  name: string;
  model?: string;
  fallback_model?: string;
  reviews?: boolean;
  lines: string[];
}

/** The agents AGENTS.md declares, in order; a heading whose name breaks the rule is skipped. */
export function parseRoster(
  markdown: string,
  defaults: { model: string; fallbackModel: string },
  now = new Date(),
): RosterAgent[] {
  const agents: RosterAgent[] = [];
  let current: Section | undefined;
  const flush = () => {
    if (!current) return;
    if (AGENT_NAME.test(current.name) && !agents.some((a) => a.name === current!.name)) {
      const model = current.model ?? defaults.model;
      const fallbackModel = current.fallback_model ?? defaults.fallbackModel;
      const problem = lineProblem(current, "model", model, now) ??
        lineProblem(current, "fallback_model", fallbackModel, now);
      agents.push({
        name: current.name,
        model,
        fallbackModel,
        ...(problem ? { problem } : {}),
        role: current.lines.join("\n").trim(),
        lead: agents.length === 0,
        ...(current.reviews ? { reviewsPullRequests: true as const } : {}),
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
    // "Directly under": before any other non-blank line of the section.
    const under = current.lines.every((l) => l.trim() === "");
    const key = model?.[1] as "model" | "fallback_model" | undefined;
    if (key && current[key] === undefined && under) {
      current[key] = model![2]!;
      continue;
    }
    if (under && current.reviews === undefined && REVIEWS_LINE.test(line)) {
      current.reviews = true;
      continue;
    }
    current.lines.push(line);
  }
  flush();
  return agents;
}

/** The sentence for a model the agent cannot use, naming the line (or the default) it came from. */
function lineProblem(
  section: Section,
  key: "model" | "fallback_model",
  model: string,
  now: Date,
): string | undefined {
  const problem = modelProblem(model, now);
  if (!problem) return undefined;
  const where = section[key] !== undefined
    ? `The line \`${key}: ${model}\` under \`## ${section.name}\` in AGENTS.md`
    : `The default ${key === "model" ? "model" : "fallback model"} ${model} (${
      key === "model" ? "AGENT_DEFAULT_MODEL" : "AGENT_FALLBACK_MODEL"
    })`;
  return `${where} names a model that ${problem}.`;
}
