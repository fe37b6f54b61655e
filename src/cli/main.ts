/** The admin CLI's entry point: runs one command with this process's arguments, environment and standard input. */
import 'reflect-metadata';
import { runCli } from './cli';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

runCli(process.argv.slice(2), process.env, { readStdin }).then(({ code, stdout, stderr }) => {
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  process.exitCode = code;
});
