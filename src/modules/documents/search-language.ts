/**
 * Languages of full-text search: which language a document is in (franc, trigram statistics),
 * which PostgreSQL text-search configuration indexes it, and the word segmentation that Chinese,
 * Japanese and Korean text needs before PostgreSQL's `simple` parser (which splits on spaces and
 * punctuation only) can index or query it. Pure; detection is asynchronous only because franc
 * (its trigram tables) is loaded on first use: the search side imports this file at start-up and
 * never detects. See docs/decisions.md "Search languages".
 */
import type * as Franc from 'franc';

/**
 * ISO 639-3 code (franc's) → text-search configuration. Only configurations that both
 * PostgreSQL 15+ and PGlite ship (`SELECT cfgname FROM pg_ts_config`: PGlite also has `estonian`,
 * PostgreSQL 15 does not). Bulgarian and Macedonian are not told apart from Russian by trigrams
 * and are not candidates (see CANDIDATES): their text is detected as Russian.
 */
export const SEARCH_CONFIGS: Readonly<Record<string, string>> = {
  arb: 'arabic',
  hye: 'armenian',
  eus: 'basque',
  cat: 'catalan',
  dan: 'danish',
  nld: 'dutch',
  eng: 'english',
  fin: 'finnish',
  fra: 'french',
  deu: 'german',
  ell: 'greek',
  hin: 'hindi',
  hun: 'hungarian',
  ind: 'indonesian',
  gle: 'irish',
  ita: 'italian',
  lit: 'lithuanian',
  npi: 'nepali',
  nob: 'norwegian',
  nno: 'norwegian',
  por: 'portuguese',
  ron: 'romanian',
  rus: 'russian',
  srp: 'serbian',
  spa: 'spanish',
  swe: 'swedish',
  tam: 'tamil',
  tur: 'turkish',
  ydd: 'yiddish',
};

/** The configuration of text whose language is unknown or has no stemmer. */
export const FALLBACK_CONFIG = 'simple';
/** Every configuration a document may be indexed with (a whitelist for the query side too). */
export const KNOWN_CONFIGS: ReadonlySet<string> = new Set([...Object.values(SEARCH_CONFIGS), FALLBACK_CONFIG]);

/** Languages written without spaces between words (or with particles glued on): segmented. */
const SEGMENTED = new Set(['cmn', 'jpn', 'kor']);

/**
 * The languages franc chooses among: those with a configuration, the segmented ones, and other
 * widely written languages without a stemmer (indexed with `simple`), so that their text is not
 * forced onto a near neighbour's stemmer.
 */
const CANDIDATES = [
  ...Object.keys(SEARCH_CONFIGS),
  ...SEGMENTED,
  'pol', 'ces', 'slk', 'slv', 'hrv', 'bos', 'ukr', 'bel', 'est', 'lav', 'isl', 'afr', 'zlm', 'vie', 'tha', 'heb',
  'pes', 'urd', 'ben', 'mar', 'tel', 'kan', 'mal', 'guj', 'pan', 'swh', 'tgl', 'kaz', 'uzn', 'azj', 'kat', 'amh',
];

/** Characters sampled for detection: a few thousand decide reliably and cost well under a millisecond. */
const SAMPLE_CHARS = 6000;
/** Below this many characters franc guesses: the language stays unknown. */
const MIN_DETECT_CHARS = 20;

let francModule: Promise<typeof Franc> | undefined;

/**
 * The document's language as an ISO 639-3 code (`eng`, `deu`, `cmn`, …), or null when the text is
 * too short or franc cannot tell. Reads a sample from the start, middle and end of the text.
 * franc is imported on the first call (only ingestion detects).
 */
export async function detectLanguage(text: string): Promise<string | null> {
  francModule ??= import('franc');
  const { franc } = await francModule;
  let sample = text;
  if (text.length > SAMPLE_CHARS) {
    const third = SAMPLE_CHARS / 3;
    const middle = Math.floor(text.length / 2 - third / 2);
    sample = `${text.slice(0, third)}\n${text.slice(middle, middle + third)}\n${text.slice(-third)}`;
  }
  const code = franc(sample, { minLength: MIN_DETECT_CHARS, only: CANDIDATES });
  return code === 'und' ? null : code;
}

/** The text-search configuration of a language (ISO 639-3); `simple` for none or an unknown one. */
export function searchConfigFor(language: string | null): string {
  return (language && SEARCH_CONFIGS[language]) || FALLBACK_CONFIG;
}

/** Han, kana and Hangul: text that PostgreSQL's parser cannot split into words. */
const CJK = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;

let segmenter: Intl.Segmenter | undefined;

/**
 * Words of CJK text separated by spaces (Intl.Segmenter's dictionary-based word breaks, ICU as
 * built into Node), everything else left as it is; null when the text has no CJK character (then
 * the content itself is indexed). Punctuation between words is kept as a separator, so phrases
 * stay phrases. One segmenter serves Chinese and Japanese: ICU's word-break dictionary covers
 * both whatever the locale, and Korean is broken at spaces.
 */
export function segmentCjk(text: string): string | null {
  if (!CJK.test(text)) return null;
  segmenter ??= new Intl.Segmenter('zh', { granularity: 'word' });
  const parts: string[] = [];
  for (const { segment, isWordLike } of segmenter.segment(text)) {
    parts.push(isWordLike ? ` ${segment} ` : segment);
  }
  return parts.join('').replace(/ {2,}/g, ' ').trim();
}

/** The text a chunk's tsvector is built from: segmented for the `simple` configuration, else null (the content). */
export function searchTextFor(content: string, config: string): string | null {
  return config === FALLBACK_CONFIG ? segmentCjk(content) : null;
}
