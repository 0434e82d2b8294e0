/**
 * What Slack accepts from an incoming webhook, written from its Block Kit reference
 * (docs.slack.dev, "Blocks", "Block elements", "Composition objects"), so a test can tell a
 * message Slack would refuse (`invalid_blocks`) without reaching Slack:
 *
 * - the payload: `text` (the notification's fallback: a string) and `blocks`, at most 50;
 * - a text object: `type` `plain_text` or `mrkdwn`, `text` of 1 to 3000 characters, `emoji` only
 *   on plain_text, `verbatim` only on mrkdwn;
 * - `section`: `text` (≤ 3000) and/or `fields` (at most 10 text objects, each ≤ 2000), an
 *   optional `accessory` element, an optional `block_id`;
 * - `actions`: `elements`, 1 to 25 interactive elements;
 * - `button`: `text` plain_text ≤ 75 characters, `action_id` ≤ 255 and unique within the message,
 *   `url` ≤ 3000 and absolute, `value` ≤ 2000, `style` primary or danger, `accessibility_label`
 *   ≤ 75;
 * - `block_id` ≤ 255 and unique within the message; no property Block Kit does not define.
 *
 * Answers every problem found (an empty list: Slack takes it).
 */
// deno-lint-ignore-file no-explicit-any

export function slackMessageProblems(payload: any): string[] {
  const problems: string[] = [];
  const actionIds = new Set<string>();
  const blockIds = new Set<string>();
  const fail = (where: string, what: string) => problems.push(`${where}: ${what}`);
  const only = (where: string, value: any, keys: string[]) => {
    for (const key of Object.keys(value)) {
      if (!keys.includes(key)) fail(where, `unknown property ${key}`);
    }
  };

  const text = (where: string, value: any, max: number, type?: "plain_text" | "mrkdwn") => {
    if (typeof value !== "object" || value === null) return fail(where, "must be a text object");
    only(where, value, ["type", "text", "emoji", "verbatim"]);
    if (value.type !== "plain_text" && value.type !== "mrkdwn") {
      fail(where, "type must be plain_text or mrkdwn");
    }
    if (type && value.type !== type) fail(where, `type must be ${type}`);
    if (typeof value.text !== "string" || value.text.length === 0) {
      fail(where, "text must be a non-empty string");
    } else if (value.text.length > max) fail(where, `text is over ${max} characters`);
    if ("emoji" in value && (value.type !== "plain_text" || typeof value.emoji !== "boolean")) {
      fail(where, "emoji is a boolean of plain_text only");
    }
    if ("verbatim" in value && (value.type !== "mrkdwn" || typeof value.verbatim !== "boolean")) {
      fail(where, "verbatim is a boolean of mrkdwn only");
    }
  };

  const button = (where: string, element: any) => {
    only(where, element, [
      "type",
      "text",
      "action_id",
      "url",
      "value",
      "style",
      "confirm",
      "accessibility_label",
    ]);
    text(`${where}.text`, element.text, 75, "plain_text");
    if ("action_id" in element) {
      if (typeof element.action_id !== "string" || element.action_id.length > 255) {
        fail(where, "action_id must be a string of at most 255 characters");
      } else if (actionIds.has(element.action_id)) {
        fail(where, `action_id ${element.action_id} is not unique`);
      } else actionIds.add(element.action_id);
    }
    if ("url" in element) {
      if (typeof element.url !== "string" || element.url.length > 3000) {
        fail(where, "url must be a string of at most 3000 characters");
      } else if (!URL.canParse(element.url)) fail(where, "url must be an absolute URL");
    }
    if ("value" in element && (typeof element.value !== "string" || element.value.length > 2000)) {
      fail(where, "value must be a string of at most 2000 characters");
    }
    if ("style" in element && !["primary", "danger"].includes(element.style)) {
      fail(where, "style must be primary or danger");
    }
    if (
      "accessibility_label" in element &&
      (typeof element.accessibility_label !== "string" || element.accessibility_label.length > 75)
    ) fail(where, "accessibility_label must be at most 75 characters");
  };

  const element = (where: string, value: any) => {
    if (typeof value !== "object" || value === null) return fail(where, "must be an element");
    if (value.type === "button") return button(where, value);
    fail(where, `element type ${value.type} is not one this validator knows`);
  };

  if (typeof payload !== "object" || payload === null) return ["the payload must be an object"];
  only("payload", payload, [
    "text",
    "blocks",
    "thread_ts",
    "mrkdwn",
    "unfurl_links",
    "unfurl_media",
  ]);
  if (typeof payload.text !== "string" || payload.text.length === 0) {
    fail("payload", "text (the notification's fallback) must be a non-empty string");
  }
  if (!Array.isArray(payload.blocks)) return [...problems, "payload: blocks must be an array"];
  if (payload.blocks.length === 0 || payload.blocks.length > 50) {
    fail("payload", "blocks must hold 1 to 50 blocks");
  }
  payload.blocks.forEach((block: any, index: number) => {
    const where = `blocks[${index}]`;
    if (typeof block !== "object" || block === null) return fail(where, "must be an object");
    if ("block_id" in block) {
      if (typeof block.block_id !== "string" || block.block_id.length > 255) {
        fail(where, "block_id must be a string of at most 255 characters");
      } else if (blockIds.has(block.block_id)) fail(where, "block_id is not unique");
      else blockIds.add(block.block_id);
    }
    switch (block.type) {
      case "section":
        only(where, block, ["type", "text", "fields", "accessory", "block_id", "expand"]);
        if (!("text" in block) && !("fields" in block)) fail(where, "needs text or fields");
        if ("text" in block) text(`${where}.text`, block.text, 3000);
        if ("fields" in block) {
          if (
            !Array.isArray(block.fields) || block.fields.length === 0 || block.fields.length > 10
          ) {
            fail(where, "fields must hold 1 to 10 text objects");
          } else {
            block.fields.forEach((field: any, i: number) =>
              text(`${where}.fields[${i}]`, field, 2000)
            );
          }
        }
        if ("accessory" in block) element(`${where}.accessory`, block.accessory);
        break;
      case "actions":
        only(where, block, ["type", "elements", "block_id"]);
        if (
          !Array.isArray(block.elements) || block.elements.length === 0 ||
          block.elements.length > 25
        ) {
          fail(where, "elements must hold 1 to 25 elements");
        } else {
          block.elements.forEach((e: any, i: number) => element(`${where}.elements[${i}]`, e));
        }
        break;
      default:
        fail(where, `block type ${block.type} is not section or actions`);
    }
  });
  return problems;
}
