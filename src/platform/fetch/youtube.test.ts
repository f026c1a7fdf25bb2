import { describe, expect, it } from 'vitest';
import { classifyUrl, youtubeVideoId, youtubeWatchUrl } from './youtube.js';

const ID = 'dQw4w9WgXcQ';

describe('youtubeVideoId and classifyUrl', () => {
  it.each([
    `https://www.youtube.com/watch?v=${ID}`,
    `https://youtube.com/watch?v=${ID}`,
    `http://www.youtube.com/watch?v=${ID}`,
    `https://www.youtube.com/watch?feature=share&v=${ID}&t=42s`,
    `https://www.youtube.com/watch/?v=${ID}`,
    `https://m.youtube.com/watch?v=${ID}`,
    `https://music.youtube.com/watch?v=${ID}&list=RDAMVM`,
    `https://WWW.YouTube.COM./watch?v=${ID}`,
    `https://youtu.be/${ID}`,
    `https://youtu.be/${ID}?t=10`,
    `https://www.youtu.be/${ID}/`,
    `https://www.youtube.com/shorts/${ID}`,
    `https://youtube.com/shorts/${ID}?feature=share`,
    `https://www.youtube.com/embed/${ID}`,
    `https://www.youtube-nocookie.com/embed/${ID}`,
    `https://www.youtube.com/live/${ID}`,
    `https://www.youtube.com/v/${ID}`,
    `https://www.youtube.com/watch?v=${ID}#comments`,
    'https://youtu.be/a_b-C1d2E3f',
  ])('finds the id in %s', (url) => {
    expect(youtubeVideoId(url)).toMatch(/^[A-Za-z0-9_-]{11}$/);
    expect(classifyUrl(url)).toBe('youtube');
  });

  it('returns the id itself', () => {
    expect(youtubeVideoId(`https://youtu.be/${ID}`)).toBe(ID);
    expect(youtubeVideoId(`https://www.youtube.com/shorts/${ID}`)).toBe(ID);
  });

  it.each([
    'https://www.youtube.com/',
    'https://www.youtube.com/watch',
    'https://www.youtube.com/watch?v=short',
    `https://www.youtube.com/watch?v=${ID}x`,
    'https://www.youtube.com/watch?v=dQw4w9WgXc!',
    `https://www.youtube.com/channel/${ID}`,
    `https://www.youtube.com/shorts/${ID}/extra`,
    `https://www.youtube.com/playlist?list=${ID}`,
    'https://youtu.be/',
    `https://youtu.be/${ID}/more`,
    `https://youtube.com.evil.example/watch?v=${ID}`,
    `https://evilyoutube.com/watch?v=${ID}`,
    `https://notyoutu.be/${ID}`,
    `https://example.com/watch?v=${ID}`,
    `https://user@www.youtube.com/watch?v=${ID}`,
    `ftp://www.youtube.com/watch?v=${ID}`,
    `javascript://www.youtube.com/watch?v=${ID}`,
    'not a url',
    '',
  ])('does not treat %s as a video', (url) => {
    expect(youtubeVideoId(url)).toBeNull();
    expect(classifyUrl(url)).toBe('web_url');
  });
});

describe('youtubeWatchUrl', () => {
  it('builds the URL on our base, never the user’s host', () => {
    expect(youtubeWatchUrl('https://www.youtube.com', ID)).toBe(`https://www.youtube.com/watch?v=${ID}`);
    expect(youtubeWatchUrl('https://www.youtube.com/', ID)).toBe(`https://www.youtube.com/watch?v=${ID}`);
    expect(youtubeWatchUrl('http://127.0.0.1:4010/yt', ID)).toBe(`http://127.0.0.1:4010/yt/watch?v=${ID}`);
    expect(youtubeWatchUrl('http://127.0.0.1:4010/yt/?x=1#f', ID)).toBe(`http://127.0.0.1:4010/yt/watch?v=${ID}`);
  });

  it.each(['', 'short', `${ID}x`, '../../admin', 'a/b?c=d&e=f'])('refuses the id %j', (id) => {
    expect(() => youtubeWatchUrl('https://www.youtube.com', id)).toThrow(/Not a YouTube video id/);
  });
});
