/**
 * "Report a problem" (SPEC 12.2), shown with uptime.support set: the procedure users follow.
 * First rule out a local problem, then report through the support link saying what was observed,
 * when (in UTC: the page prints the time, and the uptime page's script keeps it current), and the
 * request made with its X-Request-Id (Switchyard sets that header on every answer).
 */
import { escapeHtml, utc } from './html.js';
import { supportLinks, type SupportConfig } from '../../config/support.js';

/** The section, or '' without a support address. `now` is the time printed until a script updates it. */
export function supportSection(support: SupportConfig | null, now: number): string {
  const links = supportLinks(support);
  if (links.length === 0) return '';
  const link = (href: string): string => {
    const shown = href.startsWith('mailto:') ? href.slice('mailto:'.length) : href;
    return `<a href="${escapeHtml(href)}" rel="noopener noreferrer">${escapeHtml(shown)}</a>`;
  };
  return `<section class="card" id="support"><h2>Report a problem</h2>
<ol class="steps">
<li>Check whether the problem is on your side first: try again from another network (mobile data, another
connection or machine). If this page already shows an incident, it is known and being worked on.</li>
<li>Then report it to ${links.map(link).join(' or ')}, saying:
<ul>
<li>what you observed (the error or answer you got, or what did not happen);</li>
<li>when, in UTC (it is now <span id="utc-now">${utc(now)}</span>);</li>
<li>the request you made (method and parameters, without API keys or other secrets) and the
<code>X-Request-Id</code> header of its answer (<code>curl -i</code> prints it).</li>
</ul></li>
</ol></section>`;
}
