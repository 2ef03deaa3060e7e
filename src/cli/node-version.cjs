'use strict';
/*
 * The Node.js lines occupancy-sync runs on, checked before anything else loads (bin/occupancy-sync.cjs, and the
 * compiled entry dist/bin/occupancy-sync.js that systemd units start). CommonJS in syntax every Node parses, no
 * dependency: a Node too old for the CLI must get one line saying which Node it needs, not a SyntaxError from a
 * module it cannot read. The range is package.json "engines" (test/cli/node-version.test.ts compares them).
 */

var SUPPORTED = 'Node.js 22 (22.19 or later), 24 or 26';
var MINIMUM = [22, 19];
/** EX_CONFIG, as for every configuration error (README, "Exit codes"). */
var EXIT_CODE = 78;

/** True for a version (process.versions.node, e.g. "20.20.2") older than the oldest supported one. */
function tooOld(version) {
  var parts = String(version).replace(/^v/, '').split('.');
  var major = Number(parts[0]);
  var minor = Number(parts[1]);
  if (!(major >= 0) || !(minor >= 0)) return true;
  return major < MINIMUM[0] || (major === MINIMUM[0] && minor < MINIMUM[1]);
}

/** The one line for Node `version`, too old, ending with `fix`. */
function refusal(version, fix) {
  return 'occupancy-sync: Node.js v' + String(version).replace(/^v/, '') + ' is too old: occupancy-sync needs ' + SUPPORTED + '. Fix: ' + fix;
}

/** What an installed occupancy-sync on a too-old Node should do. */
var INSTALLED_FIX =
  'install one of them (nodejs.org, or your system\'s package manager) and start occupancy-sync with it ' +
  '(first on PATH, or the node named in a systemd unit\'s ExecStart=)';

module.exports = { SUPPORTED: SUPPORTED, EXIT_CODE: EXIT_CODE, INSTALLED_FIX: INSTALLED_FIX, tooOld: tooOld, refusal: refusal };
