import type { StreamSink } from '../store/types.ts';
import { columnField, NAME, softDeletes } from './definition-parts.ts';
import { mapAt, stringAt, type YamlPath, type YamlSource } from './definition-yaml.ts';
import { PARTITION_PATH } from './records.ts';
import { targetOf, type AnyStream, type PartitionSpec } from './stream.ts';

/**
 * A fan-out stream's `partition` in a definitions file (docs/api-assumptions.md, "Fan-out streams"): which stream's
 * stored rows are its parents, which of their fields it sends, and in which variable. Checked in two steps, both here:
 * the declaration itself with its stream (`partitionAt`: its keys, the variable against the document), then against
 * the streams in force, the built-in ones under the file included (`resolvePartitions`: the parent exists, keeps a
 * listing, has the field, and no circle of parents). The run order puts a parent before its fan-out (`mergeStreams`).
 */

/** A `partition` as written, before its parent is found among the streams in force. */
export interface DeclaredPartition {
  parent: string;
  parentKey: string;
  variable: string;
  /** Where the declaration is (`['streams', i, 'partition']`), for the errors of the second step. */
  at: YamlPath;
}

const PARENT = { re: /^[a-z][a-z0-9-]{0,62}$/, rule: 'is not a stream name', example: 'floor-spaces' };

/**
 * Step one, while its stream is read: the keys, and the variable, which the document must declare (`needVariable`)
 * and nothing else may send. `sent`: the variables the stream's paging and `variables` send already.
 */
export function partitionAt(
  src: YamlSource,
  at: YamlPath,
  value: unknown,
  context: { sent: ReadonlySet<string>; needVariable(at: YamlPath, variable: string, role: string): void },
): DeclaredPartition | undefined {
  const p = mapAt(src, at, value, 'partition', ['parent', 'parentKey', 'variable'], ['parent', 'parentKey', 'variable']);
  if (!p) return undefined;
  const before = src.errors.length;
  const parent = stringAt(src, [...at, 'parent'], p.parent, 'parent', PARENT);
  const parentKey = stringAt(src, [...at, 'parentKey'], p.parentKey, 'parentKey', { ...NAME, example: 'id' });
  const variable = stringAt(src, [...at, 'variable'], p.variable, 'variable', { ...NAME, example: 'floorSpaceId' });
  if (variable) {
    if (context.sent.has(variable)) {
      src.error([...at, 'variable'], `$${variable} is sent by the stream's variables or paging already, and cannot also carry the parent's ${parentKey ?? 'key'}`, 'name the variable the query takes the parent\'s id in, and send it only here');
    } else context.needVariable([...at, 'variable'], variable, 'the partition variable');
  }
  if (src.errors.length > before || !parent || !parentKey || !variable) return undefined;
  return { parent, parentKey, variable, at };
}

/** A record mapping that reads `$partition` in a stream without a partition: an error at each such field. */
export function checkPartitionPaths(src: YamlSource, at: YamlPath, record: Record<string, { path: string }>, written: Record<string, unknown>, sink: StreamSink): void {
  for (const [field, spec] of Object.entries(record)) {
    if (spec.path !== PARTITION_PATH) continue;
    const key = Object.keys(written).find((k) => columnField(sink, k) === field) ?? field;
    src.error([...at, key, 'path'], `${PARTITION_PATH} is the parent key of a fan-out stream, and this stream has no partition`, 'declare partition: { parent, parentKey, variable }, or map the field to the answer');
  }
}

/**
 * The streams in force, in run order: the ones under the file (the built-in streams) with the file's over them, a
 * file's stream replacing the one of its name in its place, its new names after them in the file's order; and a
 * fan-out stream's parent moved before it when it came later (a file replacing the built-in `occupancy` with a fan-out
 * over its own new `floor-spaces`), so a parent listed in a run is read in that run.
 */
export function mergeStreams(under: ReadonlyArray<AnyStream>, file: ReadonlyArray<AnyStream>): AnyStream[] {
  const merged = under.map((s) => file.find((f) => f.name === s.name) ?? s);
  for (const s of file) if (!under.some((u) => u.name === s.name)) merged.push(s);
  const ordered: AnyStream[] = [];
  const placing = new Set<AnyStream>();
  const place = (stream: AnyStream) => {
    // A circle of parents is refused by resolvePartitions; here it only must not recurse for ever.
    if (ordered.includes(stream) || placing.has(stream)) return;
    placing.add(stream);
    const parent = stream.partition && merged.find((m) => m.name === stream.partition!.parent);
    if (parent) place(parent);
    ordered.push(stream);
  };
  for (const stream of merged) place(stream);
  return ordered;
}

/**
 * Step two, once every stream of the file is read: each declared partition against the streams in force (`under`,
 * with the file's over them). The parent must exist, be a listing whose rows can be soft-deleted (a removed parent must
 * stop being read), and have the field; no stream may be its own parent, nor its parent's parent. Returns the file's streams with their partitions resolved; errors go to `src`.
 */
export function resolvePartitions(
  src: YamlSource,
  streams: ReadonlyArray<AnyStream>,
  declared: ReadonlyMap<AnyStream, DeclaredPartition>,
  under: ReadonlyArray<AnyStream>,
): AnyStream[] {
  const inForce = mergeStreams(under, streams);
  const parentOf = (name: string) => {
    const stream = streams.find((s) => s.name === name);
    return stream ? declared.get(stream)?.parent : inForce.find((s) => s.name === name)?.partition?.parent;
  };
  return streams.map((stream) => {
    const d = declared.get(stream);
    if (!d) return stream;
    const parent = inForce.find((s) => s.name === d.parent);
    const at = [...d.at, 'parent'];
    if (d.parent === stream.name) {
      src.error(at, `stream ${stream.name} cannot be its own parent`, 'name the stream that lists the parents, e.g. floor-spaces');
      return stream;
    }
    if (!parent) {
      src.error(at, `no stream ${d.parent} to take the parents from (streams in force: ${inForce.map((s) => s.name).join(', ')})`, 'name a stream of this file or a built-in one that lists the parents');
      return stream;
    }
    const chain = [stream.name];
    for (let name: string | undefined = d.parent; name !== undefined && chain.length <= inForce.length; name = parentOf(name)) {
      chain.push(name);
      if (name === stream.name) {
        src.error(at, `the parents form a circle (${chain.join(' -> ')}): each stream would have to run before the other`, 'take the parents of one of them from a stream that is no fan-out of the other');
        return stream;
      }
    }
    if (parent.sink !== 'table' && !softDeletes(parent.sink)) {
      src.error(at, `stream ${parent.name} writes sink ${parent.sink}, whose rows are not a listing that can drop a parent (no last_seen_at, deleted_at)`, 'take the parents from a stream that lists them (buildings, floors, floorSpaces)');
      return stream;
    }
    const field = parent.sink === 'table' ? parent.table?.columns.find((c) => c.field === d.parentKey)?.field : columnField(parent.sink, d.parentKey);
    if (!field) {
      const example = parent.sink === 'table' ? (parent.table?.key[0] ?? 'its key') : columnField(parent.sink, 'id') ? 'id' : 'its key';
      src.error([...d.at, 'parentKey'], `sink ${parent.sink} of stream ${parent.name} has no field ${d.parentKey}`, `name one of its fields, e.g. ${example}`);
      return stream;
    }
    const partition: PartitionSpec = { parent: parent.name, parentSink: targetOf(parent), parentKey: field, variable: d.variable };
    return { ...stream, partition } as AnyStream;
  });
}
