/**
 * Text that owns its characters. A V8 slice of 13 characters or more (`text.slice`, a regex match)
 * is a view that keeps its whole parent string alive: an id sliced from a 4 MiB WebSocket frame,
 * or a 10-byte balance sliced from a 100 kB batch answer, would hold all of it for as long as the
 * slice lives, and every byte count made from the slice's length would be fiction. Text kept past
 * the request that carried it (answers waiting their turn, cache entries) is copied with own().
 */

/** V8 copies slices shorter than this (SlicedString::kMinLength); longer ones share their parent. */
const MIN_SLICE = 13;

/** A copy of `s` that refers only to its own characters (`s` itself when V8 would not share it). */
export function own(s: string): string {
  // Concatenating makes a new string; slicing it flattens that string into one fresh copy (V8),
  // so the result refers only to its own characters: one copy, where a Buffer round trip made two.
  return s.length < MIN_SLICE ? s : (' ' + s).slice(1);
}
