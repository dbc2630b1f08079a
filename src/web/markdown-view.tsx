import { memo, useMemo, type MouseEvent } from 'react';
import { markdownBlocks } from './markdown.js';
import { sanitizeHtml } from './sanitize.js';

/**
 * An answer's Markdown, rendered (markdown.ts) and sanitised (sanitize.ts), one element per block: while the
 * answer streams, React leaves every finished block alone and replaces only the last one, so the text does not
 * flicker and a selection in an earlier block stays. A code block's Copy button copies its code.
 */
export function MarkdownView({ text }: { text: string }) {
  const blocks = useMemo(() => markdownBlocks(text), [text]);
  return (
    <div className="markdown" onClick={copyCode}>
      {blocks.map((html, i) => (
        <Block key={i} html={html} />
      ))}
    </div>
  );
}

const Block = memo(function Block({ html }: { html: string }) {
  const clean = useMemo(() => sanitizeHtml(html), [html]);
  return <div className="md-block" dangerouslySetInnerHTML={{ __html: clean }} />;
});

/** A click on a code block's Copy button: its code to the clipboard, and "Copied" on the button for a moment. */
function copyCode(event: MouseEvent<HTMLDivElement>): void {
  const button = (event.target as Element).closest('button[data-copy]');
  const code = button?.closest('.code-block')?.querySelector('pre code');
  if (!(button instanceof HTMLButtonElement) || !code) return;
  void navigator.clipboard?.writeText(code.textContent ?? '').then(
    () => flash(button, 'Copied'),
    () => flash(button, 'Copy failed'),
  );
}

function flash(button: HTMLButtonElement, text: string): void {
  button.textContent = text;
  setTimeout(() => (button.textContent = 'Copy'), 1500);
}
