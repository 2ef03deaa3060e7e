/** Types of node-version.cjs (plain JavaScript, so that it parses on any Node). */
declare const nodeVersion: {
  /** The supported lines, as the README says them. */
  readonly SUPPORTED: string;
  /** The exit code of a refusal: 78, as for every configuration error. */
  readonly EXIT_CODE: number;
  /** The fix an installed occupancy-sync gives on a too-old Node. */
  readonly INSTALLED_FIX: string;
  tooOld(version: string): boolean;
  refusal(version: string, fix: string): string;
};
export = nodeVersion;
