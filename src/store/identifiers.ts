/**
 * An SQL identifier quoted for both dialects, a double quote inside it doubled: table and column names the store
 * writes into DDL and maintenance statements (keywords such as `order` or `user` included), which take no parameters.
 */
export const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;
