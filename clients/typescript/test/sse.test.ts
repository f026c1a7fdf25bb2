import { describe, expect, it } from 'vitest';
import { SseParser } from '../src/sse.js';

describe('SseParser', () => {
  it('parses events split anywhere across chunks, with LF, CRLF or CR line ends', () => {
    const body = 'id: 1\r\nevent: delta\r\ndata: {"text":"a"}\r\n\r\n: ping\n\nid: 2\nevent: done\ndata: {"x":1}\n\nid: 3\revent: delta\rdata: {"text":"b"}\r\r';
    for (const size of [1, 2, 3, 7, body.length]) {
      const parser = new SseParser();
      const events = [];
      for (let i = 0; i < body.length; i += size) events.push(...parser.push(body.slice(i, i + size)));
      events.push(...parser.end());
      expect(events, `chunks of ${size}`).toEqual([
        { id: '1', event: 'delta', data: '{"text":"a"}' },
        { id: '2', event: 'done', data: '{"x":1}' },
        { id: '3', event: 'delta', data: '{"text":"b"}' },
      ]);
    }
  });

  it('joins data lines, keeps an incomplete event for later, and gives an event without id: no id', () => {
    const parser = new SseParser();
    expect(parser.push('id: 7\nevent: delta\ndata: one\ndata:two\n\nevent: done\ndata: {}\n')).toEqual([
      { id: '7', event: 'delta', data: 'one\ntwo' },
    ]);
    expect(parser.push('\n')).toEqual([{ id: undefined, event: 'done', data: '{}' }]);
    expect(parser.push('data: x\n\nretry: 10\nevent: nothing\n\n')).toEqual([{ id: undefined, event: 'message', data: 'x' }]);
  });
});
