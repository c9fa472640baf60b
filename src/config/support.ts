/**
 * uptime.support (SPEC 12.2 "Report a problem"): where users of the page report a problem. An
 * https:// or http:// address (a form, an issue tracker, a chat), a mailto: address, or a bare
 * e-mail address (taken as mailto:). Anything else (javascript:, data:, a relative path) is refused
 * at load: the value becomes a link on a public page.
 */
export const MAX_SUPPORT = 500;

const EMAIL = /^[^\s@<>"'()\\,;:]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/;

/** The link for a configured value, or null when it is not one of the accepted forms. */
export function supportLink(value: string): string | null {
  if (value.length > MAX_SUPPORT || /[\s<>"'`]/.test(value)) return null;
  if (EMAIL.test(value)) return `mailto:${value}`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol === 'mailto:') return EMAIL.test(decodeURIComponent(url.pathname)) ? value : null;
  if ((url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '') return value;
  return null;
}
