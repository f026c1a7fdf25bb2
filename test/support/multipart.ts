/*
 * Builds multipart/form-data bodies as one Buffer (for app.inject or real HTTP), so tests choose
 * the exact bytes and the order of the parts. Plus small audio files with real magic bytes.
 */

export type FormPart =
  | { name: string; value: string }
  | { name: string; filename: string; contentType?: string; data: Uint8Array };

export interface MultipartBody {
  payload: Buffer;
  headers: { 'content-type': string };
}

export function multipartBody(parts: FormPart[], boundary = '----wsai-test-boundary-7MA4YWxkTrZu0gW'): MultipartBody {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('data' in part) {
      chunks.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"; filename="${part.filename}"\r\n` +
            `Content-Type: ${part.contentType ?? 'application/octet-stream'}\r\n\r\n`,
        ),
        Buffer.from(part.data.buffer, part.data.byteOffset, part.data.byteLength),
        Buffer.from('\r\n'),
      );
    } else {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value}\r\n`));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

/**
 * A PCM WAV file of exactly `totalBytes` bytes (44-byte header + silence), 16 kHz mono 16-bit:
 * 32,000 bytes a second, so 32,044 bytes are one second of audio.
 */
export function wavFile(totalBytes: number): Buffer {
  const data = Buffer.alloc(totalBytes);
  data.write('RIFF', 0, 'ascii');
  data.writeUInt32LE(Math.max(0, totalBytes - 8), 4);
  data.write('WAVEfmt ', 8, 'ascii');
  data.writeUInt32LE(16, 16); // fmt chunk size
  data.writeUInt16LE(1, 20); // PCM
  data.writeUInt16LE(1, 22); // mono
  data.writeUInt32LE(16_000, 24); // sample rate
  data.writeUInt32LE(32_000, 28); // byte rate
  data.writeUInt16LE(2, 32); // block align
  data.writeUInt16LE(16, 34); // bits per sample
  data.write('data', 36, 'ascii');
  data.writeUInt32LE(Math.max(0, totalBytes - 44), 40);
  return data;
}

/** An MP3 file: an ID3v2 tag followed by MPEG-1 layer III frame headers. */
export function mp3File(totalBytes = 4096): Buffer {
  const data = Buffer.alloc(totalBytes);
  data.write('ID3', 0, 'ascii');
  data[3] = 4; // v2.4
  data[9] = 10; // tag size 10 bytes (syncsafe)
  data[20] = 0xff;
  data[21] = 0xfb;
  return data;
}
