/** One server-sent event as received: its `id:`, `event:` name and `data:` text. */
export interface RawEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * An incremental parser of `text/event-stream` (the WHATWG event-stream format): feed it text as it
 * arrives, get back the events completed so far. Comments (`: ping`) and `retry:` are ignored;
 * a block without `data:` dispatches nothing, as in a browser's EventSource. Unlike a browser's
 * last-event-id buffer, `id` is the event's own `id:` (undefined when it has none): the service
 * numbers each event, and an event it sends without one (a `done` rebuilt from the saved reply)
 * must not look like a repeat of the previous event.
 */
export class SseParser {
  private buffer = '';
  private id: string | undefined;
  private event = '';
  private data: string[] = [];

  push(text: string): RawEvent[] {
    this.buffer += text;
    const events: RawEvent[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.buffer);
      // A lone `\r` at the end may be the first half of `\r\n`: wait for the next chunk.
      if (!match || (match[0] === '\r' && match.index === this.buffer.length - 1)) break;
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      const event = this.line(line);
      if (event) events.push(event);
    }
    return events;
  }

  /** The stream ended: a held trailing `\r` was a line end after all. (An event without its blank line is dropped, as the format says.) */
  end(): RawEvent[] {
    if (!this.buffer.endsWith('\r')) return [];
    this.buffer = this.buffer.slice(0, -1);
    const event = this.line(this.buffer);
    this.buffer = '';
    return event ? [event] : [];
  }

  private line(line: string): RawEvent | undefined {
    if (line === '') {
      const event = this.data.length ? { id: this.id, event: this.event || 'message', data: this.data.join('\n') } : undefined;
      this.id = undefined;
      this.event = '';
      this.data = [];
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    return undefined;
  }
}
