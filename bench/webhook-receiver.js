'use strict';
/**
 * The local webhook receiver of bench/webhooks.js, in a process of its own (so it does not share
 * an event loop with the load generator): answers every POST 200 and counts it; GET /stats
 * answers { received }. Prints its port on stdout once listening.
 */
const http = require('node:http');

let received = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ received }));
    return;
  }
  req.resume();
  req.on('end', () => {
    received++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
