import { normaliseHostname } from './address-policy.js';

export type UrlKind = 'youtube' | 'web_url';

const VIDEO_ID = /^[A-Za-z0-9_-]{11}$/;
const WATCH_HOSTS = new Set([
  'youtube.com',
  'www.youtube.com',
  'm.youtube.com',
  'music.youtube.com',
  'youtube-nocookie.com',
  'www.youtube-nocookie.com',
]);
const SHORT_HOSTS = new Set(['youtu.be', 'www.youtu.be']);
/** Paths of the form /<kind>/<id> that name one video. */
const PATH_KINDS = new Set(['shorts', 'embed', 'live', 'v', 'e']);

/**
 * The video id of a YouTube video URL (watch?v=, youtu.be/, /shorts/, /embed/, /live/, on
 * www., m., music. and youtube-nocookie hosts), or null. Only the id is ever used: the
 * transcript is fetched from YOUTUBE_BASE_URL (`youtubeWatchUrl`), never from the user's host.
 */
export function youtubeVideoId(input: string): string | null {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  if (url.username || url.password) return null;
  const host = normaliseHostname(url.hostname);
  const segments = url.pathname.split('/').filter(Boolean);
  let id: string | null | undefined = null;
  if (SHORT_HOSTS.has(host)) {
    id = segments.length === 1 ? segments[0] : null;
  } else if (WATCH_HOSTS.has(host)) {
    if (segments.length === 1 && segments[0] === 'watch') id = url.searchParams.get('v');
    else if (segments.length === 2 && PATH_KINDS.has(segments[0] ?? '')) id = segments[1];
  }
  return id && VIDEO_ID.test(id) ? id : null;
}

/** `youtube` when the URL names one YouTube video; everything else is fetched as a web page. */
export function classifyUrl(input: string): UrlKind {
  return youtubeVideoId(input) === null ? 'web_url' : 'youtube';
}

/** The watch page of `videoId` under OUR base URL (YOUTUBE_BASE_URL; a path prefix is kept). */
export function youtubeWatchUrl(baseUrl: string, videoId: string): string {
  if (!VIDEO_ID.test(videoId)) throw new Error(`Not a YouTube video id: ${JSON.stringify(videoId)}`);
  const base = new URL(baseUrl);
  if (!base.pathname.endsWith('/')) base.pathname += '/';
  const url = new URL('watch', base);
  url.search = '';
  url.hash = '';
  url.searchParams.set('v', videoId);
  return url.href;
}
