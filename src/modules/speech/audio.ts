import { parseMediaType } from '../../platform/content-type.js';

/*
 * What audio the transcription endpoint accepts: the formats OpenAI's speech-to-text API takes
 * (mp3/mpeg/mpga, mp4/m4a, wav, webm, ogg, flac). A file must be declared as one of them (MIME
 * type, or a generic type with a matching extension) AND its first bytes must be one of them.
 */

/** "25 MB" (DESIGN: at most 26,214,400 bytes). */
export const MAX_AUDIO_BYTES = 25 * 1024 * 1024;

/** Room for boundaries, part headers and the small fields around the audio in a multipart body. */
export const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

export type AudioFormat = 'audio/mpeg' | 'audio/mp4' | 'audio/wav' | 'audio/webm' | 'audio/ogg' | 'audio/flac';

const DECLARED_TYPES = new Set([
  'audio/mpeg', 'audio/mp3', 'audio/mpeg3', 'audio/x-mpeg', 'audio/x-mp3', 'audio/mpga',
  'audio/mp4', 'audio/m4a', 'audio/x-m4a', 'video/mp4',
  'audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave',
  'audio/webm', 'video/webm',
  'audio/ogg', 'application/ogg', 'audio/opus',
  'audio/flac', 'audio/x-flac',
]);
const EXTENSIONS = new Set(['mp3', 'mpeg', 'mpga', 'mp4', 'm4a', 'wav', 'webm', 'ogg', 'oga', 'opus', 'flac']);
/** Types that say nothing; the extension decides. */
const GENERIC_TYPES = new Set(['', 'application/octet-stream', 'binary/octet-stream']);

export const ACCEPTED_FORMATS_TEXT = 'mp3, mpeg, mpga, mp4, m4a, wav, webm, ogg or flac';

/** Whether the part's declared type (or, for a generic type, its file extension) is accepted audio. */
export function declaredAsAudio(mimetype: string, filename: string): boolean {
  const type = parseMediaType(mimetype).mime;
  if (DECLARED_TYPES.has(type)) return true;
  const extension = /\.([a-z0-9]+)$/i.exec(filename)?.[1]?.toLowerCase() ?? '';
  return GENERIC_TYPES.has(type) && EXTENSIONS.has(extension);
}

const ascii = (bytes: Uint8Array, at: number, text: string) =>
  bytes.length >= at + text.length && [...text].every((c, i) => bytes[at + i] === c.charCodeAt(0));

/**
 * The format from the magic bytes. The signatures are the ones the AI SDK itself uses to pick
 * the media type it declares to the provider, so every file accepted here is sent as what it is.
 */
export function sniffAudio(data: Uint8Array): AudioFormat | undefined {
  let bytes = data;
  // ID3v2 tag in front of MP3 frames: skip it (its size is a 28-bit syncsafe integer).
  if (ascii(bytes, 0, 'ID3') && bytes.length > 10) {
    const size = ((bytes[6]! & 0x7f) << 21) | ((bytes[7]! & 0x7f) << 14) | ((bytes[8]! & 0x7f) << 7) | (bytes[9]! & 0x7f);
    bytes = bytes.subarray(10 + size);
  }
  // MPEG-1/2/2.5 layer III frame sync, with or without CRC.
  if (bytes[0] === 0xff && [0xfb, 0xfa, 0xf3, 0xf2, 0xe3, 0xe2].includes(bytes[1]!)) return 'audio/mpeg';
  if (bytes !== data) return undefined; // an ID3 tag in front of anything else
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WAVE')) return 'audio/wav';
  if (ascii(bytes, 0, 'OggS')) return 'audio/ogg';
  if (ascii(bytes, 0, 'fLaC')) return 'audio/flac';
  if (bytes[0] === 0 && bytes[1] === 0 && bytes[2] === 0 && ascii(bytes, 4, 'ftyp')) return 'audio/mp4';
  if (bytes[0] === 0x1a && bytes[1] === 0x45 && bytes[2] === 0xdf && bytes[3] === 0xa3) return 'audio/webm';
  return undefined;
}

/** Bytes per second assumed when a compressed file's duration is unknown: 128 kbit/s, typical of MP3 speech. */
const ASSUMED_BYTES_PER_SECOND = 16_000;

/**
 * Seconds of audio, estimated from the bytes when the provider reports no duration: exact for
 * PCM WAV (its header holds the byte rate), 128 kbit/s for everything else.
 */
export function estimateSeconds(data: Uint8Array, format: AudioFormat | undefined): number {
  if (format === 'audio/wav' && data.length >= 44) {
    const byteRate = Buffer.from(data.buffer, data.byteOffset, data.byteLength).readUInt32LE(28);
    if (byteRate > 0) return Math.max(0, data.length - 44) / byteRate;
  }
  return data.length / ASSUMED_BYTES_PER_SECOND;
}

/** Same, from a size alone (for the credit held before the audio has arrived). */
export function estimateSecondsFromSize(bytes: number): number {
  return Math.min(bytes, MAX_AUDIO_BYTES) / ASSUMED_BYTES_PER_SECOND;
}
