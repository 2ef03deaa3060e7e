import { readFileSync } from 'node:fs';
import { columnField, isSink } from '../sync/definition-parts.ts';
import { isPlainObject, YamlSource, type YamlPath } from '../sync/definition-yaml.ts';

/**
 * Where things are in the definitions files in force (the built-in one and a user's over it), so a finding of `check`
 * points at the line to change: `occupancy-sync.streams.yaml:21:38` for a record field's type, a window variable, a
 * webhook operation declared absent. The files were validated by the loader before; this only reads positions.
 */

export interface Place {
  file: string;
  line: number;
  column: number;
}

/** A stream's entry in the file that defines it. */
export interface StreamPlace {
  file: string;
  /** The place of a key under the stream's entry (`['record', 'headcount', 'type']`), or the nearest one that exists. */
  at(path: YamlPath, key?: boolean): Place;
  /** The key the file maps a record field under (its field or its column name). */
  recordKey(field: string): string;
}

function placeOf(text: string): Place {
  const m = /^(.*):(\d+):(\d+)$/.exec(text);
  return m ? { file: m[1]!, line: Number(m[2]), column: Number(m[3]) } : { file: text, line: 1, column: 1 };
}

interface DefinitionsText {
  label: string;
  src: YamlSource;
  streams: unknown[];
}

export class DefinitionPlaces {
  readonly #files: DefinitionsText[];

  /** `files`: the definitions files in force, the built-in one first; each read once here. */
  constructor(files: ReadonlyArray<{ path: string; label: string }>) {
    this.#files = files.map(({ path, label }) => {
      const src = new YamlSource(label, readFileSync(path, 'utf8'));
      const value = src.value;
      return { label, src, streams: isPlainObject(value) && Array.isArray(value.streams) ? value.streams : [] };
    });
  }

  /** The entry of stream `name` in the last file that defines it (a user's replaces the built-in one). */
  stream(name: string): StreamPlace | undefined {
    for (const file of [...this.#files].reverse()) {
      const index = file.streams.findIndex((s) => isPlainObject(s) && s.name === name);
      if (index < 0) continue;
      const entry = file.streams[index] as Record<string, unknown>;
      return {
        file: file.label,
        at: (path, key = false) => placeOf(file.src.at(['streams', index, ...path], key)),
        recordKey: (field) => {
          const record = entry.record;
          if (!isPlainObject(record) || !isSink(entry.sink)) return field;
          return Object.keys(record).find((k) => columnField(entry.sink as never, k) === field) ?? field;
        },
      };
    }
    return undefined;
  }

  /** Where a webhook operation is declared (its key under `webhooks:`), in the last file that declares it. */
  webhook(operation: string): Place | undefined {
    for (const file of [...this.#files].reverse()) {
      const value = file.src.value;
      if (isPlainObject(value) && isPlainObject(value.webhooks) && operation in value.webhooks) {
        return placeOf(file.src.at(['webhooks', operation], true));
      }
    }
    return undefined;
  }
}
