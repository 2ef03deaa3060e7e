import type { IncomingMessage } from 'node:http';
import { createGunzip } from 'node:zlib';
import { Refusal } from './refusal.ts';

export interface BodyLimits {
  /** Bytes accepted on the wire (compressed size when gzip). */
  maxBodyBytes: number;
  /** Bytes accepted after decompression. */
  maxDecompressedBytes: number;
}

export type ContentEncoding = 'identity' | 'gzip';

/** The encodings we can decode; anything else is refused (415) before a byte of the body is read. */
export function contentEncodingOf(req: IncomingMessage): ContentEncoding {
  const raw = req.headers['content-encoding'];
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '' || value === 'identity') return 'identity';
  if (value === 'gzip' || value === 'x-gzip') return 'gzip';
  throw new Refusal(415, 'unsupported_encoding', { contentEncoding: value.slice(0, 32) });
}

/** A declared Content-Length over the limit is refused at once, without reading the body. */
export function checkDeclaredLength(req: IncomingMessage, limits: BodyLimits): void {
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limits.maxBodyBytes) {
    throw new Refusal(413, 'body_too_large', { declaredBytes: Number(declared), maxBodyBytes: limits.maxBodyBytes });
  }
}

/**
 * Reads the request body while counting: wire bytes against `maxBodyBytes` and, for gzip, inflated bytes against
 * `maxDecompressedBytes`. Inflation runs chunk by chunk as the body streams in and stops the moment the inflated
 * count passes the limit, so a gzip bomb costs at most the limit plus one zlib chunk of memory and CPU.
 * Resolves to the raw decompressed bytes exactly as sent; the caller signs and parses those bytes.
 */
export function readBody(
  req: IncomingMessage,
  encoding: ContentEncoding,
  limits: BodyLimits,
): Promise<{ body: Buffer; wireBytes: number }> {
  return new Promise((resolve, reject) => {
    let wireBytes = 0;
    let inflatedBytes = 0;
    const chunks: Buffer[] = [];
    let settled = false;
    let wireEnded = false;
    const gunzip = encoding === 'gzip' ? createGunzip() : undefined;

    const finish = (error: Refusal | undefined) => {
      if (settled) return;
      settled = true;
      req.off('data', onWire);
      req.off('end', onWireEnd);
      req.off('error', onWireError);
      req.off('aborted', onAborted);
      req.off('close', onClose);
      if (gunzip) {
        gunzip.off('data', onInflated);
        gunzip.destroy();
      }
      if (error) {
        // Stop reading: the response is sent with `Connection: close`, so the rest of the upload is never buffered.
        req.pause();
        chunks.length = 0;
        reject(error);
      } else {
        resolve({ body: Buffer.concat(chunks), wireBytes });
      }
    };

    const onInflated = (chunk: Buffer) => {
      inflatedBytes += chunk.length;
      if (inflatedBytes > limits.maxDecompressedBytes) {
        finish(new Refusal(413, 'decompressed_too_large', {
          wireBytes,
          inflatedBytes,
          maxDecompressedBytes: limits.maxDecompressedBytes,
        }));
        return;
      }
      chunks.push(chunk);
    };
    const onWire = (chunk: Buffer) => {
      wireBytes += chunk.length;
      if (wireBytes > limits.maxBodyBytes) {
        finish(new Refusal(413, 'body_too_large', { wireBytes, maxBodyBytes: limits.maxBodyBytes }));
        return;
      }
      if (!gunzip) {
        chunks.push(chunk);
        return;
      }
      // Backpressure: wait for zlib to inflate this chunk before reading more, so inflation keeps pace with the
      // wire and the limit check above sees every inflated byte before the next compressed chunk is accepted.
      if (!gunzip.write(chunk)) {
        req.pause();
        gunzip.once('drain', () => {
          if (!settled) req.resume();
        });
      }
    };
    const onWireEnd = () => {
      wireEnded = true;
      if (!gunzip) finish(undefined);
      else gunzip.end();
    };
    const onWireError = (error: Error) => finish(new Refusal(400, 'body_aborted', {}, { cause: error }));
    const onAborted = () => finish(new Refusal(400, 'body_aborted', { wireBytes }));
    // The sender went away before the end of the body (whichever of 'aborted', 'error', 'close' node emits).
    const onClose = () => {
      if (!wireEnded) onAborted();
    };

    if (gunzip) {
      gunzip.on('data', onInflated);
      gunzip.on('end', () => finish(undefined));
      gunzip.on('error', (error) => finish(new Refusal(400, 'corrupt_gzip', { wireBytes, inflatedBytes }, { cause: error })));
    }
    req.on('data', onWire);
    req.on('end', onWireEnd);
    req.on('error', onWireError);
    req.on('aborted', onAborted);
    req.on('close', onClose);
  });
}
