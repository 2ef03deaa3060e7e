/**
 * Reads a JWT's claims without verifying its signature. We only use them as hints (an earlier `exp`, the customer
 * and scopes shown by `check`); the platform is the one that verifies the token.
 */
export function decodeJwtClaims(token: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const json = Buffer.from(parts[1], 'base64url').toString('utf8');
    const claims: unknown = JSON.parse(json);
    return claims !== null && typeof claims === 'object' && !Array.isArray(claims)
      ? (claims as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The `exp` claim in epoch milliseconds, when present and numeric. */
export function jwtExpiryMs(claims: Record<string, unknown> | undefined): number | undefined {
  const exp = claims?.exp;
  return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
}

const CUSTOMER_CLAIMS = ['customerId', 'customer_id', 'customer', 'cid', 'tenantId', 'tenant_id', 'tid'];
const SCOPE_CLAIMS = ['scopes', 'scope', 'scp', 'permissions'];

/** The customer a token belongs to, under whichever common claim name the issuer used. */
export function jwtCustomer(claims: Record<string, unknown> | undefined): string | undefined {
  for (const name of CUSTOMER_CLAIMS) {
    const value = claims?.[name];
    if (typeof value === 'string' && value) return value;
  }
  return undefined;
}

/** Scopes from an array claim or a space-separated string claim (OAuth style). */
export function jwtScopes(claims: Record<string, unknown> | undefined): string[] | undefined {
  for (const name of SCOPE_CLAIMS) {
    const value = claims?.[name];
    if (Array.isArray(value)) return value.filter((s): s is string => typeof s === 'string');
    if (typeof value === 'string' && value.trim()) return value.trim().split(/[\s,]+/);
  }
  return undefined;
}
