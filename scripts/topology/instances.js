'use strict';
/**
 * The built service's instances and the nginx in front of them, for the topology run (issue 37).
 * Processes are detached with their output in a log file, so that a test process can restart one
 * (given the state file) and the run still stops it at the end, by the pid the state file holds.
 *
 *   await startInstance({ root, dist?, name, port, env, log })  → { name, port, pid, log, dist }
 *   await stopInstance(instance, graceMs)                  SIGTERM, then SIGKILL after graceMs
 *   nginxConfig(root, port, instancePorts, dir)            docker/nginx.conf, pointed at the instances
 *   await startNginx({ dir, port, instancePorts, root })   → { pid, port, conf, dir }
 */
const { spawn } = require('node:child_process');
const { closeSync, existsSync, openSync, readFileSync, writeFileSync, chmodSync, mkdirSync } = require('node:fs');
const net = require('node:net');
const http = require('node:http');
const path = require('node:path');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid) {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function get(port, urlPath) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.setTimeout(2_000, () => req.destroy());
  });
}

function tail(file, lines = 40) {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n') : '';
}

/** Starts `node <dist>/src/main.js` (dist: root's dist/ unless given) on `port` and waits until /readyz answers 200. */
async function startInstance({ root, dist = path.join(root, 'dist'), name, port, env, log, readyWithinMs = 60_000 }) {
  const fd = openSync(log, 'a');
  const child = spawn(process.execPath, [path.join(dist, 'src', 'main.js')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) },
    detached: true,
    stdio: ['ignore', fd, fd],
  });
  child.unref();
  closeSync(fd);
  const instance = { name, port, pid: child.pid, log, dist };
  const until = Date.now() + readyWithinMs;
  while (Date.now() < until) {
    if (!alive(child.pid) || child.exitCode !== null) {
      throw new Error(`instance ${name} exited during start-up:\n${tail(log)}`);
    }
    if ((await get(port, '/readyz')) === 200) return instance;
    await sleep(100);
  }
  await stopInstance(instance, 1_000);
  throw new Error(`instance ${name} was not ready within ${readyWithinMs} ms:\n${tail(log)}`);
}

/** SIGTERM (the service drains), then SIGKILL if it is still there after `graceMs`; resolves once it is gone. */
async function stopInstance(instance, graceMs = 30_000) {
  const { pid } = instance;
  if (!alive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const until = Date.now() + graceMs;
  while (alive(pid) && Date.now() < until) await sleep(25);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  while (alive(pid)) await sleep(25);
}

/**
 * The shipped docker/nginx.conf with only its upstream servers and listen address replaced (as
 * test/e2e/scale-out does), and X-Upstream on every answer so that tests see the spread.
 */
function nginxConfig(root, port, instancePorts, dir) {
  let conf = readFileSync(path.join(root, 'docker', 'nginx.conf'), 'utf8');
  const replace = (from, to) => {
    if (!from.test(conf))
      throw new Error(`docker/nginx.conf no longer has ${from}: update scripts/topology/instances.js`);
    conf = conf.replace(from, to);
  };
  replace(
    /server app:3000[^;]*;/,
    instancePorts.map((p) => `server 127.0.0.1:${p} max_fails=3 fail_timeout=5s;`).join('\n    '),
  );
  replace(/listen 80;/, `listen 127.0.0.1:${port};`);
  replace(
    /access_log \/var\/log\/nginx\/access\.log formwork;/,
    `access_log ${path.join(dir, 'access.log')} formwork;`,
  );
  return [
    'daemon off;',
    'worker_processes 1;',
    `pid ${path.join(dir, 'nginx.pid')};`,
    `error_log ${path.join(dir, 'error.log')} warn;`,
    'events { worker_connections 4096; }',
    'http {',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${path.join(dir, t)};`),
    'add_header X-Upstream $upstream_addr always;',
    conf,
    '}',
  ].join('\n');
}

async function startNginx({ root, dir, port, instancePorts, binary = '/usr/sbin/nginx' }) {
  mkdirSync(dir, { recursive: true });
  // Workers may run as an unprivileged user: let them write their temporary files.
  chmodSync(dir, 0o777);
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(conf, nginxConfig(root, port, instancePorts, dir));
  const fd = openSync(path.join(dir, 'nginx.out'), 'a');
  const child = spawn(binary, ['-p', dir, '-c', conf], { detached: true, stdio: ['ignore', fd, fd] });
  child.unref();
  closeSync(fd);
  const until = Date.now() + 10_000;
  while (Date.now() < until && alive(child.pid)) {
    const up = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (up) return { pid: child.pid, port, conf, dir };
    await sleep(50);
  }
  throw new Error(`nginx did not start:\n${tail(path.join(dir, 'nginx.out'))}\n${tail(path.join(dir, 'error.log'))}`);
}

module.exports = { startInstance, stopInstance, nginxConfig, startNginx, alive, sleep };
