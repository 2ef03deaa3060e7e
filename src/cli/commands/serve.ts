import type { CommandModule } from '../context.ts';
import { parseDuration } from '../../config.ts';
import { ExitCode, UsageError } from '../../errors.ts';

interface ServeFlags {
  schedule: boolean;
  webhooks: boolean;
  now?: boolean;
  maxLag?: string;
  jitter?: string;
}

export const serveCommand: CommandModule = (program, ctx) => {
  program
    .command('serve')
    .description(
      'Run in production as one long-lived process: the sync schedule (SYNC_CRON), the webhook receiver ' +
        '(WEBHOOK_HOST:WEBHOOK_PORT, WEBHOOK_PATH), and /healthz and /metrics (SERVE_HOST:SERVE_PORT).',
    )
    .option('--no-schedule', 'do not run the sync schedule (a receiver-only instance)')
    .option('--no-webhooks', 'do not run the webhook receiver (a sync-only instance)')
    .option('--now', 'also run a sync pass right away, before the first cron tick')
    .option('--jitter <duration>', 'wait a random 0..duration before each pass, so instances sharing a database take turns (e.g. 10s)')
    .option('--max-lag <duration>', '/healthz answers 503 when a stream lags more than this (e.g. 30m); default: lag is only reported')
    .addHelpText(
      'after',
      `
Endpoints:
  WEBHOOK port   POST WEBHOOK_PATH (default /webhook): signed deliveries from the platform (faces the platform;
                 TLS via a proxy or WEBHOOK_TLS_CERT/WEBHOOK_TLS_KEY)
  SERVE port     GET /healthz   200 when the database answers and no stream's last run failed, else 503 (JSON body
                                with every stream's watermark, lag and last run; ?max_lag=15m adds a lag check)
                 GET /metrics   Prometheus text: runs, pages, records, failures, API retries/auth calls/token
                                refreshes, webhook deliveries by outcome and reason, sync lag (docs/operations.md)
Keep the SERVE port on the private network.

On Postgres every run is a job in a queue all instances work (graphile-worker, in the same database): each tick
queues one job per customer and stream unless one is already waiting, SYNC_CONCURRENCY jobs run at once per
instance, and a failing stream backs off on its own without delaying the others. On SQLite the schedule runs in
this process and never overlaps itself (a tick during a run is skipped; --jitter delays each pass). Runs keep a
per customer and stream lock, so the same stream never runs twice at once. Receivers are stateless and can sit
behind any load balancer.

SIGTERM/SIGINT: /healthz turns 503, the receiver stops accepting and finishes deliveries in flight, the sync run in
progress commits its current page and is recorded as interrupted, then the process exits 0. A second signal exits
at once. Exit codes: 0 after a clean stop, 77 the database refused the login or a permission, 78 bad configuration
(also a database that does not exist), 1 startup failure (e.g. a port in use).

Examples:
  $ occupancy-sync serve
  $ SERVE_PORT=9464 WEBHOOK_PORT=8080 occupancy-sync serve --now --max-lag 30m
  $ occupancy-sync serve --jitter 20s      # several instances on one Postgres
  $ occupancy-sync serve --no-schedule     # extra receivers behind a load balancer
  $ curl -s localhost:9464/healthz | jq .status
`,
    )
    .action(async (flags: ServeFlags) => {
      const config = ctx.config();
      let maxLagSeconds: number | undefined;
      if (flags.maxLag !== undefined) {
        const ms = parseDuration(flags.maxLag);
        if (ms === undefined || ms <= 0) {
          throw new UsageError(`--max-lag ${JSON.stringify(flags.maxLag)}: not a duration. Fix: use e.g. 900s, 30m or 2h`);
        }
        maxLagSeconds = ms / 1000;
      }
      let jitterMs = 0;
      if (flags.jitter !== undefined) {
        const ms = parseDuration(flags.jitter);
        if (ms === undefined) throw new UsageError(`--jitter ${JSON.stringify(flags.jitter)}: not a duration. Fix: use e.g. 500ms or 10s`);
        jitterMs = ms;
      }
      if (!flags.schedule && !flags.webhooks) {
        throw new UsageError('--no-schedule with --no-webhooks leaves nothing to serve. Fix: drop one of them');
      }
      const { serve } = await import('../../serve/index.ts');
      await serve({
        config,
        logger: ctx.logger(),
        signal: ctx.signal,
        schedule: flags.schedule,
        webhooks: flags.webhooks,
        runAtStart: flags.now,
        jitterMs,
        maxLagSeconds,
        onReady: ({ opsUrl, webhookUrl }) => {
          ctx.stderr.write(`serve: health and metrics on ${opsUrl}${webhookUrl ? `, webhooks on ${webhookUrl}` : ''}\n`);
        },
      });
      ctx.exitCode = ExitCode.OK;
    });
};
