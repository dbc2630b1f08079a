/**
 * An answer's Markdown as the page renders it (src/web/markdown.ts, before DOMPurify, which the Chromium spec
 * covers): one HTML string per block; headings, bold, lists, inline code, fenced code with its language and a
 * Copy button, safe links; raw HTML shown as text, `javascript:` links and images never made live; and a
 * streamed answer cut anywhere gives whole blocks whose finished ones do not change as more text comes.
 */
import { describe, expect, it } from 'vitest';
import { markdownBlocks } from '../src/web/markdown.js';

const ANSWER = [
  '## Files',
  '',
  'The folder holds **two** files and `notes.md`:',
  '',
  '- `a.ts`',
  '- `b.ts`',
  '',
  '```ts',
  'const x = 1 < 2;',
  '```',
  '',
  'See [the docs](https://example.com/docs "Docs").',
].join('\n');

describe('page Markdown', () => {
  it('headings, bold, lists, inline code, a fenced code block and a link, one HTML string per block', () => {
    expect(markdownBlocks(ANSWER).map((b) => b.trim())).toEqual([
      '<h2>Files</h2>',
      '<p>The folder holds <strong>two</strong> files and <code>notes.md</code>:</p>',
      '<ul>\n<li><code>a.ts</code></li>\n<li><code>b.ts</code></li>\n</ul>',
      '<div class="code-block"><div class="code-head"><span class="code-lang">ts</span>' +
        '<button type="button" class="copy" data-copy="">Copy</button></div>' +
        '<pre><code class="language-ts">const x = 1 &lt; 2;</code></pre></div>',
      '<p>See <a href="https://example.com/docs" title="Docs" target="_blank" rel="noopener noreferrer nofollow">' +
        'the docs</a>.</p>',
    ]);
  });

  it('raw HTML is text: no element, no handler, no script comes from the model', () => {
    const html = markdownBlocks('<img src=x onerror=alert(1)>\n\n<script>alert(2)</script>\n\nhi <b onclick=x>b</b>')
      .join('')
      .trim();
    expect(html).not.toMatch(/<(img|script|b)\b/);
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(html).toContain('hi &lt;b onclick=x&gt;b&lt;/b&gt;');
  });

  it('only http, https and mailto links are links; images are never loaded', () => {
    const html = markdownBlocks(
      '[a](javascript:alert(1)) [b](data:text/html,x) [c](/relative) [d](mailto:me@example.com) ' +
        '![pic](https://example.com/p.png) ![bad](javascript:x)',
    ).join('');
    expect(html.match(/<a [^>]*>/g)).toEqual([
      '<a href="mailto:me@example.com" target="_blank" rel="noopener noreferrer nofollow">',
      '<a href="https://example.com/p.png" target="_blank" rel="noopener noreferrer nofollow">',
    ]);
    expect(html).not.toMatch(/javascript:|data:|<img/);
    expect(html).toContain('[image: bad]');
  });

  it('streamed: the answer cut at every character gives whole blocks; finished blocks never change', () => {
    const final = markdownBlocks(ANSWER);
    let checked = 0;
    for (let n = 1; n <= ANSWER.length; n++) {
      const blocks = markdownBlocks(ANSWER.slice(0, n));
      for (const html of blocks) expect(balanced(html)).toBe(true);
      // Every block but the last (the one being written) is already what it will be.
      for (const [i, html] of blocks.slice(0, -1).entries()) expect(html).toBe(final[i]);
      checked++;
    }
    console.log(`${checked} prefixes of a ${final.length}-block answer: every block whole HTML, finished ones stable`);
  });

  it('an unclosed code fence while streaming is already a code block', () => {
    const [block] = markdownBlocks('```sh\nnpm test');
    expect(block).toContain('<pre><code class="language-sh">npm test</code></pre>');
  });
});

/** True when every opened element of `html` is closed in order (void elements aside). */
function balanced(html: string): boolean {
  const stack: string[] = [];
  for (const [, close, name] of html.matchAll(/<(\/?)([a-z0-9]+)\b[^>]*>/g)) {
    if (['br', 'hr', 'input', 'img'].includes(name!)) continue;
    if (close) {
      if (stack.pop() !== name) return false;
    } else stack.push(name!);
  }
  return stack.length === 0;
}
