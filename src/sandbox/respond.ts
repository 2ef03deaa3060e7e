import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';

/** True when Accept-Encoding lists gzip (or *) with a non-zero q. */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((part) => {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (name !== 'gzip' && name !== 'x-gzip' && name !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

export function errorBody(code: string, message: string): { errors: Array<{ message: string; extensions: { code: string } }> } {
  return { errors: [{ message, extensions: { code } }] };
}

/** Sends JSON, gzip-compressed when the client accepts it. */
export function sendJson(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const raw = Buffer.from(JSON.stringify(body), 'utf8');
  const gzip = acceptsGzip(req.headers['accept-encoding']);
  const payload = gzip ? gzipSync(raw) : raw;
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(payload.length),
    Vary: 'Accept-Encoding',
    ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
  });
  res.end(payload);
}

/** The truncated-gzip fault: announce the full length, send half the compressed bytes, then drop the connection. */
export function sendTruncatedGzip(res: ServerResponse, body: unknown): void {
  const payload = gzipSync(Buffer.from(JSON.stringify(body), 'utf8'));
  res.writeHead(200, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Encoding': 'gzip',
    'Content-Length': String(payload.length),
  });
  res.write(payload.subarray(0, Math.max(1, Math.floor(payload.length / 2))), () => res.socket?.destroy());
}

export class BodyTooLarge extends Error {}

export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new BodyTooLarge(`request body exceeds ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function isJsonContentType(header: string | undefined): boolean {
  return /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(header ?? '');
}
