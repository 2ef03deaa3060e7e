import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's root directory (where jobs/ and docs/ are). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Paths inside the package read best relative to it (jobs/occupancy.graphql); a user's keep their own. */
export function packageLabel(path: string): string {
  const rel = relative(PACKAGE_ROOT, path);
  return rel.startsWith('..') ? path : rel.split('\\').join('/');
}
