/**
 * The Claude Code CLI the team runs: one pinned version, installed from npm
 * (`@anthropic-ai/claude-code`, a native binary inside the registry package) by the project's own
 * tasks locally and by the image recipe on a VM (docs/vm-agent.md).
 */
export const CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code";
export const CLAUDE_CODE_VERSION = "2.1.332";
