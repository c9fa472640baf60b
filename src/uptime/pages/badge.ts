/**
 * The README badge: "uptime 30d | 99.98%" as a small flat SVG, coloured by the figure; "no data"
 * in grey whenever the page says not enough data (its caller hands it null then: figures.ts is
 * the one rule). Text widths are estimated from Verdana 11 px advance widths, close
 * enough for a badge without shipping a font.
 */

import { percent } from './figures.js';

const LABEL = 'uptime 30d';

/** Rough advance width in px of Verdana 11 px text (digits, letters and signs the badge uses). */
function textWidth(s: string): number {
  let w = 0;
  for (const c of s)
    w +=
      c === ' '
        ? 3.9
        : c === '.'
          ? 3.9
          : c === '%'
            ? 10.9
            : /[0-9]/.test(c)
              ? 7
              : /[mw]/.test(c)
                ? 10.7
                : /[ijlt]/.test(c)
                  ? 3.8
                  : 6.6;
  return Math.round(w);
}

export function badgeColor(fraction: number | null): string {
  if (fraction === null) return '#9f9f9f';
  if (fraction >= 0.999) return '#4c1';
  if (fraction >= 0.99) return '#97ca00';
  if (fraction >= 0.95) return '#dfb317';
  return '#e05d44';
}

export function badgeText(fraction: number | null): string {
  return percent(fraction);
}

export function renderBadge(fraction: number | null): string {
  const value = badgeText(fraction);
  const lw = textWidth(LABEL) + 12;
  const vw = textWidth(value) + 12;
  const w = lw + vw;
  const color = badgeColor(fraction);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${LABEL}: ${value}">
<title>${LABEL}: ${value}</title>
<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>
<clipPath id="r"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath>
<g clip-path="url(#r)"><rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${vw}" height="20" fill="${color}"/><rect width="${w}" height="20" fill="url(#s)"/></g>
<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
<text x="${lw / 2}" y="15" fill="#010101" fill-opacity=".3">${LABEL}</text><text x="${lw / 2}" y="14">${LABEL}</text>
<text x="${lw + vw / 2}" y="15" fill="#010101" fill-opacity=".3">${value}</text><text x="${lw + vw / 2}" y="14">${value}</text>
</g>
</svg>
`;
}
