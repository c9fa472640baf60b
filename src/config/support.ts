/**
 * uptime.support (SPEC 12.2 "Report a problem", 12.3): where users of the page report a problem.
 * SPEC 2's shape `{ url, email }` (either may be null): `url` an https:// or http:// address (a
 * form, an issue tracker, a chat), `email` an e-mail address (or a mailto: URL). A single string is
 * accepted too: such a URL, a mailto: address, or a bare e-mail address (taken as mailto:).
 * Anything else (javascript:, data:, a relative path) is refused at load: the value becomes a link
 * on a public page.
 */
export const MAX_SUPPORT = 500;

export type SupportConfig = string | { url: string | null; email: string | null };

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

/** `url` of the object form: an http(s) link only. */
export function isSupportUrl(value: string): boolean {
  const link = supportLink(value);
  return link !== null && !link.startsWith('mailto:');
}

/** `email` of the object form: an address or a mailto: URL only. */
export function isSupportEmail(value: string): boolean {
  return supportLink(value)?.startsWith('mailto:') === true;
}

/** The links a configured value makes (the URL first), none when unset. */
export function supportLinks(value: SupportConfig | null | undefined): string[] {
  if (value === null || value === undefined) return [];
  const all = typeof value === 'string' ? [value] : [value.url, value.email];
  return all.flatMap((v) => {
    const link = v === null ? null : supportLink(v);
    return link === null ? [] : [link];
  });
}
