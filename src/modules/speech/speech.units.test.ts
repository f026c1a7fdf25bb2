import { describe, expect, it } from 'vitest';
import { mp3File, wavFile } from '../../../test/support/multipart.js';
import { declaredAsAudio, estimateSeconds, estimateSecondsFromSize, sniffAudio } from './audio.js';
import { resolveIso639_1, resolveTargetLanguage } from './languages.js';

describe('resolveTargetLanguage', () => {
  it.each([
    ['French', 'fr', 'French'],
    ['FRENCH', 'fr', 'French'],
    ['german', 'de', 'German'],
    ['Japanese', 'ja', 'Japanese'],
    ['Brazilian Portuguese', 'pt-BR', 'Brazilian Portuguese'],
    ['portuguese (brazil)', 'pt-BR', 'Brazilian Portuguese'],
    ['Simplified Chinese', 'zh-Hans', 'Simplified Chinese'],
    ['Chinese (Traditional)', 'zh-Hant', 'Traditional Chinese'],
    ['Hebrew', 'he', 'Hebrew'],
    ['Filipino', 'fil', 'Filipino'],
    ['fr', 'fr', 'French'],
    ['FR', 'fr', 'French'],
    ['pt-br', 'pt-BR', 'Brazilian Portuguese'],
    ['zh-Hant', 'zh-Hant', 'Traditional Chinese'],
    ['zh-hant-tw', 'zh-Hant-TW', 'Chinese (Traditional, Taiwan)'],
    ['es-419', 'es-419', 'Latin American Spanish'],
    ['iw', 'he', 'Hebrew'],
    ['yue', 'yue', 'Cantonese'],
    [' de-CH ', 'de-CH', 'Swiss High German'],
  ])('%j → %s (%s)', (input, tag, name) => {
    expect(resolveTargetLanguage(input)).toEqual({ tag, name });
  });

  it.each(['', 'Klingon', 'Elvish', 'xx', 'qaa', 'fr_FR', 'fr-XX', 'en-Xxxx', 'en-u-ca-gregory', 'de-1996', 'x-private', 'french!', '12', 'a'.repeat(65)])(
    'refuses %j',
    (input) => {
      expect(resolveTargetLanguage(input)).toBeUndefined();
    },
  );
});

describe('resolveIso639_1', () => {
  it('accepts two-letter codes in any case, canonicalized', () => {
    expect(resolveIso639_1('en')).toBe('en');
    expect(resolveIso639_1('DE')).toBe('de');
    expect(resolveIso639_1('iw')).toBe('he');
  });

  it.each(['english', 'eng', 'en-US', 'xx', 'e', ''])('refuses %j', (input) => {
    expect(resolveIso639_1(input)).toBeUndefined();
  });
});

describe('audio types', () => {
  it.each([
    ['audio/mpeg', 'a.bin'],
    ['audio/mp3', 'a'],
    ['audio/x-m4a', 'a.m4a'],
    ['video/mp4', 'a.mp4'],
    ['audio/wav; codecs=1', 'a.wav'],
    ['audio/webm', 'a.webm'],
    ['audio/ogg', 'a.ogg'],
    ['audio/flac', 'a.flac'],
    ['application/octet-stream', 'a.MPGA'],
    ['', 'a.m4a'],
  ])('accepts the declared %j (%s)', (type, name) => {
    expect(declaredAsAudio(type, name)).toBe(true);
  });

  it.each([
    ['text/plain', 'a.mp3'],
    ['image/png', 'a.wav'],
    ['audio/aac', 'a.aac'],
    ['application/octet-stream', 'a.txt'],
    ['application/octet-stream', 'mp3'],
  ])('refuses the declared %j (%s)', (type, name) => {
    expect(declaredAsAudio(type, name)).toBe(false);
  });

  it('sniffs each accepted container from its magic bytes', () => {
    const withHeader = (hex: string) => Buffer.concat([Buffer.from(hex, 'hex'), Buffer.alloc(32)]);
    expect(sniffAudio(wavFile(100))).toBe('audio/wav');
    expect(sniffAudio(mp3File())).toBe('audio/mpeg');
    expect(sniffAudio(withHeader('fffb9064'))).toBe('audio/mpeg');
    expect(sniffAudio(withHeader('4f676753'))).toBe('audio/ogg');
    expect(sniffAudio(withHeader('664c6143'))).toBe('audio/flac');
    expect(sniffAudio(withHeader('000000206674797069736f6d'))).toBe('audio/mp4');
    expect(sniffAudio(withHeader('1a45dfa3'))).toBe('audio/webm');
  });

  it('refuses other bytes, including an ID3 tag in front of something else and raw AAC', () => {
    const id3ThenPng = mp3File();
    id3ThenPng[20] = 0x89;
    expect(sniffAudio(id3ThenPng)).toBeUndefined();
    expect(sniffAudio(Buffer.from('fff15080', 'hex'))).toBeUndefined();
    expect(sniffAudio(Buffer.from('%PDF-1.7'))).toBeUndefined();
    expect(sniffAudio(new Uint8Array())).toBeUndefined();
  });

  it('estimates seconds from a WAV header, else at 128 kbit/s', () => {
    expect(estimateSeconds(wavFile(32_000 * 5 + 44), 'audio/wav')).toBe(5);
    expect(estimateSeconds(Buffer.alloc(160_000), 'audio/mpeg')).toBe(10);
    expect(estimateSecondsFromSize(1e12)).toBe(26_214_400 / 16_000);
  });
});
