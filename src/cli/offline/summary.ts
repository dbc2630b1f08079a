/**
 * The offline model's extractive summary: headings and the first sentence
 * under each (or the first sentences of the first paragraphs when the text
 * has no headings). Nothing is invented; every sentence comes from the text.
 */

/** Most bullet points in a summary. */
export const MAX_POINTS = 15;
/** Longest sentence kept, in characters (longer ones are cut with `…`). */
export const MAX_SENTENCE_CHARS = 200;

interface Section {
  readonly heading: string | undefined;
  readonly paragraphs: string[];
}

/** Summarises `text` (the content of the file `name`) as a short Markdown document. */
export function summarise(text: string, name: string): string {
  const sections = parse(text);
  const points: string[] = [];
  const hasHeadings = sections.some((s) => s.heading !== undefined);
  for (const section of sections) {
    if (points.length >= MAX_POINTS) break;
    if (hasHeadings) {
      if (section.heading === undefined && section.paragraphs.length === 0) continue;
      const first = section.paragraphs[0];
      const sentence = first === undefined ? '' : firstSentence(first);
      if (section.heading === undefined) points.push(`- ${sentence}`);
      else points.push(sentence ? `- **${section.heading}**: ${sentence}` : `- **${section.heading}**`);
    } else {
      for (const paragraph of section.paragraphs.slice(0, MAX_POINTS - points.length))
        points.push(`- ${firstSentence(paragraph)}`);
    }
  }
  const body = points.length > 0 ? points.join('\n') : '- (the file has no text to summarise)';
  return `# Summary of ${name}\n\n${body}\n`;
}

/** Splits text into sections at Markdown headings; paragraphs are blank-line separated, code blocks skipped. */
function parse(text: string): Section[] {
  const sections: Section[] = [{ heading: undefined, paragraphs: [] }];
  let paragraph: string[] = [];
  let inCode = false;
  const flush = () => {
    if (paragraph.length > 0) sections[sections.length - 1]!.paragraphs.push(paragraph.join(' '));
    paragraph = [];
  };
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (/^(```|~~~)/.test(line)) {
      flush();
      inCode = !inCode;
      continue;
    }
    if (inCode) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*$/.exec(line);
    if (heading) {
      flush();
      sections.push({ heading: plain(heading[1]!), paragraphs: [] });
    } else if (line === '' || /^(---+|\*\*\*+|<!--.*-->)$/.test(line)) flush();
    else paragraph.push(line.replace(/^([-*+]|\d+[.)])\s+/, '').replace(/^>\s?/, ''));
  }
  flush();
  return sections.filter((s, i) => i > 0 || s.paragraphs.length > 0);
}

/** The first sentence of a paragraph, in plain text, cut at {@link MAX_SENTENCE_CHARS}. */
function firstSentence(paragraph: string): string {
  const text = plain(paragraph);
  const match = /^(.+?[.!?])(?=\s|$)/.exec(text);
  const sentence = match ? match[1]! : text;
  return sentence.length > MAX_SENTENCE_CHARS ? `${sentence.slice(0, MAX_SENTENCE_CHARS - 1).trimEnd()}…` : sentence;
}

/** Drops the commonest Markdown markup: links keep their text, images and emphasis markers go. */
function plain(text: string): string {
  return text
    .replace(/!\[[^\]]*\]\([^)]*\)/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/(\*\*|__)(.*?)\1/g, '$2')
    .replace(/\s+/g, ' ')
    .trim();
}
