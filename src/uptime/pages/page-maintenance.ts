/**
 * The maintenance card's style (SPEC 12.2, 12.3): the card itself is rendered with the other live
 * sections (page-live.ts): upcoming and ongoing windows, each with its title, its times in UTC and
 * the nodes it covers.
 */

export const MAINTENANCE_STYLE = `
.banner.maintenance{background:var(--maint-b)}
.pill.maint{background:var(--maint-b)}.pill.maint.later{background:transparent;color:var(--text);border-color:var(--muted)}
`;
