import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freshDatabase, type TestDatabase } from '../support/databases.ts';
import { spawnTs, type Child } from '../support/process.ts';
import { tempDir } from '../support/tmp.ts';
import { waitFor } from '../support/wait.ts';
import { DATA, TOKEN } from './support.ts';

/**
 * Three processes share one API key and one database (Postgres, or the SQLite coordinator file beside a database):
 * together they never have more of the key's queries in flight than its limit, counted at the platform, and a
 * process killed with SIGKILL while it holds slots leaks none of them.
 */

interface Platform {
  url: string;
  server: Server;
  /**
   * Queries in flight now, the most ever, by tag; refused (429 beyond `allowed`). `others` and `mostOthers`: those of
   * every tag but the victim's; `early`: those that arrived before the test set `killed` (the victim still alive).
   */
  figures: { inFlight: number; most: number; held: number; refused: number; byTag: Record<string, number>; others: number; mostOthers: number; early: number; killed: boolean };
}

/** Counts queries in flight; holds the `victim`'s queries until their connection closes; refuses beyond `allowed`. */
async function platform(allowed = Infinity): Promise<Platform> {
  const figures = { inFlight: 0, most: 0, held: 0, refused: 0, byTag: {} as Record<string, number>, others: 0, mostOthers: 0, early: 0, killed: false };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/api/v1/auth') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(TOKEN));
      const tag = String((JSON.parse(Buffer.concat(chunks).toString()) as { variables: { nameLike: string } }).variables.nameLike);
      figures.byTag[tag] = (figures.byTag[tag] ?? 0) + 1;
      if (figures.inFlight >= allowed) {
        figures.refused++;
        return void res.writeHead(429, { 'retry-after': '1', 'content-type': 'application/json' }).end('{}');
      }
      figures.inFlight++;
      figures.most = Math.max(figures.most, figures.inFlight);
      if (tag !== 'victim') {
        figures.others++;
        figures.mostOthers = Math.max(figures.mostOthers, figures.others);
        if (!figures.killed) figures.early++;
      }
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        figures.inFlight--;
        if (tag === 'victim') figures.held--;
        else figures.others--;
      };
      res.on('close', finish);
      if (tag === 'victim') {
        figures.held++;
        return;
      }
      // Counted out before the answer leaves, so the client can never see its slot free before this platform does.
      setTimeout(() => {
        finish();
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(DATA));
      }, 15);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, figures };
}

describe.each(['postgres', 'sqlite'] as const)('one key shared by three processes on %s', (dialect) => {
  let p: Platform | undefined;
  let db: TestDatabase | undefined;
  let dir: ReturnType<typeof tempDir> | undefined;
  const children: Child[] = [];
  afterEach(async () => {
    await Promise.all(children.splice(0).map((c) => c.kill('SIGKILL').catch(() => {})));
    await new Promise((r) => (p ? p.server.close(r) : r(undefined)));
    await db?.drop();
    dir?.remove();
    p = db = dir = undefined;
  });

  async function where(): Promise<Record<string, unknown>> {
    if (dialect === 'postgres') {
      db = await freshDatabase('postgres', 'budget_shared');
      return { backend: 'postgres', url: db.url };
    }
    dir = tempDir('occupancy-sync-budget-');
    // The coordinator file is beside it: occupancy.db-api-budget.
    return { backend: 'sqlite', database: join(dir.dir, 'occupancy.db') };
  }

  function start(job: Record<string, unknown>): Child {
    const child = spawnTs('test/api/budget-child.ts', [JSON.stringify(job)], { name: `budget child ${String(job.tag)}` });
    children.push(child);
    return child;
  }

  async function finished(child: Child): Promise<Record<string, number>> {
    const [, stats] = (await child.waitForLine(/^done (.*)$/, `${child.name} to finish its queries`, { timeoutMs: 60_000 })) as RegExpExecArray;
    expect(await child.exit(10_000)).toEqual({ code: 0, signal: null });
    return JSON.parse(stats!) as Record<string, number>;
  }

  it('never exceed the key\'s limit together, and a process killed holding slots leaks none', async () => {
    p = await platform();
    const base = { ...(await where()), platform: p.url, adaptive: false, maxInFlight: 3 };
    const victim = start({ ...base, tag: 'victim', requests: 10, concurrency: 10 });
    await waitFor(() => p!.figures.held === 3, 'the victim to hold every slot of the key', 30_000, { unless: victim.exited });
    const a = start({ ...base, tag: 'a', requests: 40, concurrency: 10 });
    const b = start({ ...base, tag: 'b', requests: 40, concurrency: 10 });
    await a.waitForLine('ready');
    await b.waitForLine('ready');
    // While the victim lives it holds every slot: nobody else may send a query. Once it is killed, the platform may
    // handle a query of the others before it has handled the close of the victim's connections (both arrive in one
    // turn of its event loop under load): the victim's are counted out at its death, not at their close here.
    p.figures.killed = true;
    await victim.kill('SIGKILL');
    const [statsA, statsB] = await Promise.all([finished(a), finished(b)]);
    expect(p.figures.early).toBe(0);
    expect(p.figures.mostOthers).toBe(3);
    expect(p.figures.byTag).toMatchObject({ victim: 3, a: 40, b: 40 });
    expect(statsA.maxInFlight! + statsB.maxInFlight!).toBeGreaterThanOrEqual(3);
    expect(p.figures.inFlight).toBe(0);
  }, 120_000);

  it('find one adaptive limit together, with a handful of refusals', async () => {
    p = await platform(4);
    const base = { ...(await where()), platform: p.url, adaptive: true, maxInFlight: 32 };
    const all = ['a', 'b', 'c'].map((tag) => start({ ...base, tag, requests: 60, concurrency: 12 }));
    const stats = await Promise.all(all.map(finished));
    const log = all.map((c) => c.stderr()).join('\n');
    expect(p.figures.most).toBe(4);
    // Eight at first, all processes together, and few refusals after: the key's limit is found once, for all.
    const sent = stats.reduce((sum, s) => sum + s.queriesSent!, 0);
    expect(p.figures.refused / sent, log).toBeLessThanOrEqual(0.05);
    // Each process's last view of the shared limit: near the platform's 4, never the start's 8.
    for (const s of stats) expect(s.inFlightLimit, log).toBeGreaterThanOrEqual(2);
    for (const s of stats) expect(s.inFlightLimit, log).toBeLessThanOrEqual(5);
  }, 120_000);
});
