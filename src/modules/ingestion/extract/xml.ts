/**
 * A streaming walk over an XML part of an office file or EPUB (htmlparser2 in XML mode, already in
 * the tree through linkedom): tag names reach the handlers without their namespace prefix
 * ("a:t" → "t"), text with its entities decoded. No DOM is built, so a large sheet costs no more
 * than its text.
 */
import { Parser } from 'htmlparser2';

export type XmlAttributes = Record<string, string>;

export interface XmlHandlers {
  open?(name: string, attributes: XmlAttributes): void;
  close?(name: string): void;
  text?(text: string): void;
}

const local = (name: string) => name.slice(name.indexOf(':') + 1);

export function walkXml(xml: string, handlers: XmlHandlers): void {
  const parser = new Parser(
    {
      onopentag: (name, attributes) => handlers.open?.(local(name), attributes),
      onclosetag: (name) => handlers.close?.(local(name)),
      ontext: (text) => handlers.text?.(text),
    },
    { xmlMode: true, decodeEntities: true, recognizeSelfClosing: true },
  );
  parser.write(xml);
  parser.end();
}

/** An attribute by its local name, whatever its prefix ("r:id", "table:name" …). */
export function attr(attributes: XmlAttributes, name: string): string | undefined {
  if (name in attributes) return attributes[name];
  for (const [key, value] of Object.entries(attributes)) if (local(key) === name) return value;
  return undefined;
}

/** The relationship id of an OOXML element (r:id, whatever the prefix; a plain `id` is something else). */
export function relationshipId(attributes: XmlAttributes): string | undefined {
  for (const [key, value] of Object.entries(attributes)) if (key.includes(':') && local(key) === 'id') return value;
  return undefined;
}

/** The relationships of an OOXML part: id → { target resolved to a zip path, type }. */
export function relationships(xml: string | undefined, resolve: (target: string) => string): Map<string, { target: string; type: string }> {
  const out = new Map<string, { target: string; type: string }>();
  if (!xml) return out;
  walkXml(xml, {
    open(name, attributes) {
      if (name !== 'Relationship' || attributes.TargetMode === 'External') return;
      const id = attributes.Id;
      const target = attributes.Target;
      if (id && target) out.set(id, { target: resolve(target), type: attributes.Type ?? '' });
    },
  });
  return out;
}

/** The text of the first element named `name` (local name), or undefined; e.g. dc:title. */
export function firstElementText(xml: string | undefined, name: string): string | undefined {
  if (!xml) return undefined;
  let depth = 0;
  let text = '';
  let done = false;
  walkXml(xml, {
    open(tag) {
      if (!done && (depth > 0 || tag === name)) depth++;
    },
    close() {
      if (depth > 0 && --depth === 0) done = true;
    },
    text(chunk) {
      if (depth > 0 && !done) text += chunk;
    },
  });
  const trimmed = text.replace(/\s+/g, ' ').trim();
  return trimmed || undefined;
}
