/**
 * Post-mortems are Markdown written by operators and shown on a public page: rendered by
 * markdown-it with raw HTML off (an HTML tag in the text is printed as text), so no script,
 * style, iframe or event handler can come from it. Beyond its defaults:
 * - links keep markdown-it's validateLink (javascript:, vbscript:, file: and data: other than
 *   a few image types are not links), and are narrowed further here to http(s), mailto, paths
 *   of this site and in-page (#) targets; they get rel="nofollow noopener noreferrer";
 * - images are off: the page loads nothing from elsewhere (`![a](u)` stays a link to u);
 * - table cells lose the style attribute alignment would add (the page's CSP allows no inline style);
 * - headings move two levels down (# is h3): the page has its h1 and the post-mortem's h2;
 * - no linkify, no typographer.
 */
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: false, typographer: false });
md.disable('image');

const SAFE_LINK = /^(https?:|mailto:|#|\/)/i;
const defaultValidate = md.validateLink.bind(md);
md.validateLink = (url: string): boolean => defaultValidate(url) && SAFE_LINK.test(url.trim());

md.core.ruler.push('switchyard_attrs', (state) => {
  for (const token of state.tokens) {
    for (const t of token.children ?? [token]) {
      if (t.attrs === null) continue;
      t.attrs = t.attrs.filter(([name]) => name !== 'style');
      if (t.type === 'link_open') t.attrSet('rel', 'nofollow noopener noreferrer');
    }
    if (token.attrs !== null) token.attrs = token.attrs.filter(([name]) => name !== 'style');
    // The post-mortem sits under the page's h1 and its own h2: its headings start at h3.
    if (token.type === 'heading_open' || token.type === 'heading_close')
      token.tag = `h${Math.min(6, Number(token.tag.slice(1)) + 2)}`;
  }
});

/** Markdown as HTML safe to put in the page as it is. */
export function renderMarkdown(text: string): string {
  return md.render(text);
}
