/** Atom documents in tests: parsed with xml-js (the `feed` package's own XML library) and checked against RFC 4287. */
import type { Test } from 'tap';
import { xml2js } from 'xml-js';

/** An Atom document as plain objects (xml-js compact form: `_text`, `_cdata`, `_attributes`). */
export interface AtomDoc {
  feed: Record<string, any> & { entry?: Record<string, any> | Record<string, any>[] };
}

export function parseAtom(xml: string): { doc: AtomDoc; entries: Record<string, any>[] } {
  const doc = xml2js(xml, { compact: true }) as AtomDoc;
  const e = doc.feed.entry;
  return { doc, entries: e === undefined ? [] : Array.isArray(e) ? e : [e] };
}

export const text = (el: any): string =>
  el?._text ?? (Array.isArray(el?._cdata) ? el._cdata.join('') : el?._cdata) ?? '';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/** The elements RFC 4287 requires: feed id, title, updated, an author; each entry id, title, updated, a link. */
export function checkAtom(t: Test, xml: string): Record<string, any>[] {
  const { doc, entries } = parseAtom(xml);
  t.equal(doc.feed._attributes?.xmlns, 'http://www.w3.org/2005/Atom', 'the Atom namespace');
  t.match(text(doc.feed.id), /^urn:uuid:/, 'feed id: an absolute IRI');
  t.ok(text(doc.feed.title).length > 0, 'feed title');
  t.match(text(doc.feed.updated), ISO, 'feed updated');
  t.ok(text(doc.feed.author?.name).length > 0, 'feed author');
  for (const e of entries) {
    t.match(text(e.id), /^urn:uuid:[0-9a-f-]{36}$/, 'entry id');
    t.ok(text(e.title).length > 0, 'entry title');
    t.match(text(e.updated), ISO, 'entry updated');
    t.match((Array.isArray(e.link) ? e.link[0] : e.link)?._attributes?.href, /^https?:\/\//, 'entry link, absolute');
  }
  return entries;
}
