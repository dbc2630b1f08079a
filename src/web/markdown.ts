import { Marked, type Token, type Tokens, type TokensList } from 'marked';

/**
 * An answer's Markdown as HTML, one string per top-level block (paragraph, heading, list, code block, table,
 * quote), rendered with `marked` (GFM, single newlines kept as line breaks, as a chat shows them). The page
 * renders the blocks separately, so while an answer streams only its last block changes in the DOM: no
 * flicker, and a half-written block (an unclosed code fence, `**bo`) is always whole HTML of its own.
 *
 * Model output is untrusted. Here, before the sanitiser (sanitize.ts) runs on the result:
 * - raw HTML in the Markdown (blocks and inline tags) is shown as text, never parsed as HTML;
 * - links keep only `http:`, `https:` and `mailto:` targets (anything else, `javascript:` included, is
 *   plain text) and open in a new tab with `rel="noopener noreferrer nofollow"`;
 * - images are not loaded (the page's CSP forbids other origins anyway): they become a link to the image;
 * - a fenced code block is `<div class="code-block">` with its language, a Copy button (`data-copy`, handled by
 *   the page) and `<pre><code>`.
 */
export function markdownBlocks(text: string): string[] {
  const tokens = markdown.lexer(text);
  const out: string[] = [];
  for (const token of tokens) {
    if (token.type === 'space' || token.type === 'def') continue;
    const one = Object.assign([token], { links: tokens.links }) as TokensList;
    out.push(markdown.parser(one));
  }
  return out;
}

const SAFE_URL = /^(?:https?:|mailto:)/i;
/** A link opens in a new tab, tells the target nothing about the page, and vouches for nothing. */
const NEW_TAB = 'target="_blank" rel="noopener noreferrer nofollow"';

/** `&`, `<`, `>`, `"` and `'` as entities. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}
const ENTITIES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** The URL when it is one a page may link to, else undefined (a relative or `javascript:` URL, …). */
function safeUrl(href: string): string | undefined {
  const url = href.trim();
  return SAFE_URL.test(url) ? url : undefined;
}

const markdown = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
    link(this: { parser: { parseInline(tokens: Token[]): string } }, token: Tokens.Link): string {
      const inner = this.parser.parseInline(token.tokens);
      const url = safeUrl(token.href);
      if (url === undefined) return inner;
      const title = token.title ? ` title="${escapeHtml(token.title)}"` : '';
      return `<a href="${escapeHtml(url)}"${title} ${NEW_TAB}>${inner}</a>`;
    },
    image({ href, text }: Tokens.Image): string {
      const url = safeUrl(href);
      const label = `image: ${text || 'untitled'}`;
      if (url === undefined) return escapeHtml(`[${label}]`);
      return `<a href="${escapeHtml(url)}" ${NEW_TAB}>[${escapeHtml(label)}]</a>`;
    },
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? '').trim().split(/\s+/)[0] ?? '';
      const cls = language ? ` class="language-${escapeHtml(language)}"` : '';
      const label = language
        ? `<span class="code-lang">${escapeHtml(language)}</span>`
        : '<span class="code-lang"></span>';
      return (
        `<div class="code-block"><div class="code-head">${label}` +
        '<button type="button" class="copy" data-copy="">Copy</button></div>' +
        `<pre><code${cls}>${escapeHtml(text)}</code></pre></div>`
      );
    },
  },
});
