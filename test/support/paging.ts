import { YamlSource } from '../../src/sync/definition-yaml.ts';
import { pagingAt, type PagingStyle } from '../../src/sync/paging/index.ts';

/** A paging style as a definitions file declares it (version 2 unless told), or the located errors it gives. */
export function styleOf(paging: Record<string, unknown>, version = 2): PagingStyle {
  const src = new YamlSource('streams.yaml', JSON.stringify({ paging }));
  const style = pagingAt(src, ['paging'], paging, () => {}, version);
  if (!style) throw new Error(src.errors.join('\n'));
  return style;
}

export function stylesErrors(paging: unknown, version = 2): string[] {
  const src = new YamlSource('streams.yaml', JSON.stringify({ paging }));
  pagingAt(src, ['paging'], paging, () => {}, version);
  return src.errors;
}
