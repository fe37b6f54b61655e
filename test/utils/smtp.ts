import { AddressInfo } from 'node:net';
import { ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** What the server answers to the next messages' DATA: accept, 421 (try later), 550 (refused), or hold until released. */
export type Answer = 'ok' | '421' | '550' | { hold: Promise<void> };

/**
 * A real SMTP server in the test process (nodemailer's smtp-server), no TLS and no login, that keeps
 * each message it accepted, parsed (mailparser), and answers as scripted. A message is kept only
 * once it is accepted (250): one whose sender went away while it was held is not.
 */
export class TestSmtpServer {
  readonly received: ParsedMail[] = [];
  /** Messages whose data arrived (accepted or not, held or not). */
  dataArrived = 0;
  private readonly closed = new Set<string>();
  private readonly answers: Answer[] = [];
  private server?: SMTPServer;
  private port = 0;

  static async start(): Promise<TestSmtpServer> {
    const s = new TestSmtpServer();
    await s.up();
    return s;
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  /** The next messages' answers, in order (then 'ok'). */
  script(...answers: Answer[]): void {
    this.answers.push(...answers);
  }

  /** Messages to `to`. */
  to(address: string): ParsedMail[] {
    return this.received.filter((m) => [m.to].flat().some((t) => t?.value.some((v) => v.address === address)));
  }

  /** Sessions whose client went away or quit. */
  get sessionsClosed(): number {
    return this.closed.size;
  }

  /** Listens (again, on the same port after down()). */
  async up(): Promise<void> {
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onClose: (session) => this.closed.add(session.id),
      onData: (stream, session, callback) => {
        const answer = this.answers.shift() ?? 'ok';
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', async () => {
          this.dataArrived++;
          if (answer === '421' || answer === '550') {
            const err = Object.assign(new Error(answer === '421' ? 'Try again later' : 'No such user here'), {
              responseCode: Number(answer),
            });
            return callback(err);
          }
          if (typeof answer === 'object') await answer.hold;
          // Its sender went away before the 250: not accepted (it never learned that it was sent).
          if (this.closed.has(session.id)) return;
          const parsed = await simpleParser(Buffer.concat(chunks));
          this.received.push(parsed);
          callback();
        });
      },
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.server.address() as AddressInfo).port;
  }

  /** Stops listening and drops the connections open. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
