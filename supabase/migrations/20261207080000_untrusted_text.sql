-- Untrusted words are marked (contract §18, issue 42): private.visible_text removes what GitHub does
-- not show a reader, private.untrusted_block fences text written on GitHub with its source, author
-- and permission. supabase/schemas/26_untrusted_text.sql holds the same objects.

/**
 * `p_text` with the alt text of every Markdown image removed: `![alt](url)` and `![alt][ref]`
 * become `![](url)` and `![][ref]`, brackets nested in the alt and `\]` escapes included. One pass
 * over the characters with a stack of open brackets (a regular expression cannot balance them),
 * so a deeply nested text costs no more than a flat one.
 */
create or replace function private.without_image_alt(p_text text) returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  v_chars text[];
  v_length integer;
  v_opens integer[] := '{}';
  v_images boolean[] := '{}';
  v_depth integer := 0;
  v_open_images integer := 0;
  v_bang boolean := false;
  v_at integer := 1;
  v_from integer;
begin
  if p_text is null or strpos(p_text, '![') = 0 then
    return p_text;
  end if;
  v_chars := string_to_array(p_text, null);
  v_length := cardinality(v_chars);
  while v_at <= v_length loop
    case v_chars[v_at]
      when '\' then
        v_at := v_at + 1;
        v_bang := false;
      when '[' then
        v_depth := v_depth + 1;
        v_opens[v_depth] := v_at;
        v_images[v_depth] := v_bang;
        if v_bang then
          v_open_images := v_open_images + 1;
        end if;
        v_bang := false;
      when ']' then
        if v_depth > 0 then
          if v_images[v_depth] then
            v_open_images := v_open_images - 1;
            -- The outermost image closes: everything between its brackets goes.
            if v_open_images = 0 then
              for v_from in v_opens[v_depth] + 1 .. v_at - 1 loop
                v_chars[v_from] := '';
              end loop;
            end if;
          end if;
          v_depth := v_depth - 1;
        end if;
        v_bang := false;
      else
        v_bang := v_chars[v_at] = '!';
    end case;
    v_at := v_at + 1;
  end loop;
  return array_to_string(v_chars, '');
end;
$$;

grant execute on function private.without_image_alt(text) to service_role;

/**
 * `p_text` without what GitHub does not show a reader, so a session never reads instructions the
 * person who made the text work could not see:
 * - HTML comments: `<!-- … -->`, the empty `<!-->` and `<!--->`; an unclosed `<!--` hides the
 *   rest, as GitHub renders it;
 * - image alt text: Markdown `![alt](url)` (and `![alt][ref]`, nested brackets and `\]` included)
 *   becomes `![](url)`, an HTML `<img … alt="…">` loses its `alt`;
 * - invisible characters: zero-width and joiners (U+200B–U+200F), word joiner and invisible
 *   operators (U+2060–U+206F), U+FEFF, soft hyphen U+00AD, U+180E, U+034F, Hangul fillers, the
 *   interlinear annotation marks, variation selectors (which can carry hidden bytes), and Unicode
 *   tag characters (U+E0000–U+E007F, which spell text no font shows);
 * - bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+061C), which make text read otherwise
 *   than it is;
 * - other control characters; line and paragraph separators and carriage returns become newlines,
 *   tabs stay.
 * Over-removal is the safe side: a comment or `![…]` inside a code span goes too.
 */
create or replace function private.visible_text(p_text text) returns text
language plpgsql
immutable
set search_path = ''
as $$
declare
  v_text text := coalesce(p_text, '');
  v_before text;
begin
  v_text := replace(v_text, E'\r\n', E'\n');
  v_text := regexp_replace(v_text, '[\r\u2028\u2029]', E'\n', 'g');
  -- Characters first: an invisible one must not split `<!--` from being seen as a comment.
  v_text := regexp_replace(v_text,
    '[\u00AD\u034F\u061C\u115F\u1160\u180E\u200B-\u200F\u202A-\u202E\u2060-\u206F\u3164'
    '\uFE00-\uFE0F\uFEFF\uFFA0\uFFF9-\uFFFB\U000E0000-\U000E007F\U000E0100-\U000E01EF]',
    '', 'g');
  v_text := regexp_replace(v_text, '[\u0001-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]', '', 'g');
  -- HTML comments: the empty forms, then each closed one (the shortest match), then an unclosed
  -- one to the end.
  v_text := regexp_replace(v_text, '<!---?>', '', 'g');
  v_text := regexp_replace(v_text, '<!--.*?-->', '', 'g');
  v_text := regexp_replace(v_text, '<!--.*$', '');
  v_text := private.without_image_alt(v_text);
  -- HTML image alt text: the first `alt` of every tag a pass (quoted values may hold `>`); an
  -- unquoted value runs to a space or the tag's end.
  loop
    v_before := v_text;
    v_text := regexp_replace(v_text,
      '(<img\y(?:[^>"'']|"[^"]*"|''[^'']*'')*?\s)alt\s*=\s*(?:"[^"]*"|''[^'']*''|[^\s"''>]+(?=[\s>]|$))',
      '\1', 'gi');
    exit when v_text = v_before;
  end loop;
  return v_text;
end;
$$;

grant execute on function private.visible_text(text) to service_role;

/** One attribute of a block's opening line: visible, on one line, quoted, at most 200 characters. */
create or replace function private.untrusted_attribute(p_value text) returns text
language sql
immutable
set search_path = ''
as $$
  select '"' || replace(replace(left(btrim(regexp_replace(private.visible_text(p_value),
    '\s+', ' ', 'g')), 200), '\', '\\'), '"', '\"') || '"';
$$;

grant execute on function private.untrusted_attribute(text) to service_role;

/**
 * Text written on GitHub as a session reads it:
 *
 *   <<<untrusted 3f9a1c5e7b2d source="GitHub issue #12" author="demo-reader" permission="read">>>
 *   …the text, without what GitHub does not show (private.visible_text)…
 *   <<<end untrusted 3f9a1c5e7b2d>>>
 *
 * The nonce is 12 random hex digits, new for every block and never found in the text, so the
 * text can neither close its block nor open one that looks like the platform's. `p_source` says
 * where the text is (`GitHub issue #12`, `review comment on pull request #3 (src/a.ts:10)`),
 * `p_author` the login, `p_permission` its permission on the repository (`admin`, `maintain`,
 * `write`, `triage`, `read`, `none`; missing: `none`). At most 20,000 characters of the text are
 * kept; a longer one is cut, and a line after the block says so.
 */
create or replace function private.untrusted_block(
  p_source text,
  p_author text,
  p_permission text,
  p_text text
) returns text
language plpgsql
volatile
set search_path = ''
as $$
declare
  v_text text := private.visible_text(p_text);
  v_length integer := char_length(v_text);
  v_limit constant integer := 20000;
  v_nonce text;
begin
  if v_length > v_limit then
    v_text := left(v_text, v_limit);
  end if;
  loop
    v_nonce := substr(replace(gen_random_uuid()::text, '-', ''), 1, 12);
    exit when strpos(v_text, v_nonce) = 0;
  end loop;
  return '<<<untrusted ' || v_nonce
    || ' source=' || private.untrusted_attribute(coalesce(nullif(btrim(p_source), ''), 'GitHub'))
    || ' author=' || private.untrusted_attribute(coalesce(nullif(btrim(p_author), ''), 'unknown'))
    || ' permission='
    || private.untrusted_attribute(lower(coalesce(nullif(btrim(p_permission), ''), 'none')))
    || '>>>' || E'\n' || v_text || E'\n' || '<<<end untrusted ' || v_nonce || '>>>'
    || case when v_length > v_limit
      then E'\n' || format('(The platform cut the text above to %s of its %s characters.)',
        v_limit, v_length)
      else '' end;
end;
$$;

grant execute on function private.untrusted_block(text, text, text, text) to service_role;
