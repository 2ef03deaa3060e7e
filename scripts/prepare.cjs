'use strict';
/*
 * `prepare`: npm runs it at the end of `npm install` (and `npm ci`) in a clone, never when the package is installed
 * from the registry (an install script there would be refused by npm 12's policy, and the package needs none).
 * Plain CommonJS: on a clone installed with --omit=dev, the system Node runs it, however old.
 *
 * What a newcomer would otherwise trip over, at most one line each:
 * - npm runs on the system Node; when that one is too old for occupancy-sync, which Node runs what here and what
 *   to do (.npmrc keeps npm's own engine warnings, one block per dependency judged against the system Node, quiet);
 * - an install of this clone in npx's cache without the command's link, left by an `npx occupancy-sync` run while
 *   the command's file did not exist (before bin/occupancy-sync.cjs): npx reuses it forever and answers "not
 *   found", so it is removed and the next npx call installs the clone again, with its link.
 */
var childProcess = require('child_process');
var crypto = require('crypto');
var fs = require('fs');
var path = require('path');

var ROOT = path.join(__dirname, '..');
var nodeVersion = require(path.join(ROOT, 'src', 'cli', 'node-version.cjs'));
var command = process.env.npm_command;

if (command === 'install' || command === 'ci') {
  // Neither is worth failing an install that is otherwise complete.
  [sayWhichNode, removeLinklessNpxInstall].forEach(function (step) {
    try {
      step();
    } catch (error) {
      console.log('occupancy-sync: prepare: ' + step.name + ' failed (' + (error && error.message) + '); the install itself is complete');
    }
  });
}

function sayWhichNode() {
  var npmNode = process.env.npm_node_execpath || process.execPath;
  var system = npmNode === process.execPath ? process.versions.node : versionOf(npmNode);
  if (!system || !nodeVersion.tooOld(system)) return;
  var project = projectNodeVersion();
  if (project && !nodeVersion.tooOld(project)) {
    console.log(
      'occupancy-sync: npm runs on the system Node.js v' + system + ', too old for occupancy-sync, which needs ' + nodeVersion.SUPPORTED +
        '; in this clone, npm scripts and `npx occupancy-sync` run on its own Node.js v' + project +
        ' (node_modules/node), as does `npx node`; for anything else, install one of those.',
    );
  } else {
    console.log(
      nodeVersion.refusal(
        system,
        'run `npm install` without --omit=dev or --ignore-scripts (it brings Node.js 24, the `node` devDependency, for npm scripts and npx), or install one of them',
      ),
    );
  }
}

function versionOf(node) {
  var result = childProcess.spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** The version of the clone's own Node (the `node` devDependency), when its binary is in place. */
function projectNodeVersion() {
  var dir = path.join(ROOT, 'node_modules', 'node');
  if (!fs.existsSync(path.join(dir, 'bin', 'node'))) return undefined;
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version;
  } catch (error) {
    return undefined;
  }
}

/** npx's directory for a local package: the first 16 hex digits of the SHA-512 of its absolute path (libnpmexec). */
function npxDirectory(cache, dir) {
  return path.join(cache, '_npx', crypto.createHash('sha512').update(dir).digest('hex').slice(0, 16));
}

function removeLinklessNpxInstall() {
  var cache = process.env.npm_config_cache || path.join(require('os').homedir(), '.npm');
  var roots = [ROOT, process.env.npm_config_local_prefix].filter(Boolean);
  var real = fs.realpathSync(ROOT);
  roots.push(real);
  roots.filter(function (dir, i) {
    return roots.indexOf(dir) === i;
  }).forEach(function (dir) {
    var install = npxDirectory(cache, dir);
    var linked = path.join(install, 'node_modules', 'occupancy-sync');
    try {
      if (!fs.lstatSync(linked).isSymbolicLink() || fs.realpathSync(linked) !== real) return;
    } catch (error) {
      return;
    }
    if (fs.existsSync(path.join(install, 'node_modules', '.bin', 'occupancy-sync'))) return;
    fs.rmSync(install, { recursive: true, force: true });
    console.log(
      'occupancy-sync: removed ' + install + ', an install of this clone an earlier `npx occupancy-sync` left without its command; ' +
        'the next `npx occupancy-sync` installs it again, with it.',
    );
  });
}
