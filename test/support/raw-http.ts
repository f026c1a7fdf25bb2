import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** An HTTP/1.1 response as received on a socket: status, headers (lower-cased names) and body text. */
export function parseRawResponse(text: string): RawResponse {
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const at = line.indexOf(':');
    headers[line.slice(0, at).toLowerCase()] = line.slice(at + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

/**
 * Writes raw bytes on a new connection to 127.0.0.1:`port` and resolves with what came back once
 * the server closed it, and after how long. With `end`, our side is closed after the bytes (a
 * complete request); without, the connection stays open and silent (a stalled client).
 */
export function rawRequest(port: number, bytes: string | Buffer, options: { end: boolean }): Promise<RawResponse & { afterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1', () => (options.end ? socket.end(bytes) : socket.write(bytes)));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve({ ...parseRawResponse(Buffer.concat(chunks).toString('latin1')), afterMs: performance.now() - started }));
  });
}
