/*
 * Language names and tags, from the runtime's own CLDR data (Intl) rather than a hand-kept list.
 * Node ships full ICU, so `Intl.DisplayNames` knows every ISO 639-1 language and its English name.
 */

import { once } from '../../platform/once.js';

const languageNames = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none' });
// "Portuguese (Brazil)" next to the dialect form "Brazilian Portuguese": both are accepted.
const standardNames = new Intl.DisplayNames(['en'], { type: 'language', fallback: 'none', languageDisplay: 'standard' });
const regionNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
const scriptNames = new Intl.DisplayNames(['en'], { type: 'script', fallback: 'none' });

/** language[-Script][-REGION] in canonical case; variants, extensions and private use are refused. */
const SIMPLE_TAG = /^[a-z]{2,3}(?:-[A-Z][a-z]{3})?(?:-(?:[A-Z]{2}|\d{3}))?$/;

/** Regional and script variants that people commonly name, on top of the ISO 639-1 languages. */
const NAMED_VARIANTS = [
  'zh-Hans', 'zh-Hant', 'pt-BR', 'pt-PT', 'en-US', 'en-GB', 'en-AU', 'en-CA', 'es-ES', 'es-MX', 'es-419',
  'fr-CA', 'fr-CH', 'de-AT', 'de-CH', 'nl-BE', 'sr-Latn', 'sr-Cyrl', 'fil', 'yue', 'haw', 'ceb',
];

const normalizeName = (name: string) => name.trim().toLowerCase().replace(/\s+/g, ' ');

function canonical(tag: string): string | undefined {
  try {
    return Intl.getCanonicalLocales(tag)[0];
  } catch {
    return undefined; // malformed (RangeError)
  }
}

/** Every ISO 639-1 code Intl knows, canonicalized (`iw` → `he`), deduplicated. */
function iso639_1Codes(): string[] {
  const codes = new Set<string>();
  const letters = 'abcdefghijklmnopqrstuvwxyz';
  for (const a of letters) {
    for (const b of letters) {
      const tag = canonical(a + b);
      if (tag && /^[a-z]{2}$/.test(tag) && languageNames.of(tag)) codes.add(tag);
    }
  }
  return [...codes];
}

// Built on first use (a few hundred ICU look-ups), not when the service loads.
const iso639_1 = once(() => new Set(iso639_1Codes()));

/** Lower-cased English name → canonical tag ("french" → "fr", "brazilian portuguese" → "pt-BR"). */
const tagByName = once(() => {
  const map = new Map<string, string>();
  for (const tag of [...iso639_1(), ...NAMED_VARIANTS]) {
    for (const names of [languageNames, standardNames]) {
      const name = names.of(tag);
      // First come wins: the ISO 639-1 languages are listed before the variants.
      if (name && !map.has(normalizeName(name))) map.set(normalizeName(name), tag);
    }
  }
  return map;
});

/** Checks a tag against CLDR: well-formed, simple, and every subtag a known language/script/region. */
function knownTag(input: string): string | undefined {
  const tag = canonical(input);
  if (!tag || !SIMPLE_TAG.test(tag)) return undefined;
  const locale = new Intl.Locale(tag);
  if (!languageNames.of(locale.language)) return undefined;
  if (locale.script && !scriptNames.of(locale.script)) return undefined;
  if (locale.region && !regionNames.of(locale.region)) return undefined;
  return tag;
}

export interface TargetLanguage {
  /** Canonical BCP 47 tag: `fr`, `pt-BR`, `zh-Hant`. */
  tag: string;
  /** English name for the model: `French`, `Brazilian Portuguese`. */
  name: string;
}

/**
 * A translation target given as an English language name ("French", "german", "Brazilian
 * Portuguese") or a BCP 47 tag ("fr", "pt-br", "zh-Hant"); undefined when it is neither.
 * Names are tried first: some names ("french") are well-formed but unknown tags.
 */
export function resolveTargetLanguage(input: string): TargetLanguage | undefined {
  if (input.length > 64) return undefined;
  const tag = tagByName().get(normalizeName(input)) ?? knownTag(input.trim());
  if (!tag) return undefined;
  return { tag, name: languageNames.of(tag) ?? tag };
}

/** An ISO 639-1 code (any case) as its canonical lower-case form; undefined otherwise. */
export function resolveIso639_1(input: string): string | undefined {
  const trimmed = input.trim();
  // Two letters as given: ICU would also turn three-letter aliases ("eng") into "en".
  if (!/^[a-z]{2}$/i.test(trimmed)) return undefined;
  const code = canonical(trimmed);
  return code && iso639_1().has(code) ? code : undefined;
}
