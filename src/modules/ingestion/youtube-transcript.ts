import type { SafeFetcher } from '../../platform/fetch/fetcher.js';
import { youtubeWatchUrl } from '../../platform/fetch/fetcher.js';
import { IngestionError } from './ingestion.errors.js';

interface CaptionTrack {
  baseUrl: string;
  languageCode?: string;
  kind?: string;
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", '#39': "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (match, code: string) => {
    if (code.startsWith('#x') || code.startsWith('#X')) return String.fromCodePoint(parseInt(code.slice(2), 16));
    if (code.startsWith('#')) return String.fromCodePoint(Number(code.slice(1)));
    return ENTITIES[code.toLowerCase()] ?? match;
  });
}

/** The JSON array after `"captionTracks":` in the watch page, read with bracket matching. */
function captionTracks(html: string): CaptionTrack[] {
  const start = html.indexOf('"captionTracks":');
  if (start < 0) return [];
  const open = html.indexOf('[', start);
  let depth = 0;
  for (let i = open; i < html.length && i < open + 200_000; i++) {
    if (html[i] === '[') depth++;
    else if (html[i] === ']' && --depth === 0) {
      try {
        return JSON.parse(html.slice(open, i + 1)) as CaptionTrack[];
      } catch {
        return [];
      }
    }
  }
  return [];
}

function pageTitle(html: string): string | undefined {
  const og = /<meta\s+property="og:title"\s+content="([^"]*)"/i.exec(html)?.[1];
  const title = og ?? /<title>([^<]*)<\/title>/i.exec(html)?.[1];
  return title ? decodeEntities(title).replace(/\s*-\s*YouTube\s*$/, '').trim() || undefined : undefined;
}

/**
 * A video's transcript: the watch page (through the safe fetcher, from OUR base URL and the
 * parsed video id only) names caption tracks; the English one (else the first) is fetched and
 * its `<text>` cues joined. A track URL on another origin is re-based onto ours.
 */
export async function fetchYoutubeTranscript(
  fetcher: SafeFetcher,
  baseUrl: string,
  videoId: string,
): Promise<{ title?: string; text: string }> {
  const watch = await fetcher.fetch(youtubeWatchUrl(baseUrl, videoId), { accept: 'text/html' });
  const html = watch.body.toString('utf8');
  const tracks = captionTracks(html).filter((t) => typeof t.baseUrl === 'string');
  const track = tracks.find((t) => t.languageCode?.startsWith('en') && t.kind !== 'asr') ??
    tracks.find((t) => t.languageCode?.startsWith('en')) ??
    tracks[0];
  if (!track) throw new IngestionError('no_transcript', 'This video has no transcript or captions that can be imported.');
  const base = new URL(baseUrl);
  const given = new URL(track.baseUrl, base);
  const trackUrl = given.origin === base.origin ? given : new URL(`${given.pathname}${given.search}`, base);
  const xml = (await fetcher.fetch(trackUrl.toString(), { accept: 'text/xml' })).body.toString('utf8');
  const cues = [...xml.matchAll(/<text\b[^>]*>([\s\S]*?)<\/text>/g)].map((m) =>
    decodeEntities(decodeEntities(m[1]!.replace(/<[^>]+>/g, ''))).replace(/\s+/g, ' ').trim(),
  );
  const text = cues.filter(Boolean).join('\n');
  if (!text) throw new IngestionError('no_transcript', 'The transcript of this video is empty.');
  return { title: pageTitle(html), text };
}
