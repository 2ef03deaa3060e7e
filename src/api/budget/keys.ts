import { createHash } from 'node:crypto';

/**
 * How a shared store names a key: a hash of the base URL and the key's name, so the key itself is not written
 * anywhere, a sandbox's key never shares a budget with the platform's, and the name fits an advisory lock.
 */
export function keyIds(baseUrl: string, apiKey: string): { keyId: string; lockKey: number } {
  const digest = createHash('sha256').update(`occupancy-sync api budget\u0000${baseUrl}\u0000${apiKey}`).digest();
  return { keyId: digest.subarray(0, 16).toString('hex'), lockKey: digest.readInt32BE(16) };
}
