import DOMPurify from 'dompurify';

/**
 * The second line of defence for an answer's HTML (markdown.ts shows raw HTML as text already): DOMPurify keeps
 * only the elements and attributes Markdown renders to, so no script, event handler, `style`, form or frame
 * ever reaches the page, whatever the renderer let through. Links keep `target` and `rel` (markdown.ts sets
 * them); DOMPurify's own URL check refuses `javascript:` and other unsafe schemes. Browser only (DOMPurify
 * needs a DOM).
 */
export function sanitizeHtml(html: string): string {
  return DOMPurify.sanitize(html, CONFIG);
}

const CONFIG = {
  ALLOWED_TAGS: [
    'a',
    'blockquote',
    'br',
    'button',
    'code',
    'del',
    'div',
    'em',
    'h1',
    'h2',
    'h3',
    'h4',
    'h5',
    'h6',
    'hr',
    'input',
    'li',
    'ol',
    'p',
    'pre',
    'span',
    'strong',
    'table',
    'tbody',
    'td',
    'th',
    'thead',
    'tr',
    'ul',
  ],
  ALLOWED_ATTR: [
    'href',
    'title',
    'target',
    'rel',
    'class',
    'type',
    'data-copy',
    'checked',
    'disabled',
    'align',
    'start',
  ],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};
