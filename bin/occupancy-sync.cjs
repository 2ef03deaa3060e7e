#!/usr/bin/env node
'use strict';
/*
 * The `occupancy-sync` command (package.json "bin"), the same file in the package and in a clone. Plain CommonJS
 * that every Node parses, committed and shipped as is, for two reasons:
 *
 * - npm links a command only if its file exists when it installs the package, and npx keeps what it installed: a
 *   clone whose command pointed into an unbuilt dist/ got, on a first `npx occupancy-sync`, an install in npx's
 *   cache with no link, and every later npx call failed with "occupancy-sync: not found", even after a build. This
 *   file is always there. (scripts/prepare.cjs removes such a link-less install left by an earlier version.)
 * - A Node too old for the CLI gets one line naming the Node it found, the ones it needs and the fix (exit 78),
 *   not a SyntaxError.
 *
 * In the package it loads the compiled CLI (dist/bin/occupancy-sync.js). In a clone (the TypeScript sources are
 * beside it) it runs them through tsx: no build step, and no build output that can be older than the sources. A
 * clone brings its own Node (the `node` devDependency): on a system Node too old for the CLI, the command runs
 * itself again on that one.
 */
var fs = require('fs');
var path = require('path');
var url = require('url');

var ROOT = path.join(__dirname, '..');
var CLONE = fs.existsSync(path.join(ROOT, 'src', 'cli', 'main.ts'));
/** Set in the environment of the command run again on the clone's Node: it must not try a second time. */
var RELAUNCHED = 'OCCUPANCY_SYNC_RELAUNCHED_FROM';

function fail(line, code) {
  process.stderr.write(line + '\n');
  process.exit(code);
}

var checker = path.join(ROOT, CLONE ? 'src' : 'dist/src', 'cli', 'node-version.cjs');
if (!fs.existsSync(checker)) {
  fail('occupancy-sync: ' + checker + ' is missing: this install of occupancy-sync is incomplete. Fix: install it again', 78);
}
var nodeVersion = require(checker);
var found = process.versions.node;

if (!nodeVersion.tooOld(found)) {
  start();
} else if (!CLONE) {
  fail(nodeVersion.refusal(found, nodeVersion.INSTALLED_FIX), nodeVersion.EXIT_CODE);
} else {
  relaunch();
}

function start() {
  if (!CLONE) {
    importModule(path.join(ROOT, 'dist', 'bin', 'occupancy-sync.js'));
    return;
  }
  if (!fs.existsSync(path.join(ROOT, 'node_modules', 'tsx', 'package.json'))) {
    fail(
      'occupancy-sync: this clone\'s dependencies are not installed (no node_modules/tsx in ' + ROOT + '). ' +
        'Fix: run `npm install` there, without --omit=dev (a clone runs its sources through tsx)',
      78,
    );
  }
  // Bare specifier: resolved from this file, so from the clone's node_modules whatever the working directory.
  import('tsx/esm/api').then(function (tsx) {
    tsx.register();
    return importModule(path.join(ROOT, 'bin', 'occupancy-sync.ts'));
  });
}

function importModule(file) {
  return import(url.pathToFileURL(file).href);
}

/**
 * Runs this command again on the clone's own Node, relaying its exit. The child gets a process group of its own,
 * so a signal reaches it exactly once, relayed from here: Ctrl-C on a terminal goes to the foreground group (this
 * process), a `kill` to this process's id; were the child in this group, a Ctrl-C would reach it twice, and the
 * CLI takes a second signal as "stop now, do not finish the page".
 */
function relaunch() {
  var projectNode = path.join(ROOT, 'node_modules', 'node', 'bin', 'node');
  if (process.env[RELAUNCHED] || !fs.existsSync(projectNode)) {
    var fix = process.env[RELAUNCHED]
      ? 'the clone\'s node_modules/node is not one of them either: run `npm install` in ' + ROOT + ' again'
      : 'run `npm install` in ' + ROOT + ', without --omit=dev or --ignore-scripts (it brings Node.js 24, the `node` ' +
        'devDependency, which `npx occupancy-sync` and npm scripts then use), or install one of them';
    fail(nodeVersion.refusal(found, fix), nodeVersion.EXIT_CODE);
  }
  var env = Object.assign({}, process.env);
  env[RELAUNCHED] = found;
  var child = require('child_process').spawn(projectNode, process.argv.slice(1), { stdio: 'inherit', env: env, detached: true });
  var relay = function (signal) {
    child.kill(signal);
  };
  ['SIGINT', 'SIGTERM', 'SIGHUP'].forEach(function (signal) {
    process.on(signal, relay);
  });
  child.on('error', function (error) {
    fail('occupancy-sync: cannot start ' + projectNode + ' (' + error.message + '). Fix: run `npm install` in ' + ROOT + ' again', 78);
  });
  child.on('exit', function (code, signal) {
    if (signal) {
      // End the way the child ended, so a shell or a supervisor sees the signal too.
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code === null ? 1 : code);
  });
}
