/**
 * Deterministic generated text for bench/knowledge.ts: a seeded PRNG and English-like prose drawn
 * from a word list with Zipf frequencies (the files of every format are built from it by the test
 * builders: bench/knowledge-ingestion.ts).
 */

/** mulberry32: small, fast, deterministic. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Common English words, most frequent first (function words, then a general business/tech vocabulary).
export const COMMON_WORDS = `the of and to a in is that for it as was with be by on not he this are or his from at which but have an they
you were her she there been one all we their has would when if so no will more can who out about up what some them
into than other time only new could these two may first then do any like my now over such our man me even most made
after also did many before must through back years where much your way well down should because each just those people
how too little state good very make world still own see men work long get here between both life being under never
day same another know while last might us great old year off come since against go came right used take three
system data report process customer service product market price cost sales team project plan policy contract
company business support network server storage security access user account record document file page section
table chart value number total rate level growth revenue budget quarter month week schedule meeting review update
change issue request order invoice payment supplier shipment warehouse inventory stock delivery quality standard
control risk audit compliance regulation law court claim case evidence analysis research study test result model
method sample measure error signal energy power water heat light sound material structure design engineer machine
tool part unit component device sensor battery motor engine vehicle road bridge building room floor wall door window
city region country government public private school student teacher course lesson program health patient doctor
hospital treatment drug clinical trial dose effect response benefit safety training staff manager director board
member committee decision strategy goal target performance metric quality feedback survey question answer example
note summary introduction conclusion appendix chapter figure version release feature interface application software
hardware cloud database query index search result cache memory disk cluster node backup recovery incident outage
monitor alert log trace latency throughput capacity scale deploy migration pipeline build commit branch merge
green blue red large small early late high low fast slow clear simple complex annual monthly daily local global
north south east west river mountain forest ocean island weather climate season summer winter spring autumn`
  .split(/\s+/)
  .filter(Boolean);

/** Words with Zipf frequencies (weight 1 / rank): how often words occur in natural text. */
export interface Lexicon {
  readonly size: number;
  /** A word drawn by frequency; `minRank` leaves out the most common words (queries use content words). */
  word(random: () => number, minRank?: number): string;
}

function lexicon(words: readonly string[]): Lexicon {
  const weights = words.map((_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let sum = 0;
  const cumulative = weights.map((w) => (sum += w / total));
  return {
    size: words.length,
    word(random, minRank = 0) {
      const floor = minRank > 0 ? cumulative[minRank - 1]! : 0;
      const x = floor + random() * (1 - floor);
      let lo = 0;
      let hi = cumulative.length - 1;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (cumulative[mid]! < x) lo = mid + 1;
        else hi = mid;
      }
      return words[lo]!;
    },
  };
}

/** The common words only: text with the token density of plain English (every word one token or two). */
export const COMMON = lexicon(COMMON_WORDS);

/**
 * A vocabulary the size of a real corpus's: the common words as the head, then 30,000
 * pronounceable made-up words (deterministic) as the long tail of rarer terms, so that a search
 * term matches a realistic share of chunks instead of most of them.
 */
export const LARGE = lexicon(
  (() => {
    const random = prng(12345);
    const pick = (list: string[]) => list[Math.floor(random() * list.length)]!;
    const onsets = 'b c d f g h k l m n p r s t v w br cl dr fl gr pl pr st tr sh ch th sp'.split(' ');
    const vowels = 'a e i o u ai ea ou io ee'.split(' ');
    const codas = ['', '', 'n', 'r', 's', 'l', 't', 'm', 'nd', 'st', 'ck', 'ng'];
    const suffixes = ['', '', '', 'ing', 'tion', 'ment', 'er', 'ly', 'ness', 'al', 'ive', 'ity'];
    const seen = new Set(COMMON_WORDS);
    const vocabulary = [...COMMON_WORDS];
    while (vocabulary.length < COMMON_WORDS.length + 30_000) {
      const syllables = 2 + Math.floor(random() * 2);
      let w = '';
      for (let i = 0; i < syllables; i++) w += pick(onsets) + pick(vowels) + pick(codas);
      w += pick(suffixes);
      if (!seen.has(w)) {
        seen.add(w);
        vocabulary.push(w);
      }
    }
    return vocabulary;
  })(),
);

function sentence(random: () => number, words: Lexicon): string {
  const length = 6 + Math.floor(random() * 16);
  const list = Array.from({ length }, () => words.word(random));
  if (random() < 0.15) list.splice(1 + Math.floor(random() * (length - 1)), 0, String(Math.floor(random() * 5000)));
  const text = list.join(' ');
  return `${text[0]!.toUpperCase()}${text.slice(1)}${random() < 0.1 ? '?' : '.'}`;
}

/** About `chars` characters of sentences, in paragraphs of 3-7 sentences. */
export function prose(random: () => number, chars: number, words: Lexicon): string {
  const paragraphs: string[] = [];
  let size = 0;
  while (size < chars) {
    const count = 3 + Math.floor(random() * 5);
    const paragraph = Array.from({ length: count }, () => sentence(random, words)).join(' ');
    paragraphs.push(paragraph);
    size += paragraph.length + 2;
  }
  return paragraphs.join('\n\n').slice(0, chars);
}

/** Wraps text into lines of at most `width` characters (paragraph breaks become empty lines). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const paragraph of text.split('\n\n')) {
    let line = '';
    for (const w of paragraph.split(' ')) {
      if (line && line.length + 1 + w.length > width) {
        lines.push(line);
        line = w;
      } else line = line ? `${line} ${w}` : w;
    }
    if (line) lines.push(line);
    lines.push('');
  }
  return lines;
}
