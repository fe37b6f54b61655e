'use strict';
/**
 * A TCP relay between a server and PostgreSQL that counts what the server sends: statements
 * (Execute messages, and simple-protocol Query messages) and round trips (each Sync or Query waits
 * for ReadyForQuery before the client's next step), by statement text (from Parse, for named
 * prepared statements too, and Query). Used
 * by bench/hot-forms.js to count what one create_response costs in statements and round trips.
 * Assumes no TLS (the benchmarks connect to 127.0.0.1 without it).
 */
const net = require('node:net');

class PgWireCounter {
  constructor(upstreamHost, upstreamPort) {
    this.upstream = { host: upstreamHost, port: upstreamPort };
    this.reset();
    this.sockets = new Set();
    this.server = net.createServer((client) => this.relay(client));
  }

  reset() {
    this.statements = 0;
    this.roundTrips = 0;
    /** Statements PostgreSQL had to parse and plan (Parse messages and simple Queries). */
    this.parses = 0;
    /** Executions by normalized statement text. */
    this.byText = new Map();
  }

  listen() {
    return new Promise((resolve) => this.server.listen(0, '127.0.0.1', () => resolve(this.server.address().port)));
  }

  close() {
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  relay(client) {
    const upstream = net.connect(this.upstream);
    this.sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    upstream.on('data', (d) => client.write(d));
    let buf = Buffer.alloc(0);
    let started = false;
    /** Statement texts by name on this connection ('' is the unnamed one), and the text the next Execute runs. */
    const named = new Map();
    let bound = '';
    client.on('data', (d) => {
      upstream.write(d);
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (!started) {
          // The startup message has no type byte: length (4) + body.
          if (buf.length < 4) return;
          const len = buf.readUInt32BE(0);
          if (buf.length < len) return;
          buf = buf.subarray(len);
          started = true;
          continue;
        }
        if (buf.length < 5) return;
        const type = String.fromCharCode(buf[0]);
        const len = buf.readUInt32BE(1);
        if (buf.length < 1 + len) return;
        const body = buf.subarray(5, 1 + len);
        buf = buf.subarray(1 + len);
        if (type === 'P') {
          this.parses++;
          // Parse: statement name, text (a named statement is parsed once per connection).
          const nameEnd = body.indexOf(0);
          named.set(
            body.subarray(0, nameEnd).toString('utf8'),
            body.subarray(nameEnd + 1, body.indexOf(0, nameEnd + 1)).toString('utf8'),
          );
        } else if (type === 'B') {
          // Bind: portal name, statement name.
          const portalEnd = body.indexOf(0);
          bound = named.get(body.subarray(portalEnd + 1, body.indexOf(0, portalEnd + 1)).toString('utf8')) || '';
        } else if (type === 'E') {
          this.count(bound);
        } else if (type === 'S') {
          this.roundTrips++;
        } else if (type === 'Q') {
          this.roundTrips++;
          this.parses++;
          this.count(body.subarray(0, body.length - 1).toString('utf8'));
        }
      }
    });
  }

  count(text) {
    this.statements++;
    const key = text.replace(/\s+/g, ' ').trim().slice(0, 90);
    this.byText.set(key, (this.byText.get(key) || 0) + 1);
  }
}

module.exports = { PgWireCounter };
